// Command checker is package store's check process for the package's own
// tests, built without the race detector (see main_test.go). It checks a
// store file only when started by Open: package filecheck's init does the
// work and exits before main runs. It links filecheck alone, not the store,
// so that each of the hundreds of checks the tests start is quick to start.
package main

import (
	"fmt"
	"os"

	_ "github.com/wakeonchat/wakeonchat/host/store/internal/filecheck"
)

func main() {
	fmt.Fprintln(os.Stderr, "checker: only package store's Open starts this program")
	os.Exit(1)
}
