package command_test

import (
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

const module = "github.com/wakeonchat/wakeonchat/"

// The plugin binary imports only pluginapi (and its own package) from this
// module, as pluginapi/deps_test.go asks of every plugin: a third-party
// copy of it needs nothing else of wakehost.
func TestModuleImports(t *testing.T) {
	t.Parallel()
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go is not on PATH")
	}
	out, err := exec.Command(gobin, "list", "-deps", "-f", "{{.ImportPath}}", module+"plugins/command/cmd/wake-plugin-command").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	var got []string
	for _, p := range strings.Fields(string(out)) {
		if rest, ok := strings.CutPrefix(p, module); ok {
			got = append(got, rest)
		}
	}
	slices.Sort(got)
	want := []string{
		"plugins/command",
		"plugins/command/cmd/wake-plugin-command",
		"plugins/pluginapi",
		"plugins/pluginapi/proto",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("this module's packages in the deps (-want +got):\n%s", diff)
	}
}
