package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/wakeonchat/wakeonchat/host/internal/binaries"
)

// wakehostBin is wakehost built alone, by TestMain, into a directory that
// holds nothing else: no plugin binary to fall back on.
var wakehostBin string

func TestMain(m *testing.M) {
	os.Exit(runTests(m))
}

func runTests(m *testing.M) int {
	dir, err := os.MkdirTemp("", "wakehost-only-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	if err := binaries.BuildHost(context.Background(), dir); err != nil {
		fmt.Fprintln(os.Stderr, "wakehost tests:", err)
		return 1
	}
	wakehostBin = filepath.Join(dir, binaries.Wakehost)
	return m.Run()
}
