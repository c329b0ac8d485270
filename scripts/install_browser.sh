#!/usr/bin/env bash
# Debian's Chromium (and CJK fonts for screenshots of the Chinese UI) for browser tests.
set -euo pipefail
if [ -x /usr/bin/chromium ]; then exit 0; fi
if [ "$(id -u)" != "0" ]; then
  echo "browser tests need /usr/bin/chromium: run 'sudo apt-get install -y chromium fonts-wqy-zenhei'" >&2
  exit 0
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq chromium fonts-wqy-zenhei >/dev/null
