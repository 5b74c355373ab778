package engine_test

import (
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/wakeonchat/wakeonchat/engine"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/ instead of comparing with them")

func TestMermaidGolden(t *testing.T) {
	got := engine.Mermaid(turnstileTable())
	path := filepath.Join("testdata", "turnstile.mmd")
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatalf("writing golden file: %v", err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("reading golden file (run with -update to create it): %v", err)
	}
	if diff := cmp.Diff(string(want), got); diff != "" {
		t.Errorf("Mermaid(turnstile) differs from %s (-want +got):\n%s", path, diff)
	}
	if again := engine.Mermaid(turnstileTable()); again != got {
		t.Errorf("Mermaid is not deterministic: second call differs")
	}
}

func TestMermaid(t *testing.T) {
	tests := []struct {
		name string
		tab  engine.Table
		want string
	}{
		{
			name: "labels that would break the syntax",
			tab: engine.Table{
				Initial: "a",
				States:  []engine.State{"a", `b "c"`},
				Rows: []engine.Row{
					{From: "a", On: "go: now; #1", Guard: "x<y", To: `b "c"`, Effects: []string{"say:hi", "line\nbreak"}},
				},
			},
			want: "stateDiagram-v2\n" +
				"    state \"a\" as a\n" +
				"    state \"b #quot;c#quot;\" as b__c_\n" +
				"    [*] --> a\n" +
				"    a --> b__c_ : go#58; now#59; #35;1 [x#lt;y] / say#58;hi, line break\n",
		},
		{
			name: "ids: dashes, collisions, keywords, digits and Any",
			tab: engine.Table{
				Initial: "never-ready",
				States:  []engine.State{"never-ready", "never_ready", "end", "any", "9lives"},
				Rows: []engine.Row{
					{From: engine.Any, On: "reset", To: "never-ready"},
					{From: engine.Any, On: "poke", To: engine.Stay},
					{From: "end", On: "poke", To: engine.Stay, Effects: []string{"log"}},
					{From: "9lives", On: "die", Guard: "hasLives", To: "9lives"},
					{From: "any", On: "x", To: "never_ready"},
				},
				Ignores: []engine.Ignore{{From: "end", On: "reset"}},
			},
			want: "stateDiagram-v2\n" +
				"    state \"never-ready\" as never_ready\n" +
				"    state \"never_ready\" as never_ready_2\n" +
				"    state \"end\" as end_2\n" +
				"    state \"any\" as any_2\n" +
				"    state \"9lives\" as s_9lives\n" +
				"    state \"any state\" as any\n" +
				"    [*] --> never_ready\n" +
				"    any --> never_ready : reset\n" +
				"    any --> any : poke\n" +
				"    end_2 --> end_2 : poke / log\n" +
				"    s_9lives --> s_9lives : die [hasLives]\n" +
				"    any_2 --> never_ready_2 : x\n",
		},
		{
			name: "empty parts are omitted",
			tab: engine.Table{
				States: []engine.State{"a"},
				Rows:   []engine.Row{{From: "a", To: "a"}},
			},
			want: "stateDiagram-v2\n" +
				"    state \"a\" as a\n" +
				"    a --> a\n",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, engine.Mermaid(tt.tab)); diff != "" {
				t.Errorf("Mermaid mismatch (-want +got):\n%s", diff)
			}
		})
	}
}
