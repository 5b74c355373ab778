package machines

import (
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestStateDiagramFresh fails when docs/state-diagram.md is not what
// `make generate` would write from the specs.
func TestStateDiagramFresh(t *testing.T) {
	want, err := StateDiagram()
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile("../docs/state-diagram.md")
	if err != nil {
		t.Fatalf("%v (run make generate)", err)
	}
	if diff := cmp.Diff(want, string(got)); diff != "" {
		t.Errorf("docs/state-diagram.md is stale; run make generate (-want +got):\n%s", diff)
	}
}

// TestStateDiagramContent checks the document shows every part of the table.
func TestStateDiagramContent(t *testing.T) {
	doc, err := StateDiagram()
	if err != nil {
		t.Fatal(err)
	}
	pod, err := NewPod(DefaultPolicy())
	if err != nil {
		t.Fatal(err)
	}
	table := pod.Table()
	must := []string{"```mermaid\nstateDiagram-v2\n", "[*] --> asleep", "## Transition table", "2026-09-09: the first live wake"}
	for _, s := range table.States {
		must = append(must, `"`+string(s)+`"`)
	}
	for _, r := range table.Rows {
		must = append(must, "| "+r.Guard+" |")
	}
	for _, m := range must {
		if !strings.Contains(doc, m) {
			t.Errorf("document lacks %q", m)
		}
	}
}
