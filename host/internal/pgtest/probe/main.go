// Command probe says, in one line for `make test`, whether the PostgreSQL
// suites will run against a server or be skipped, and fails when they would
// be skipped with WAKE_TEST_POSTGRES=required.
package main

import (
	"fmt"
	"os"

	"github.com/wakeonchat/wakeonchat/host/internal/pgtest"
)

func main() {
	err := pgtest.Available()
	switch {
	case err == nil:
		fmt.Printf("PostgreSQL suites: running against %s\n", pgtest.Where())
	case pgtest.Required():
		fmt.Printf("PostgreSQL suites: %s=required and no PostgreSQL answers at %s: %v\n", pgtest.EnvRequired, pgtest.Where(), pgtest.Reason(err))
		os.Exit(1)
	default:
		fmt.Printf("PostgreSQL suites: SKIPPED — no PostgreSQL answers at %s (%v); set %s to a server, or %s=required to fail instead\n",
			pgtest.Where(), pgtest.Reason(err), pgtest.EnvDSN, pgtest.EnvRequired)
	}
}
