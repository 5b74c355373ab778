package machines

import (
	"slices"
	"sync"

	"github.com/wakeonchat/wakeonchat/engine"
	"github.com/wakeonchat/wakeonchat/specs"
)

// StateFacts is everything the host reads of a state: its [[state]] in
// specs/pod-lifecycle.toml. Nothing outside the spec re-encodes a fact; a
// consumer (the doors, the metrics, the status page, the watch) asks here.
type StateFacts = specs.State

// facts is a table's states by name, and their order.
type facts struct {
	byName map[engine.State]StateFacts
	order  []StateFacts
}

func newFacts(states []StateFacts) facts {
	f := facts{byName: make(map[engine.State]StateFacts, len(states)), order: slices.Clone(states)}
	for _, s := range states {
		f.byName[s.Name] = s
	}
	return f
}

// of is s's facts; a state the table does not declare has none (the zero
// value: not in progress, not holdable, no outcome). An empty state is the
// initial one a record without a state is in.
func (f facts) of(s engine.State) StateFacts {
	if s == "" {
		s = Asleep
	}
	return f.byName[s]
}

// inGroup lists the states of group g, in the table's order.
func (f facts) inGroup(g specs.Group) []engine.State {
	var out []engine.State
	for _, s := range f.order {
		if s.Group == g {
			out = append(out, s.Name)
		}
	}
	return out
}

// embedded is the facts of the embedded table, the one the host runs.
var embedded = sync.OnceValue(func() facts {
	states, err := specs.PodStates()
	if err != nil {
		panic(err) // embedded at build time; TestPodLifecycleParses parses it
	}
	return newFacts(states)
})

// Facts is state s's facts in the embedded table.
func Facts(s engine.State) StateFacts { return embedded().of(s) }

// InProgress reports whether s is a state of a wake whose outcome is not
// known yet: what a watch follows.
func InProgress(s engine.State) bool { return Facts(s).InProgress }

// Holdable reports whether a request held while the pod is in s becomes
// ready by waiting.
func Holdable(s engine.State) bool { return Facts(s).Holdable }

// Outcomes lists the outcome names a wake's record can name
// (Record.Outcome), each once, in the table's order.
func Outcomes() []string {
	var out []string
	for _, s := range embedded().order {
		if s.Outcome != "" && !slices.Contains(out, s.Outcome) {
			out = append(out, s.Outcome)
		}
	}
	return out
}
