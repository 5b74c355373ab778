#!/usr/bin/env bash
# Starts the PostgreSQL clusters that are installed but stopped (Debian's
# cluster tools, pg_lsclusters and pg_ctlcluster), so that the PostgreSQL
# store's suites run rather than skip. `make test` runs it (through
# scripts/test-setup.sh). It does nothing, and succeeds, where the tools are
# missing, no cluster is stopped, or a cluster cannot be started (not root,
# say): the probe `make test` runs next says whether the suites will run.
set -euo pipefail

if ! command -v pg_lsclusters >/dev/null || ! command -v pg_ctlcluster >/dev/null; then
	exit 0
fi
pg_lsclusters --no-header 2>/dev/null | while read -r version cluster _port status _rest; do
	if [ "$status" != online ]; then
		echo "start-postgres: PostgreSQL cluster $version/$cluster is $status; starting it"
		pg_ctlcluster "$version" "$cluster" start || echo "start-postgres: could not start $version/$cluster" >&2
	fi
done
