package engine_test

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

const (
	self   = "github.com/wakeonchat/wakeonchat/engine"
	module = "github.com/wakeonchat/wakeonchat"
)

// forbidden returns the packages in deps that engine must not depend on:
// anything outside the standard library and stateless, and by name the ones
// that would mean I/O, processes or plugins. deps lines are "importpath
// standard", as printed by the go list template below.
func forbidden(deps []string) []string {
	var bad []string
	for _, line := range deps {
		path, std, _ := strings.Cut(line, " ")
		switch {
		case path == "" || path == self:
		case path == "net/http", path == "os/exec",
			path == "github.com/hashicorp/go-plugin", strings.HasPrefix(path, "github.com/hashicorp/go-plugin/"),
			path == module, strings.HasPrefix(path, module+"/"):
			bad = append(bad, path)
		case std == "true":
		case path == "github.com/qmuntal/stateless":
		default:
			bad = append(bad, path)
		}
	}
	return bad
}

// TestDeps keeps engine pure: go list -deps (without -test, so test imports
// such as os/exec here do not count) must show only the standard library
// and stateless.
func TestDeps(t *testing.T) {
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("go binary not found: %v", err)
	}
	out, err := exec.Command(gobin, "list", "-deps", "-f", "{{.ImportPath}} {{.Standard}}", self).CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps %s: %v\n%s", self, err, out)
	}
	deps := strings.Split(strings.TrimSpace(string(out)), "\n")
	if !strings.Contains(string(out), "github.com/qmuntal/stateless false") {
		t.Fatalf("go list output does not look like engine's dependencies:\n%s", out)
	}
	if bad := forbidden(deps); len(bad) > 0 {
		t.Errorf("engine depends on forbidden packages: %v", bad)
	}
}

func TestForbidden(t *testing.T) {
	deps := []string{
		"context true",
		"net/http true",
		"os/exec true",
		"vendor/golang.org/x/net/http2/hpack true",
		"github.com/qmuntal/stateless false",
		"github.com/hashicorp/go-plugin false",
		"github.com/hashicorp/go-plugin/internal/plugin false",
		"github.com/hashicorp/go-pluginx false",
		"github.com/wakeonchat/wakeonchat false",
		"github.com/wakeonchat/wakeonchat/machines false",
		"github.com/wakeonchat/wakeonchat/engine false",
	}
	want := []string{
		"net/http",
		"os/exec",
		"github.com/hashicorp/go-plugin",
		"github.com/hashicorp/go-plugin/internal/plugin",
		"github.com/hashicorp/go-pluginx",
		"github.com/wakeonchat/wakeonchat",
		"github.com/wakeonchat/wakeonchat/machines",
	}
	if diff := cmp.Diff(want, forbidden(deps)); diff != "" {
		t.Errorf("forbidden mismatch (-want +got):\n%s", diff)
	}
}
