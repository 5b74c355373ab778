#!/usr/bin/env bash
# Installs Debian's chromium when no Chromium (or Chrome) is on the PATH, for the tests
# that drive a real browser (host/internal/browser). Idempotent: a second run
# finds the browser and does nothing. .ci/run calls it first; developers run
# it once. It needs root (or sudo) only when it has something to install.
set -euo pipefail

if [ -n "${WAKE_CHROMIUM:-}" ]; then
	if path="$(command -v "$WAKE_CHROMIUM")"; then
		echo "install-chromium: WAKE_CHROMIUM names $path; nothing to do"
		exit 0
	fi
	echo "install-chromium: WAKE_CHROMIUM=$WAKE_CHROMIUM is not an executable; unset it to use Debian's chromium" >&2
	exit 1
fi

# The names host/internal/browser's Find looks for, in its order.
for name in chromium chromium-browser google-chrome google-chrome-stable headless-shell; do
	if path="$(command -v "$name")"; then
		echo "install-chromium: found $path ($("$path" --version 2>/dev/null || echo "version unknown")); nothing to do"
		exit 0
	fi
done

if ! command -v apt-get >/dev/null; then
	echo "install-chromium: no chromium on the PATH and no apt-get to install it with; install Chromium and put it on the PATH (or set WAKE_CHROMIUM to its path)" >&2
	exit 1
fi

sudo=""
if [ "$(id -u)" -ne 0 ]; then
	if ! command -v sudo >/dev/null; then
		echo "install-chromium: installing chromium needs root, and there is no sudo" >&2
		exit 1
	fi
	sudo="sudo"
fi

echo "install-chromium: chromium not found; installing Debian's chromium package with apt-get"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends chromium >/dev/null
path="$(command -v chromium)"
echo "install-chromium: installed $path ($("$path" --version 2>/dev/null || echo "version unknown"))"
