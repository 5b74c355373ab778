package machines

import (
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/wakeonchat/wakeonchat/engine"
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
	must := []string{"```mermaid\nflowchart LR\n", "start(( )) --> asleep", "## Transition table", "2026-09-09: the first live wake",
		"down -->|notReady| waking", "down -->|podUp, modelLoading, readySince| loading", "up -->|readySince, answered| ready",
		"ready -->|modelLoading| crashed", "ready -->|podDown| stopped"}
	for _, s := range table.States {
		must = append(must, mermaidID(s)+"(["+string(s)+"])")
	}
	for _, r := range table.Rows {
		must = append(must, "| "+string(r.On)+" |")
		if r.Guard != "" {
			must = append(must, "| "+r.Guard+" |")
		}
	}
	for _, m := range must {
		if !strings.Contains(doc, m) {
			t.Errorf("document lacks %q", m)
		}
	}
}

// TestPictureShowsEveryExit: every row that leaves its state is an arrow
// of the diagram, from the state or from the box that holds it, labelled
// with the row's trigger.
func TestPictureShowsEveryExit(t *testing.T) {
	pod, err := NewPod(DefaultPolicy())
	if err != nil {
		t.Fatal(err)
	}
	table := pod.Table()
	arrows := map[[2]string][]string{} // from, to -> triggers
	for _, line := range strings.Split(picture(table, pod.facts), "\n") {
		from, rest, ok := strings.Cut(strings.TrimSpace(line), " -->|")
		if !ok {
			continue
		}
		label, to, _ := strings.Cut(rest, "| ")
		arrows[[2]string{from, to}] = strings.Split(label, ", ")
	}
	for i, r := range table.Rows {
		if r.From == engine.Any || r.To == engine.Stay || r.To == r.From {
			continue
		}
		froms := []string{mermaidID(r.From)}
		for _, g := range pictureGroups(pod.facts) {
			if slices.Contains(g.states, r.From) {
				froms = append(froms, g.id)
			}
		}
		drawn := false
		for _, f := range froms {
			if slices.Contains(arrows[[2]string{f, mermaidID(r.To)}], string(r.On)) {
				drawn = true
			}
		}
		if !drawn {
			t.Errorf("row %d (%s --%s--> %s) is not drawn", i+1, r.From, r.On, r.To)
		}
	}
}
