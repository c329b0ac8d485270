#!/usr/bin/env bash
# Prints the cache folder for llama.cpp builds of one llama-cpp-python version on this CPU:
# ~/.cache/decoding_lab/llama-cpp-VERSION-CPU, where CPU is a checksum of /proc/cpuinfo's feature
# flags (ggml compiles for the CPU it builds on, so another CPU gets a build of its own).
# Usage: llama_cpp_cache.sh VERSION
set -euo pipefail
CPU="$( (grep -m1 -E '^(flags|Features)' /proc/cpuinfo 2>/dev/null || uname -m) | cksum | cut -d' ' -f1)"
echo "${XDG_CACHE_HOME:-$HOME/.cache}/decoding_lab/llama-cpp-$1-$CPU"
