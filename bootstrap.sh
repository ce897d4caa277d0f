#!/usr/bin/env bash
# Set up everything this project needs on a fresh machine; safe to run again (idempotent).
#   ./bootstrap.sh              Python environment (.venv) + cross toolchains (apt, when root)
#   ./bootstrap.sh --no-apt     Python environment only
# Environment: PYTHON (default python3) picks the interpreter for the virtual environment.
set -euo pipefail
cd "$(dirname "$0")"

APT_PACKAGES=(gcc-arm-none-eabi libnewlib-arm-none-eabi libstdc++-arm-none-eabi-newlib
              g++-aarch64-linux-gnu qemu-user qemu-system-arm ninja-build cmake ccache
              googletest clang libclang-rt-14-dev file mesa-vulkan-drivers libvulkan1
              nginx libnginx-mod-http-dav-ext chromium git)
# git: the runtime build clones Arm's Ethos-U Linux driver stack (tag 26.05) for a target with
# npu: {driver: ethosu-driver-stack} and no npu.driver_stack checkout (cmake/EthosuDriverStack.cmake).
# libclang-rt-14-dev: clang's sanitizer and libFuzzer runtimes (tests/runtime/test_fuzz_artifact.py);
# a Recommends of clang, so --no-install-recommends leaves it out unless named here.
# mesa-vulkan-drivers libvulkan1: the Vulkan loader and Mesa's CPU driver (lavapipe) that VGF
# targets' run check executes model.vgf on (with the ML emulation layer from pyproject.toml).
# nginx (+ dav-ext for PROPFIND listings): the WebDAV server of tests/cache/test_remote.py.
# chromium: the headless browser tests/e2e/test_report_html.py opens build/report.html in.
with_apt=1
for arg in "$@"; do
  case "$arg" in
    --no-apt) with_apt=0 ;;
    -h|--help) sed -n '2,5p' "$0"; exit 0 ;;
    *) echo "bootstrap.sh: unknown option '$arg' (expected --no-apt or --help)" >&2; exit 2 ;;
  esac
done

step() { printf '==> %s\n' "$*"; }

if [ "$with_apt" = 1 ]; then
  missing=()
  for pkg in "${APT_PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
  done
  if [ "${#missing[@]}" -eq 0 ]; then
    step "cross toolchains: already installed"
  elif [ "$(id -u)" = 0 ]; then
    step "cross toolchains: apt-get install ${missing[*]}"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  else
    echo "Not root: install the cross toolchains with" >&2
    echo "  sudo apt-get update && sudo apt-get install -y ${missing[*]}" >&2
  fi
fi

PYTHON=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  step "virtual environment: .venv ($($PYTHON --version))"
  "$PYTHON" -m venv .venv
fi
stamp=.venv/.bootstrap-stamp
want=$(cat pyproject.toml requirements-tools.txt 2>/dev/null | sha256sum | cut -c1-16)
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  step "Python packages: torch==2.13.0 (CPU), torchao, tosa-tools, ethos-u-vela, doit, ... (pinned in pyproject.toml)"
  .venv/bin/python -m pip install -q --disable-pip-version-check -e ".[test]" -r requirements-tools.txt
  echo "$want" > "$stamp"
else
  step "Python packages: up to date"
fi
step "ready: .venv/bin/doit build target=u85-linux   |   .venv/bin/pytest"
