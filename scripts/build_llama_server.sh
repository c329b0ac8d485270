#!/usr/bin/env bash
# llama.cpp's own HTTP server, `llama-server`, for the remote-engine tests.
#
# It comes from the llama.cpp source that llama-cpp-python vendors (its source package), so the
# server and the in-process llama.cpp backend are one llama.cpp commit: the tests can then ask for
# exact agreement. Normally build_llama_cpp.sh (run by install.sh) has already compiled it in the
# wheel's own build tree, and it is copied here from ~/.cache with the shared libraries it loads
# (into $VENV/libexec/llama-server, linked from $VENV/bin/llama-server). Where that did not work,
# only the `llama-server` target is compiled on its own here (ggml, llama, the common library, the
# server; no web UI, no HTTPS, no other tools), statically linked: 7-9 min on 2 cores. That copy
# is kept in the same ~/.cache folder (llama_cpp_cache.sh: keyed by the llama-cpp-python version and
# this CPU's feature flags, as the build is tuned to the CPU it runs on).
#
# Usage: build_llama_server.sh [venv]
set -euo pipefail
VENV="${1:-.venv}"
PY="$VENV/bin/python"
OUT="$VENV/bin/llama-server"
VERSION="$("$PY" -c 'import importlib.metadata as m; print(m.version("llama-cpp-python"))')"
# the folder build_llama_cpp.sh fills (keyed by version and CPU); a server compiled alone is kept there too
LLAMA_CPP="$(bash "$(dirname "$0")/llama_cpp_cache.sh" "$VERSION")"
SHARED="$LLAMA_CPP/server"
CACHE="$LLAMA_CPP/static/llama-server"

works() { [ -x "$1" ] && "$1" --version >/dev/null 2>&1; }

if works "$OUT" && [ -f "$VENV/.llama-server-$VERSION" ]; then
  exit 0
fi
if works "$SHARED/llama-server"; then
  rm -rf "$VENV/libexec/llama-server" "$OUT"
  mkdir -p "$VENV/libexec"
  cp -r "$SHARED" "$VENV/libexec/llama-server"
  ln -s ../libexec/llama-server/llama-server "$OUT"
  works "$OUT" || { echo "llama-server copied from $SHARED does not run"; exit 1; }
  touch "$VENV/.llama-server-$VERSION"
  echo "llama-server $VERSION: copied from $SHARED (built with the llama-cpp-python wheel)"
  exit 0
fi
if works "$CACHE"; then
  rm -f "$OUT"
  install -m 755 "$CACHE" "$OUT"
  touch "$VENV/.llama-server-$VERSION"
  echo "llama-server $VERSION: copied from $CACHE"
  exit 0
fi

command -v cmake >/dev/null || { echo "llama-server needs cmake and a C++ compiler (apt-get install cmake g++)"; exit 1; }
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
echo "llama-server $VERSION: building from llama-cpp-python's llama.cpp source (7-9 min measured on 2 cores) ..."
start=$(date +%s)
# the source package (pip's cache has it when llama-cpp-python was compiled on this machine)
"$PY" -m pip download --quiet --no-deps --no-binary :all: -d "$WORK" "llama-cpp-python==$VERSION" \
  >"$WORK/download.log" 2>&1 || { cat "$WORK/download.log"; exit 1; }
tar -xzf "$WORK"/llama_cpp_python-*.tar.gz -C "$WORK"
SRC="$(echo "$WORK"/llama_cpp_python-*/vendor/llama.cpp)"
[ -f "$SRC/tools/server/CMakeLists.txt" ] || { echo "no llama.cpp server source in $SRC"; exit 1; }
cmake -S "$SRC" -B "$WORK/build" -DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=OFF \
  -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_TOOLS=ON -DLLAMA_BUILD_SERVER=ON \
  -DLLAMA_BUILD_APP=OFF -DLLAMA_BUILD_UI=OFF -DLLAMA_USE_PREBUILT_UI=OFF -DLLAMA_OPENSSL=OFF \
  -DGGML_CCACHE=OFF >"$WORK/configure.log" 2>&1 || { tail -40 "$WORK/configure.log"; exit 1; }
cmake --build "$WORK/build" --target llama-server -j "$(nproc)" >"$WORK/build.log" 2>&1 \
  || { tail -60 "$WORK/build.log"; exit 1; }
works "$WORK/build/bin/llama-server" || { echo "the built llama-server does not run"; exit 1; }
mkdir -p "$(dirname "$CACHE")"
install -m 755 "$WORK/build/bin/llama-server" "$CACHE"
rm -f "$OUT"
install -m 755 "$WORK/build/bin/llama-server" "$OUT"
touch "$VENV/.llama-server-$VERSION"
echo "llama-server $VERSION: built in $(( $(date +%s) - start )) s"
