#!/usr/bin/env bash
# Installs Debian's chromium when no Chromium (or Chrome) is on the PATH, for the tests
# that drive a real browser (host/internal/browser). Idempotent: a second run
# finds the browser and does nothing. `make test` runs it (through
# scripts/test-setup.sh) when no browser is found. It needs root (or sudo)
# only when it has something to install.
#
#   scripts/install-chromium.sh          install when missing
#   scripts/install-chromium.sh --check  print nothing; exit 0 when a browser is found, 1 when not
set -euo pipefail

check=false
case "${1:-}" in
"") ;;
--check) check=true ;;
*)
	echo "usage: $0 [--check]" >&2
	exit 2
	;;
esac

if [ -n "${WAKE_CHROMIUM:-}" ]; then
	if path="$(command -v "$WAKE_CHROMIUM")"; then
		$check || echo "install-chromium: WAKE_CHROMIUM names $path; nothing to do"
		exit 0
	fi
	$check && exit 1
	echo "install-chromium: WAKE_CHROMIUM=$WAKE_CHROMIUM is not an executable; unset it to use Debian's chromium" >&2
	exit 1
fi

# The names host/internal/browser's Find looks for, in its order.
for name in chromium chromium-browser google-chrome google-chrome-stable headless-shell; do
	if path="$(command -v "$name")"; then
		$check || echo "install-chromium: found $path ($("$path" --version 2>/dev/null || echo "version unknown")); nothing to do"
		exit 0
	fi
done
$check && exit 1

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

echo "install-chromium: no Chromium on the PATH; installing Debian's chromium package with apt-get (once)"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends chromium >/dev/null
path="$(command -v chromium)"
echo "install-chromium: installed $path ($("$path" --version 2>/dev/null || echo "version unknown"))"
