#!/usr/bin/env bash
# Create .venv-executorch: ExecuTorch 1.5.1 (Arm Ethos-U backend) beside this project, for
# benchmarks/bench_vs_executorch.py. Never touches .venv (ExecuTorch could disturb its pins).
#
# Usage: benchmarks/setup_executorch.sh [VENV]      (default: <project>/.venv-executorch)
#
# What it installs, and why:
#   torch==2.13.0 (CPU wheel)     the project's pin; a constraints file holds every pin below so
#                                 pip can never resolve torch freely (that pulls GBs of CUDA).
#   executorch==1.5.1             the AOT flow being compared (its Arm backend is pure Python).
#   ethos-u-vela==5.2.0           the project's Vela, NOT the 5.1.0 of executorch[ethos-u]: the
#                                 comparison must use the same Vela on both sides.
#   tosa-tools==2026.8.0          the project's tosa-tools, NOT the 2026.5.0 of executorch[ethos-u]:
#                                 ExecuTorch's Arm backend only needs its `tosa_serializer` and
#                                 `tosa` flatbuffer modules, which 2026.8.0 provides (the bench
#                                 checks that it lowers), and keeping it lets our own flow run in
#                                 the same process with exactly the versions .venv has.
#   ml_dtypes                     executorch[ethos-u] needs it; resolved by tosa-tools' own need.
#   torchao, numpy                held to the project's pins (executorch wants torchao>=0.18,<0.19).
#   this project (-e, --no-deps)  plus its light deps (doit, pydantic, pyyaml) so the bench runs
#                                 both flows in one interpreter.
#   pytest                        the project's pin (its test extra): the Arm backend's operator
#                                 tests import it (benchmarks/bench_op_parity.py collects them).
# The extra `executorch[ethos-u]` itself is not requested: it would pin Vela 5.1.0.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${1:-$ROOT/.venv-executorch}"
EXECUTORCH_VERSION=1.5.1

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
  "$PYTHON" - "$ROOT/pyproject.toml" "$1" <<'EOF'
import sys, tomllib
project = tomllib.load(open(sys.argv[1], "rb"))["project"]
deps = project["dependencies"] + project["optional-dependencies"]["test"]
hits = [d for d in deps if d.split("==")[0].lower() == sys.argv[2]]
if not hits:
    sys.exit(f"setup_executorch: pyproject.toml must pin {sys.argv[2]}; got {deps}")
print(hits[0])
EOF
}

CONSTRAINTS="$(mktemp)"
trap 'rm -f "$CONSTRAINTS"' EXIT
for name in torch torchao tosa-tools ethos-u-vela numpy doit pydantic pyyaml; do
  pin "$name" >> "$CONSTRAINTS"
done
echo "setup_executorch: constraints (from pyproject.toml):"
sed 's/^/  /' "$CONSTRAINTS"

if [[ ! -x "$VENV/bin/python" ]]; then
  "$PYTHON" -m venv "$VENV"
fi
PIP=("$VENV/bin/python" -m pip install --disable-pip-version-check -c "$CONSTRAINTS")

# torch first and alone, pinned: pip then finds the CPU wheel and never resolves torch again.
"${PIP[@]}" "$(pin torch)"
"${PIP[@]}" "executorch==$EXECUTORCH_VERSION" "$(pin ethos-u-vela)" "$(pin tosa-tools)" \
  ml_dtypes "$(pin torchao)" "$(pin numpy)"
"${PIP[@]}" "$(pin doit)" "$(pin pydantic)" "$(pin pyyaml)"
"${PIP[@]}" "$(pin pytest)"
"${PIP[@]}" --no-deps -e "$ROOT"

# Check what landed: the pins, and that the Arm Ethos-U backend imports (torchao's CUDA
# kernels are skipped: nothing here uses them, and loading them only prints failures).
TORCHAO_FORCE_SKIP_LOADING_SO_FILES=1 "$VENV/bin/python" - <<'EOF'
from importlib.metadata import version
for name in ("torch", "torchao", "executorch", "ethos-u-vela", "tosa-tools", "numpy", "ml_dtypes"):
    print(f"  {name:14} {version(name)}")
from executorch.backends.arm.ethosu import EthosUCompileSpec, EthosUPartitioner  # noqa: F401
from executorch.backends.arm.quantizer import EthosUQuantizer  # noqa: F401
import pipeline  # noqa: F401
print("setup_executorch: ExecuTorch's Arm Ethos-U backend and this project import")
EOF
"$VENV/bin/python" -m pip check || echo "setup_executorch: pip check reports the conflicts above" \
  "(expected: executorch's extra pins are not installed on purpose)"
echo "setup_executorch: done; run $VENV/bin/python benchmarks/bench_vs_executorch.py"
