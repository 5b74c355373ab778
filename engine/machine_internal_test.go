package engine

import (
	"context"
	"strings"
	"testing"
	"time"
)

// stateless runs guards with no arguments and a bare context from String,
// PermittedTriggers and CanFire. The engine's guards must then return false,
// not panic, and the accessor must report the initial state.
func TestGuardsWithoutCell(t *testing.T) {
	called := false
	tab := Table{
		Name:     "lamp",
		Initial:  "off",
		States:   []State{"off", "on"},
		Triggers: []Trigger{"flip"},
		Guards:   []string{"powered"},
		Rows: []Row{
			{From: "off", On: "flip", Guard: "powered", To: "on"},
			{From: "on", On: "flip", To: "off"},
		},
	}
	m, err := Compile(tab, func(s State) State { return s }, map[string]Guard[State, struct{}]{
		"powered": func(State, struct{}, time.Time) bool { called = true; return true },
	})
	if err != nil {
		t.Fatalf("Compile: %v", err)
	}
	if got, want := m.sm.String(), "StateMachine {{ State = off, PermittedTriggers = [] }}"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
	ok, err := m.sm.CanFire(Trigger("flip"))
	if err != nil || ok {
		t.Errorf("CanFire(flip) = %v, %v; want false, nil", ok, err)
	}
	if called {
		t.Error("the bound guard ran without a Fire in progress")
	}
	if err := m.sm.FireCtx(context.Background(), Trigger("flip")); err == nil || !strings.Contains(err.Error(), `no transition`) {
		t.Errorf("FireCtx without a cell = %v; want an unhandled error", err)
	}
	if got := m.sm.ToGraph(); !strings.Contains(got, "init -> off") {
		t.Errorf("DOT has no init arrow to the initial state:\n%s", got)
	}
}
