#!/usr/bin/env bash
# Installs Debian's chromium-headless-shell (Chromium's old headless mode, a
# program of its own: the same Blink as Chromium's for a third of the CPU)
# for the tests that drive a real browser (host/internal/browser), when no
# headless shell is on the PATH. Without root (or a sudo that asks no
# password) it leaves a full Chromium or Chrome on the PATH to the tests.
# Idempotent: a second run finds the browser and does nothing. `make test`
# runs it (through scripts/test-setup.sh) when --check says so.
#
#   scripts/install-chromium.sh          install when missing
#   scripts/install-chromium.sh --check  print nothing; exit 0 when there is nothing to do, 1 when not
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
	echo "install-chromium: WAKE_CHROMIUM=$WAKE_CHROMIUM is not an executable; unset it to use a browser on the PATH" >&2
	exit 1
fi

# The names host/internal/browser's Find looks for, in its order: the
# headless shells first.
shells="chromium-headless-shell headless-shell"
browsers="chromium chromium-browser google-chrome google-chrome-stable"
version() { "$1" --version 2>/dev/null || echo "version unknown"; }

for name in $shells; do
	if path="$(command -v "$name")"; then
		$check || echo "install-chromium: found $path ($(version "$path")); nothing to do"
		exit 0
	fi
done
other=""
for name in $browsers; do
	if other="$(command -v "$name")"; then
		break
	fi
done

# Root, or a sudo that asks no password: make test never stops at a prompt.
sudo=""
can_install=false
if command -v apt-get >/dev/null; then
	if [ "$(id -u)" -eq 0 ]; then
		can_install=true
	elif command -v sudo >/dev/null && sudo -n true 2>/dev/null; then
		sudo="sudo"
		can_install=true
	fi
fi

if $check; then
	# Nothing to do when a full browser is here and no shell can be added.
	[ -n "$other" ] && ! $can_install && exit 0
	exit 1
fi

if ! $can_install; then
	if [ -n "$other" ]; then
		echo "install-chromium: using $other ($(version "$other")); Debian's chromium-headless-shell would take a third of its CPU, and installing it needs apt-get and root (or a sudo without a password)"
		exit 0
	fi
	echo "install-chromium: no Chromium on the PATH, and installing Debian's chromium-headless-shell needs apt-get and root (or a sudo without a password); install a Chromium and put it on the PATH (or set WAKE_CHROMIUM to its path)" >&2
	exit 1
fi

echo "install-chromium: no headless shell on the PATH; installing Debian's chromium-headless-shell package with apt-get (once)"
export DEBIAN_FRONTEND=noninteractive
if ! { $sudo apt-get update -qq && $sudo apt-get install -y -qq --no-install-recommends chromium-headless-shell >/dev/null; }; then
	if [ -n "$other" ]; then
		echo "install-chromium: apt-get could not install chromium-headless-shell; using $other ($(version "$other"))"
		exit 0
	fi
	echo "install-chromium: apt-get could not install chromium-headless-shell, and no other Chromium is on the PATH" >&2
	exit 1
fi
if ! path="$(command -v chromium-headless-shell)"; then
	echo "install-chromium: apt-get installed chromium-headless-shell, but it is not on the PATH ($PATH)" >&2
	exit 1
fi
echo "install-chromium: installed $path ($(version "$path"))"
