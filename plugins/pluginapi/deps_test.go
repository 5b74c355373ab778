package pluginapi_test

import (
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

const module = "github.com/wakeonchat/wakeonchat/"

// Plugin binaries import only pluginapi (and their own package) from this
// module, and pluginapi imports only its generated proto package: a
// third-party plugin needs nothing else of wakehost. No binary imports
// plugintest: it would show in their deps.
func TestModuleImports(t *testing.T) {
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go is not on PATH")
	}
	tests := []struct {
		pkg  string
		want []string // this module's packages in its deps, itself included
	}{
		{
			pkg: "plugins/pluginapi",
			want: []string{
				"plugins/pluginapi",
				"plugins/pluginapi/proto",
			},
		},
		{
			// Tests' support: it needs nothing of this module either.
			pkg:  "plugins/pluginapi/plugintest",
			want: []string{"plugins/pluginapi/plugintest"},
		},
		{
			pkg: "plugins/conductor/cmd/wake-plugin-conductor",
			want: []string{
				"plugins/conductor",
				"plugins/conductor/cmd/wake-plugin-conductor",
				"plugins/pluginapi",
				"plugins/pluginapi/proto",
			},
		},
		{
			pkg: "plugins/provider-openai/cmd/wake-plugin-provider-openai",
			want: []string{
				"plugins/pluginapi",
				"plugins/pluginapi/proto",
				"plugins/provider-openai",
				"plugins/provider-openai/cmd/wake-plugin-provider-openai",
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.pkg, func(t *testing.T) {
			out, err := exec.Command(gobin, "list", "-deps", "-f", "{{.ImportPath}}", module+tt.pkg).Output()
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
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("this module's packages in the deps (-want +got):\n%s", diff)
			}
		})
	}
}
