package engine_test

import (
	"testing"

	"github.com/wakeonchat/wakeonchat/engine"
)

// BenchmarkFire measures one Fire per kind of row. Measured: 4 allocs for a
// permit, reentry or Any row, 7 for a Stay row, 2 for an ignore.
//
// Where they come from: the per-Fire cell (1) and the context.WithValue that
// carries it (1); the copy of the row's effects returned in Result (1 when the
// row has effects); and, inside stateless, a []string it makes for unmet
// guard names every time it looks up the handler of a trigger whose
// behaviours have guards (1 per lookup; every engine row has a stateless
// guard, because that is how Fire learns which row passed). A Stay row costs
// 3 more because stateless looks the handler up a second time (1) and boxes a
// Transition into a second context.WithValue before running the internal
// action (2). A guard that fails before the passing one is found adds a copy
// of the unmet list (1). Ignores carry no guard, hence only the cell and
// context.
func BenchmarkFire(b *testing.B) {
	m := compileTurnstile(b)
	cases := []struct {
		name string
		rec  turnstile
		on   engine.Trigger
		ev   payment
	}{
		{"permit", rec(locked), coin, payment{Amount: 2}},
		{"permit-unguarded", rec(unlocked), push, payment{}},
		{"stay", rec(unlocked), coin, payment{Amount: 2}},
		{"reentry", rec(locked), push, payment{}},
		{"any", rec(unlocked), kick, payment{}},
		{"ignore", rec(outOfOrder), coin, payment{}},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := m.Fire(c.rec, c.on, c.ev, t0); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
