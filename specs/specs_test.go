package specs

import (
	"strings"
	"testing"

	"github.com/wakeonchat/wakeonchat/engine"
)

func TestPodLifecycleParses(t *testing.T) {
	tab, err := PodLifecycle()
	if err != nil {
		t.Fatal(err)
	}
	if tab.Name != "pod-lifecycle" || tab.Initial != "asleep" || len(tab.States) != 11 || len(tab.Rows) == 0 {
		t.Errorf("unexpected table: name %q initial %q, %d states, %d rows", tab.Name, tab.Initial, len(tab.States), len(tab.Rows))
	}
}

func TestParseTableErrors(t *testing.T) {
	tests := []struct {
		name, src, want string
	}{
		{"unknown key", "name = \"t\"\ninitail = \"a\"\n", `transition table: unknown key "initail"`},
		{"unknown row key", "name = \"t\"\n[[row]]\nfrom = \"a\"\ngaurd = \"g\"\n", `transition table: unknown key "row.gaurd"`},
		{"malformed", "name = \n", "transition table: toml: line 1"},
		{"state without a group", state(`group = "sideways"`), `transition table: state s: group "sideways", want down, up or either`},
		{"holdable, not in progress", state(`group = "down"`, "holdable = true"), "transition table: state s: holdable needs in_progress"},
		{"outcome in progress", state(`group = "down"`, "in_progress = true", `outcome = "ready"`), "transition table: state s: a wake in progress has no outcome yet"},
		{"no tone", state(`group = "up"`), `transition table: state s: tone ""`},
		{"no words", state(`group = "up"`, `tone = "ok"`), "transition table: state s: means is required"},
		{"unknown state key", state(`group = "up"`, `hodlable = true`), `transition table: unknown key "state.hodlable"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseLifecycle([]byte(tt.src))
			if err == nil || !strings.HasPrefix(err.Error(), tt.want) {
				t.Errorf("err = %v, want prefix %q", err, tt.want)
			}
		})
	}
}

// state is a table with one [[state]] s of the given facts.
func state(facts ...string) string {
	return "name = \"t\"\n[[state]]\nname = \"s\"\n" + strings.Join(facts, "\n") + "\n"
}

// TestScenariosWellFormed: every step names a trigger of the table, is in
// time order, and says what must come out.
func TestScenariosWellFormed(t *testing.T) {
	tab, err := PodLifecycle()
	if err != nil {
		t.Fatal(err)
	}
	triggers := map[engine.Trigger]bool{}
	for _, tr := range tab.Triggers {
		triggers[tr] = true
	}
	states := map[engine.State]bool{}
	for _, s := range tab.States {
		states[s] = true
	}
	scs, err := Scenarios()
	if err != nil {
		t.Fatal(err)
	}
	for _, sc := range scs {
		if sc.Name == "" || sc.Title == "" || sc.Pod == "" {
			t.Errorf("%s: name, title and pod are required", sc.File)
		}
		for i, st := range sc.Steps {
			if !triggers[engine.Trigger(st.Event)] {
				t.Errorf("%s step %d: unknown event %q", sc.File, i+1, st.Event)
			}
			if !states[engine.State(st.State)] {
				t.Errorf("%s step %d: unknown state %q", sc.File, i+1, st.State)
			}
			if i > 0 && st.At.Before(sc.Steps[i-1].At) {
				t.Errorf("%s step %d: time goes backwards", sc.File, i+1)
			}
			if (st.Reply == "") != (st.Text == "") {
				t.Errorf("%s step %d: reply and text go together", sc.File, i+1)
			}
		}
	}
}
