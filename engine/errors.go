package engine

import (
	"fmt"
	"strings"
)

// UnhandledError is returned by Fire when the record's state has no row for
// the trigger whose guard passes, and no Ignore for it. Callers that drop stale
// or out-of-order events branch on it with errors.As.
type UnhandledError struct {
	State   State
	Trigger Trigger
	// UnmetGuards names, in table order, the guards of the rows that exist for
	// this state and trigger but all failed. It is nil when there is no such row.
	UnmetGuards []string
}

func (e *UnhandledError) Error() string {
	if len(e.UnmetGuards) == 0 {
		return fmt.Sprintf("engine: no transition for trigger %q from state %q", e.Trigger, e.State)
	}
	return fmt.Sprintf("engine: no transition for trigger %q from state %q: unmet guards: %s",
		e.Trigger, e.State, strings.Join(e.UnmetGuards, ", "))
}

// TableError is returned by Compile when a table (or the guards bound to it) is
// invalid. Problems lists every problem found, one per entry, in a fixed order:
// declarations, Initial, rows, ignores, conflicts, states, guard bindings.
type TableError struct {
	Table    string
	Problems []string
}

func (e *TableError) Error() string {
	var b strings.Builder
	noun := "problems"
	if len(e.Problems) == 1 {
		noun = "problem"
	}
	fmt.Fprintf(&b, "engine: table %q is invalid (%d %s):", e.Table, len(e.Problems), noun)
	for _, p := range e.Problems {
		b.WriteString("\n\t")
		b.WriteString(p)
	}
	return b.String()
}
