package engine_test

import (
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/wakeonchat/wakeonchat/engine"
)

type door struct{ State engine.State }

type key struct{ Fits bool }

func doorState(d door) engine.State { return d.State }

func hasKey(_ door, k key, _ time.Time) bool { return k.Fits }

// doorTable is valid; each case of TestCompileProblems breaks it one way.
func doorTable() engine.Table {
	return engine.Table{
		Name:     "door",
		Initial:  "closed",
		States:   []engine.State{"closed", "open", "locked"},
		Triggers: []engine.Trigger{"open", "close", "lock", "unlock"},
		Guards:   []string{"hasKey"},
		Effects:  []string{"beep"},
		Rows: []engine.Row{
			{From: "closed", On: "open", To: "open"},                             // 1
			{From: "open", On: "close", To: "closed", Effects: []string{"beep"}}, // 2
			{From: "closed", On: "lock", Guard: "hasKey", To: "locked"},          // 3
			{From: "locked", On: "unlock", Guard: "hasKey", To: "closed"},        // 4
		},
	}
}

func doorGuards() map[string]engine.Guard[door, key] {
	return map[string]engine.Guard[door, key]{"hasKey": hasKey}
}

func TestCompileProblems(t *testing.T) {
	tests := []struct {
		name    string
		edit    func(*engine.Table)
		guards  func(map[string]engine.Guard[door, key])
		noState bool // pass a nil stateOf
		want    []string
	}{
		{
			name: "valid",
			edit: func(*engine.Table) {},
			want: nil,
		},
		{
			name:   "empty table",
			edit:   func(t *engine.Table) { *t = engine.Table{} },
			guards: func(g map[string]engine.Guard[door, key]) { delete(g, "hasKey") },
			want: []string{
				"Name is empty",
				"table is empty: no states, triggers, rows or ignores",
				"Initial is empty",
			},
		},
		{
			name: "no rows",
			edit: func(t *engine.Table) {
				t.Rows = nil
				t.Guards = nil
				for _, s := range t.States {
					t.Ignores = append(t.Ignores, engine.Ignore{From: s, On: "open"})
				}
			},
			guards: func(g map[string]engine.Guard[door, key]) { delete(g, "hasKey") },
			want:   []string{"no rows"},
		},
		{
			name: "empty Initial",
			edit: func(t *engine.Table) { t.Initial = "" },
			want: []string{"Initial is empty"},
		},
		{
			name: "unknown Initial",
			edit: func(t *engine.Table) { t.Initial = "ajar" },
			want: []string{`unknown state "ajar" in Initial`},
		},
		{
			name: "unknown state in From",
			edit: func(t *engine.Table) { t.Rows[0].From = "closd" },
			want: []string{
				`row 1: unknown state "closd" in From`,
			},
		},
		{
			name: "unknown state in To",
			edit: func(t *engine.Table) { t.Rows[1].To = "shut" },
			want: []string{`row 2: unknown state "shut" in To`},
		},
		{
			name: "unknown trigger",
			edit: func(t *engine.Table) { t.Rows[0].On = "opne" },
			want: []string{`row 1: unknown trigger "opne"`},
		},
		{
			name: "unknown guard",
			edit: func(t *engine.Table) { t.Rows[3].Guard = "hasCard" },
			want: []string{`row 4: unknown guard "hasCard"`},
		},
		{
			name: "unknown effect",
			edit: func(t *engine.Table) { t.Rows[1].Effects = []string{"beep", "flash"} },
			want: []string{`row 2: unknown effect "flash"`},
		},
		{
			name: "effect listed twice in a row",
			edit: func(t *engine.Table) { t.Rows[1].Effects = []string{"beep", "beep"} },
			want: []string{`row 2: effect "beep" listed twice`},
		},
		{
			name: "unknown state and trigger in an ignore",
			edit: func(t *engine.Table) { t.Ignores = []engine.Ignore{{From: "ajar", On: "slam"}} },
			want: []string{`ignore 1: unknown state "ajar"`, `ignore 1: unknown trigger "slam"`},
		},
		{
			name: "Any in an ignore",
			edit: func(t *engine.Table) { t.Ignores = []engine.Ignore{{From: engine.Any, On: "lock"}} },
			want: []string{`ignore 1: From may not be Any ("*"): list the states`},
		},
		{
			name: "duplicate declarations",
			edit: func(t *engine.Table) {
				t.States = append(t.States, "open", "open")
				t.Triggers = append(t.Triggers, "lock")
				t.Guards = append(t.Guards, "hasKey")
				t.Effects = append(t.Effects, "beep")
			},
			want: []string{
				`duplicate state "open" in States`,
				`duplicate trigger "lock" in Triggers`,
				`duplicate guard "hasKey" in Guards`,
				`duplicate effect "beep" in Effects`,
			},
		},
		{
			name: "empty and reserved names",
			edit: func(t *engine.Table) {
				t.States = append(t.States, "", engine.Any)
				t.Triggers = append(t.Triggers, "")
			},
			want: []string{
				`empty state name in States`,
				`reserved name "*" (Any/Stay) in States`,
				`empty trigger name in Triggers`,
			},
		},
		{
			name: "state with nothing at all",
			edit: func(t *engine.Table) { t.States = append(t.States, "bricked") },
			want: []string{`state "bricked" has no rows and no ignores (a final state must declare what it ignores)`},
		},
		{
			name: "a final state declared with ignores is fine",
			edit: func(t *engine.Table) {
				t.States = append(t.States, "bricked")
				t.Ignores = append(t.Ignores, engine.Ignore{From: "bricked", On: "open"})
			},
			want: nil,
		},
		{
			name: "an Any row gives every state a row",
			edit: func(t *engine.Table) {
				t.States = append(t.States, "bricked")
				t.Triggers = append(t.Triggers, "kick")
				t.Rows = append(t.Rows, engine.Row{From: engine.Any, On: "kick", To: "bricked"})
			},
			want: nil,
		},
		{
			name: "two rows for one state and trigger, one unguarded",
			edit: func(t *engine.Table) {
				t.Rows = append(t.Rows, engine.Row{From: "closed", On: "lock", To: "open"})
			},
			want: []string{`rows 3 and 5: both handle trigger "lock" from state "closed" and row 5 has no guard`},
		},
		{
			name: "two unguarded rows for one state and trigger",
			edit: func(t *engine.Table) {
				t.Rows = append(t.Rows, engine.Row{From: "closed", On: "open", To: engine.Stay})
			},
			want: []string{`rows 1 and 5: both handle trigger "open" from state "closed" and neither has a guard`},
		},
		{
			name: "an Any row collides after expansion",
			edit: func(t *engine.Table) {
				t.Rows = append(t.Rows, engine.Row{From: engine.Any, On: "close", To: engine.Stay})
			},
			want: []string{`rows 2 and 5: both handle trigger "close" from state "open" and neither has a guard`},
		},
		{
			name: "two Any rows collide in every state, reported once",
			edit: func(t *engine.Table) {
				t.Triggers = append(t.Triggers, "kick")
				t.Rows = append(t.Rows,
					engine.Row{From: engine.Any, On: "kick", To: engine.Stay},
					engine.Row{From: engine.Any, On: "kick", Guard: "hasKey", To: "open"})
			},
			want: []string{`rows 5 and 6: both handle trigger "kick" from state "*" and row 5 has no guard`},
		},
		{
			name: "the same guard twice",
			edit: func(t *engine.Table) {
				t.Rows = append(t.Rows, engine.Row{From: "closed", On: "lock", Guard: "hasKey", To: engine.Stay})
			},
			want: []string{`rows 3 and 5: both handle trigger "lock" from state "closed" with the same guard "hasKey"`},
		},
		{
			name: "different guards may share a state and trigger",
			edit: func(t *engine.Table) {
				t.Guards = append(t.Guards, "noKey")
				t.Rows = append(t.Rows, engine.Row{From: "closed", On: "lock", Guard: "noKey", To: engine.Stay})
			},
			guards: func(g map[string]engine.Guard[door, key]) {
				g["noKey"] = func(d door, k key, now time.Time) bool { return !hasKey(d, k, now) }
			},
			want: nil,
		},
		{
			name: "an ignore and a row",
			edit: func(t *engine.Table) {
				t.Ignores = []engine.Ignore{{From: "open", On: "open"}, {From: "open", On: "close"}}
			},
			want: []string{`row 2 and ignore 2: trigger "close" from state "open" is both handled and ignored`},
		},
		{
			name: "an ignore and an Any row",
			edit: func(t *engine.Table) {
				t.Triggers = append(t.Triggers, "kick")
				t.Rows = append(t.Rows, engine.Row{From: engine.Any, On: "kick", To: engine.Stay})
				t.Ignores = []engine.Ignore{{From: "locked", On: "kick"}}
			},
			want: []string{`row 5 and ignore 1: trigger "kick" from state "locked" is both handled and ignored`},
		},
		{
			name: "the same ignore twice",
			edit: func(t *engine.Table) {
				t.Ignores = []engine.Ignore{{From: "open", On: "open"}, {From: "open", On: "open"}}
			},
			want: []string{`ignores 1 and 2: trigger "open" from state "open" is ignored twice`},
		},
		{
			name:   "declared guard not bound",
			edit:   func(*engine.Table) {},
			guards: func(g map[string]engine.Guard[door, key]) { delete(g, "hasKey") },
			want:   []string{`guard "hasKey" is declared but not bound`},
		},
		{
			name:   "guard bound to nil",
			edit:   func(*engine.Table) {},
			guards: func(g map[string]engine.Guard[door, key]) { g["hasKey"] = nil },
			want:   []string{`guard "hasKey" is bound to a nil function`},
		},
		{
			name:   "bound guard not declared",
			edit:   func(*engine.Table) {},
			guards: func(g map[string]engine.Guard[door, key]) { g["isAdmin"] = hasKey; g["alwaysOpen"] = hasKey },
			want: []string{
				`guard "alwaysOpen" is bound but not declared`,
				`guard "isAdmin" is bound but not declared`,
			},
		},
		{
			name:   "bound guard never used",
			edit:   func(t *engine.Table) { t.Guards = append(t.Guards, "isAdmin") },
			guards: func(g map[string]engine.Guard[door, key]) { g["isAdmin"] = hasKey },
			want:   []string{`guard "isAdmin" is bound but never used`},
		},
		{
			name: "declared guard neither bound nor used",
			edit: func(t *engine.Table) { t.Guards = append(t.Guards, "isAdmin") },
			want: []string{
				`guard "isAdmin" is declared but not bound`,
				`guard "isAdmin" is declared but never used`,
			},
		},
		{
			name:    "nil stateOf",
			edit:    func(*engine.Table) {},
			noState: true,
			want:    []string{"stateOf is nil"},
		},
		{
			name: "every problem at once, in a fixed order",
			edit: func(t *engine.Table) {
				t.Name = ""
				t.Initial = "ajar"
				t.States = append(t.States, "open", "bricked")
				t.Rows[0].To = "wide-open"
				t.Rows[2].Guard = "hasCard"
				t.Rows = append(t.Rows, engine.Row{From: "open", On: "close", To: "locked"})
				t.Ignores = []engine.Ignore{{From: "closed", On: "open"}}
			},
			guards: func(g map[string]engine.Guard[door, key]) { g["hasCard"] = hasKey },
			want: []string{
				"Name is empty",
				`duplicate state "open" in States`,
				`unknown state "ajar" in Initial`,
				`row 1: unknown state "wide-open" in To`,
				`row 3: unknown guard "hasCard"`,
				`row 1 and ignore 1: trigger "open" from state "closed" is both handled and ignored`,
				`rows 2 and 5: both handle trigger "close" from state "open" and neither has a guard`,
				`state "bricked" has no rows and no ignores (a final state must declare what it ignores)`,
				`guard "hasCard" is bound but not declared`,
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tab := doorTable()
			tt.edit(&tab)
			guards := doorGuards()
			if tt.guards != nil {
				tt.guards(guards)
			}
			stateOf := doorState
			if tt.noState {
				stateOf = nil
			}
			m, err := engine.Compile(tab, stateOf, guards)
			if tt.want == nil {
				if err != nil {
					t.Fatalf("Compile: %v", err)
				}
				if m == nil {
					t.Fatal("Compile returned a nil Machine and no error")
				}
				return
			}
			var te *engine.TableError
			if !errors.As(err, &te) {
				t.Fatalf("Compile error = %v (%T), want *engine.TableError", err, err)
			}
			if m != nil {
				t.Errorf("Compile returned a Machine with an error")
			}
			if diff := cmp.Diff(tt.want, te.Problems); diff != "" {
				t.Errorf("problems mismatch (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tab.Name, te.Table); diff != "" {
				t.Errorf("TableError.Table mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestTableErrorMessage(t *testing.T) {
	tab := doorTable()
	tab.Initial = ""
	tab.Rows[0].On = "opne"
	_, err := engine.Compile(tab, doorState, doorGuards())
	want := "engine: table \"door\" is invalid (2 problems):\n" +
		"\tInitial is empty\n" +
		"\trow 1: unknown trigger \"opne\""
	if err == nil {
		t.Fatalf("Compile: nil error, want %q", want)
	}
	if diff := cmp.Diff(want, err.Error()); diff != "" {
		t.Errorf("Error() mismatch (-want +got):\n%s", diff)
	}
}
