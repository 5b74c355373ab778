package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/wakeonchat/wakeonchat/host/internal/binaries"
)

// installedPath is where the unit expects wakehost.
const installedPath = "/usr/local/bin/wakehost"

// TestSystemdUnit keeps docs/deploy/wakehost.service and its copy in
// docs/operations.md the same, its TimeoutStopSec above the default
// shutdown grace that wakehost check prints, and the unit valid for
// systemd-analyze verify (with wakehostBin in place of the installed
// binary), where the machine has it.
func TestSystemdUnit(t *testing.T) {
	t.Parallel()
	root, err := binaries.ModuleRoot(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	unit, err := os.ReadFile(filepath.Join(root, "docs", "deploy", "wakehost.service"))
	if err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile(filepath.Join(root, "docs", "operations.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(doc), "```ini\n"+string(unit)+"```\n") {
		t.Errorf("docs/operations.md has no ```ini block that is docs/deploy/wakehost.service whole")
	}

	stop := regexp.MustCompile(`(?m)^TimeoutStopSec=(\d+)s$`).FindStringSubmatch(string(unit))
	if stop == nil {
		t.Fatal("the unit has no TimeoutStopSec=Ns")
	}
	timeout, _ := time.ParseDuration(stop[1] + "s")
	cfg := filepath.Join(t.TempDir(), "wake.toml")
	if err := os.WriteFile(cfg, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(wakehostBin, "check", "-config", cfg).Output()
	if err != nil {
		t.Fatalf("wakehost check on the defaults: %v", err)
	}
	m := regexp.MustCompile(`shutdown grace (\S+)\)$`).FindStringSubmatch(strings.TrimSpace(string(out)))
	if m == nil {
		t.Fatalf("wakehost check printed no shutdown grace: %q", out)
	}
	grace, err := time.ParseDuration(m[1])
	if err != nil {
		t.Fatal(err)
	}
	if timeout < grace+5*time.Second || timeout > grace+30*time.Second {
		t.Errorf("TimeoutStopSec=%v, want about 10 s above the default grace, %v", timeout, grace)
	}

	for _, key := range []string{"Restart=on-failure", "DynamicUser=yes", "StateDirectory=wakehost", "EnvironmentFile=/etc/wakehost/secrets.env",
		"ExecStartPre=" + installedPath + " check -config /etc/wakehost/wake.toml", "ExecStart=" + installedPath + " -config /etc/wakehost/wake.toml"} {
		if !regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(key) + `( |$)`).Match(unit) {
			t.Errorf("the unit has no line %q", key)
		}
	}

	t.Run("systemd-analyze verify", func(t *testing.T) {
		analyze, err := exec.LookPath("systemd-analyze")
		if err != nil {
			t.Skip("systemd-analyze is not on PATH")
		}
		path := filepath.Join(t.TempDir(), "wakehost.service")
		if err := os.WriteFile(path, []byte(strings.ReplaceAll(string(unit), installedPath, wakehostBin)), 0o644); err != nil {
			t.Fatal(err)
		}
		// verify warns about unknown keys on stderr and still exits 0:
		// any output fails the test.
		out, err := exec.Command(analyze, "verify", path).CombinedOutput()
		if err != nil || len(out) > 0 {
			t.Errorf("systemd-analyze verify: %v\n%s", err, out)
		}
	})
}
