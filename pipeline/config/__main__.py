"""``python -m pipeline.config check [targets.yaml]`` and ``python -m pipeline.config schema``."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from pipeline.config.load import load_config
from pipeline.errors import ConfigError


def main(argv: list[str] | None = None) -> int:
    """Run the command line; returns the exit status (0 ok, 1 configuration problems)."""
    parser = argparse.ArgumentParser(prog="python -m pipeline.config",
                                     description="Check targets.yaml or print its JSON Schema.")
    commands = parser.add_subparsers(dest="command", required=True)
    check = commands.add_parser("check", help="validate a targets.yaml, print every problem")
    check.add_argument("path", nargs="?", default="targets.yaml", type=Path)
    schema = commands.add_parser("schema", help="print the JSON Schema of targets.yaml")
    schema.add_argument("-o", "--output", type=Path, help="write it to this file instead")
    args = parser.parse_args(argv)
    if args.command == "check":
        try:
            config = load_config(args.path)
        except ConfigError as exc:
            print(exc, file=sys.stderr)
            return 1
        print(f"ok: {len(config.targets)} targets, {len(config.models)} models")
        return 0
    from pipeline.config.json_schema import targets_schema  # only this command needs it

    text = json.dumps(targets_schema(), indent=2) + "\n"
    if args.output:
        args.output.write_text(text)
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
