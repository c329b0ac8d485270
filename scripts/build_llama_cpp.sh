#!/usr/bin/env bash
# llama.cpp compiled once for both of its uses here, from llama-cpp-python's source package:
#
#   * the llama-cpp-python wheel: the in-process llama.cpp backend and the engine-parity ground truth;
#   * llama.cpp's own HTTP server, `llama-server`, for the remote-engine tests.
#
# Compiling llama.cpp (ggml's CPU kernels above all) is most of a fresh machine's set-up on 2 cores.
# pip compiles it for the wheel in a cmake build tree it throws away; here that tree is kept, and
# the same tree is configured once more with llama.cpp's server switched on and asked for the
# `llama-server` target only: ggml, llama, mtmd and the common library are already compiled there,
# so only the server's own sources are new. The server then loads the very shared libraries the
# wheel ships (one llama.cpp commit, one build, exact agreement for the parity tests).
#
# Results go to a cache shared by every checkout on this machine, keyed by the version and this
# CPU's feature flags (ggml is compiled for the CPU it builds on: a build from another CPU may
# use instructions this one lacks):
#   $CACHE/wheel/llama_cpp_python-$VERSION-*.whl
#   $CACHE/server/llama-server  (+ the shared libraries it loads, found through RUNPATH $ORIGIN)
# If the server's part fails, the wheel is still kept and build_llama_server.sh compiles the
# server on its own (the slower way) and says so.
#
# Usage: build_llama_cpp.sh VENV VERSION      (prints nothing when the cache is already complete)
set -euo pipefail
VENV="$1"
VERSION="$2"
PY="$VENV/bin/python"
CACHE="$(bash "$(dirname "$0")/llama_cpp_cache.sh" "$VERSION")"
JOBS="$(nproc)"

have_wheel() { compgen -G "$CACHE/wheel/llama_cpp_python-$VERSION-*.whl" >/dev/null; }
if have_wheel && { [ -f "$CACHE/server.done" ] || [ -f "$CACHE/server.failed" ]; }; then
  exit 0
fi
command -v cmake >/dev/null || { echo "llama.cpp needs cmake and a C++ compiler (apt-get install cmake g++)"; exit 1; }

WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
start=$(date +%s)
echo "llama.cpp $VERSION: compiling once for the llama-cpp-python wheel and llama-server (about 8 min on 2 cores) ..."
"$PY" -m pip download --quiet --no-deps --no-binary :all: -d "$WORK" "llama-cpp-python==$VERSION" \
  >"$WORK/download.log" 2>&1 || { cat "$WORK/download.log"; exit 1; }
tar -xzf "$WORK"/llama_cpp_python-*.tar.gz -C "$WORK"
SRC="$(echo "$WORK"/llama_cpp_python-"$VERSION")"

# 1. The wheel, exactly as `pip install` would build it, but from a source folder and a build
#    tree that stay (pip builds a folder in place; scikit-build-core's build-dir keeps the tree).
CMAKE_BUILD_PARALLEL_LEVEL="$JOBS" "$PY" -m pip wheel --quiet --no-deps -w "$WORK/wheel" \
  --config-settings=build-dir="$WORK/build" "$SRC" >"$WORK/wheel.log" 2>&1 \
  || { tail -60 "$WORK/wheel.log"; exit 1; }
mkdir -p "$CACHE/wheel"
rm -f "$CACHE"/wheel/*.whl "$CACHE/server.done" "$CACHE/server.failed"
cp "$WORK"/wheel/llama_cpp_python-"$VERSION"-*.whl "$CACHE/wheel/"
echo "llama.cpp $VERSION: wheel built in $(( $(date +%s) - start )) s"

# 2. llama-server in the same tree. llama.cpp's tools bring their own mtmd (the wheel's CMakeLists
#    adds the same folder itself, so that copy is switched off); no web UI, no HTTPS, no app binary.
#    Every library the server links sits beside it in bin/, and RUNPATH $ORIGIN finds it there.
server_start=$(date +%s)
if cmake -S "$SRC" -B "$WORK/build" -DLLAMA_BUILD_TOOLS=ON -DLLAMA_BUILD_SERVER=ON -DLLAVA_BUILD=OFF \
     -DLLAMA_BUILD_APP=OFF -DLLAMA_BUILD_UI=OFF -DLLAMA_USE_PREBUILT_UI=OFF -DLLAMA_OPENSSL=OFF \
     -DCMAKE_BUILD_RPATH_USE_ORIGIN=ON >"$WORK/configure.log" 2>&1 \
   && cmake --build "$WORK/build" --target llama-server -j "$JOBS" >"$WORK/server.log" 2>&1 \
   && "$WORK/build/bin/llama-server" --version >/dev/null 2>&1; then
  rm -rf "$CACHE/server"
  mkdir -p "$CACHE/server"
  cp "$WORK/build/bin/llama-server" "$CACHE/server/"
  # the shared libraries it loads from the build tree (not the system's)
  ldd "$WORK/build/bin/llama-server" | awk -v tree="$WORK/build/" 'index($3, tree) == 1 {print $3}' \
    | xargs -r -I{} cp -L {} "$CACHE/server/"
  if "$CACHE/server/llama-server" --version >/dev/null 2>&1; then
    touch "$CACHE/server.done"
    echo "llama.cpp $VERSION: llama-server built in the same tree in $(( $(date +%s) - server_start )) s"
  else
    touch "$CACHE/server.failed"
    echo "llama.cpp $VERSION: the copied llama-server does not run; build_llama_server.sh will compile it alone"
  fi
else
  tail -30 "$WORK/configure.log" "$WORK/server.log" 2>/dev/null || true
  touch "$CACHE/server.failed"
  echo "llama.cpp $VERSION: llama-server did not build in the wheel's tree; build_llama_server.sh will compile it alone"
fi
echo "llama.cpp $VERSION: done in $(( $(date +%s) - start )) s"
