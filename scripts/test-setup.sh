#!/usr/bin/env bash
# What `make test` needs before the tests, installed or started when it is
# missing, so that a fresh clone needs `make test` alone: a headless Chromium
# for the browser tests (scripts/install-chromium.sh, only when no headless
# shell is found) and the PostgreSQL server, when it is installed but stopped
# (scripts/start-postgres.sh). CI runs the same, through `make test`.
set -euo pipefail
cd "$(dirname "$0")"

if ! bash install-chromium.sh --check; then
	bash install-chromium.sh
fi
bash start-postgres.sh
