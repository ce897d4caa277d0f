#!/usr/bin/env bash
# Create .venv-litert: litert-torch 0.10.0 (PyTorch -> int8 .tflite) beside this project, for
# benchmarks/bench_vs_tflite.py (TFLite + Vela, the flow most Ethos-U products ship). Never
# touches .venv (litert-torch's dependencies could disturb its pins).
#
# Usage: benchmarks/setup_litert.sh [VENV]      (default: <project>/.venv-litert)
#
# What it installs, and why:
#   torch==2.13.0 (CPU wheel)     the project's pin; a constraints file holds every pin below so
#                                 pip can never resolve torch freely (that pulls GBs of CUDA).
#                                 litert-torch 0.10.0 accepts it (checked with pip --dry-run).
#   litert-torch==0.10.0          the converter being compared: torch.export -> its PT2E
#                                 quantizer -> a full-integer .tflite. It brings ai-edge-litert
#                                 (the TFLite interpreter), litert-converter, jax and
#                                 ai-edge-quantizer; no TensorFlow.
#   ethos-u-vela==5.2.0           the project's Vela: the .tflite goes through the same compiler,
#                                 vela.ini, system config and memory mode as our builds.
#   tosa-tools, torchao, numpy,   held to the project's pins, so our own flow runs in the same
#   pydantic, pyyaml, doit,       process with exactly the versions .venv has (the bench calibrates
#   transformers                  both sides on the same samples in memory).
#   this project (-e, --no-deps)  the bench imports our stages.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${1:-$ROOT/.venv-litert}"
LITERT_TORCH_VERSION=0.10.0

# The same interpreter as .venv when there is one (its pyvenv.cfg names it), else python3.
PYTHON="${PYTHON:-}"
if [[ -z "$PYTHON" && -f "$ROOT/.venv/pyvenv.cfg" ]]; then
  home="$(sed -n 's/^home = //p' "$ROOT/.venv/pyvenv.cfg")"
  for name in python3.11 python3; do
    if [[ -x "$home/$name" ]]; then PYTHON="$home/$name"; break; fi
  done
fi
PYTHON="${PYTHON:-python3}"

# Pins read from pyproject.toml, so this script follows the project when a pin moves.
pin() {
  "$PYTHON" - "$ROOT/pyproject.toml" "$1" <<'PY'
import sys, tomllib
project = tomllib.load(open(sys.argv[1], "rb"))["project"]
deps = project["dependencies"] + project["optional-dependencies"]["test"]
hits = [d for d in deps if d.split("==")[0].lower() == sys.argv[2]]
if not hits:
    sys.exit(f"setup_litert: pyproject.toml must pin {sys.argv[2]}; got {deps}")
print(hits[0])
PY
}

CONSTRAINTS="$(mktemp)"
trap 'rm -f "$CONSTRAINTS"' EXIT
for name in torch torchao tosa-tools ethos-u-vela numpy doit pydantic pyyaml transformers; do
  pin "$name" >> "$CONSTRAINTS"
done
echo "setup_litert: constraints (from pyproject.toml):"
sed 's/^/  /' "$CONSTRAINTS"

if [[ ! -x "$VENV/bin/python" ]]; then
  "$PYTHON" -m venv "$VENV"
fi
PIP=("$VENV/bin/python" -m pip install --disable-pip-version-check -c "$CONSTRAINTS")

# torch first and alone, pinned: pip then finds the CPU wheel and never resolves torch again.
"${PIP[@]}" "$(pin torch)"
"${PIP[@]}" "litert-torch==$LITERT_TORCH_VERSION" "$(pin ethos-u-vela)" "$(pin tosa-tools)" \
  "$(pin torchao)" "$(pin numpy)" "$(pin transformers)"
"${PIP[@]}" "$(pin doit)" "$(pin pydantic)" "$(pin pyyaml)"
"${PIP[@]}" --no-deps -e "$ROOT"

# Check what landed: the pins, and that the converter, its quantizer, the TFLite interpreter,
# Vela and this project import.
TORCHAO_FORCE_SKIP_LOADING_SO_FILES=1 "$VENV/bin/python" - <<'PY'
from importlib.metadata import version
for name in ("torch", "torchao", "litert-torch", "ai-edge-litert", "ethos-u-vela", "tosa-tools",
             "numpy"):
    print(f"  {name:14} {version(name)}")
import litert_torch  # noqa: F401
from litert_torch.quantize import pt2e_quantizer  # noqa: F401
from ai_edge_litert.interpreter import Interpreter  # noqa: F401
import ethosu.vela.vela  # noqa: F401
import pipeline  # noqa: F401
print("setup_litert: litert-torch, its PT2E quantizer, the TFLite interpreter, Vela and this "
      "project import")
PY
"$VENV/bin/python" -m pip check || echo "setup_litert: pip check reports the conflicts above" \
  "(expected: the VGF and remote-store dependencies of this project are not installed here;\n" \
  "xdsl, a litert-torch dependency, asks for an older typing-extensions than torch brings)"
echo "setup_litert: done; run $VENV/bin/python benchmarks/bench_vs_tflite.py"
