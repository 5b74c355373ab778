package runpod_test

import (
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

const module = "github.com/wakeonchat/wakeonchat/"

// The plugin binary imports only pluginapi of this module (and its own
// package); the fake imports only the standard library, so the host's
// end-to-end tests can use it and carry nothing of the plugin with it.
func TestModuleImports(t *testing.T) {
	t.Parallel()
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go is not on PATH")
	}
	tests := []struct {
		pkg    string
		format string   // go list -f: which packages to list
		want   []string // of them, this module's (or, for the fake, every non-standard one)
	}{
		{
			pkg:    "plugins/runpod/cmd/wake-plugin-runpod",
			format: "{{.ImportPath}}",
			want: []string{
				"plugins/pluginapi",
				"plugins/pluginapi/proto",
				"plugins/runpod",
				"plugins/runpod/cmd/wake-plugin-runpod",
			},
		},
		{
			pkg:    "plugins/runpod/runpodfake",
			format: "{{if not .Standard}}{{.ImportPath}}{{end}}",
			want:   []string{"plugins/runpod/runpodfake"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.pkg, func(t *testing.T) {
			t.Parallel()
			out, err := exec.Command(gobin, "list", "-deps", "-f", tt.format, module+tt.pkg).Output()
			if err != nil {
				t.Fatalf("go list: %v", err)
			}
			var got []string
			for _, p := range strings.Fields(string(out)) {
				rest, ours := strings.CutPrefix(p, module)
				switch {
				case ours:
					got = append(got, rest)
				case strings.Contains(tt.format, "Standard"):
					got = append(got, p) // a third-party package in the fake
				}
			}
			slices.Sort(got)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("packages in the deps (-want +got):\n%s", diff)
			}
		})
	}
}
