package main

import (
	"fmt"
	"os"
	"testing"

	"github.com/wakeonchat/wakeonchat/host/internal/e2e"
)

// wakehostBin is wakehost built alone, by TestMain, into a directory that
// holds nothing else: no plugin binary to fall back on. The directory is
// kept from one run to the next (e2e.BuildHostAlone), so that a run whose
// sources did not change links nothing.
var wakehostBin string

func TestMain(m *testing.M) {
	os.Exit(runTests(m))
}

func runTests(m *testing.M) int {
	bin, err := e2e.BuildHostAlone()
	if err != nil {
		fmt.Fprintln(os.Stderr, "wakehost tests:", err)
		return 1
	}
	wakehostBin = bin
	return m.Run()
}
