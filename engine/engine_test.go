package engine_test

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/wakeonchat/wakeonchat/engine"
)

// The turnstile: pay to unlock, push through to lock again. Kicking it breaks
// it from any state; inspecting it is possible in any state and changes
// nothing. It exercises every kind of row: guarded choice, internal (Stay),
// explicit re-entry, Any, Any+Stay, and ignores.
const (
	locked     engine.State = "locked"
	unlocked   engine.State = "unlocked"
	outOfOrder engine.State = "out-of-order"

	coin    engine.Trigger = "coin"
	push    engine.Trigger = "push"
	kick    engine.Trigger = "kick"
	repair  engine.Trigger = "repair"
	inspect engine.Trigger = "inspect"
)

func turnstileTable() engine.Table {
	return engine.Table{
		Name:     "turnstile",
		Initial:  locked,
		States:   []engine.State{locked, unlocked, outOfOrder},
		Triggers: []engine.Trigger{coin, push, kick, repair, inspect},
		Guards:   []string{"paid", "underpaid", "inWarranty", "outOfWarranty"},
		Effects:  []string{"unlock", "lock", "refund", "thank", "alarm", "log", "bill"},
		Rows: []engine.Row{
			{From: locked, On: coin, Guard: "paid", To: unlocked, Effects: []string{"unlock"}},                   // 1
			{From: locked, On: coin, Guard: "underpaid", To: engine.Stay, Effects: []string{"refund"}},           // 2
			{From: unlocked, On: coin, To: engine.Stay, Effects: []string{"refund", "thank"}},                    // 3
			{From: unlocked, On: push, To: locked, Effects: []string{"lock"}},                                    // 4
			{From: locked, On: push, To: locked, Effects: []string{"alarm"}},                                     // 5
			{From: engine.Any, On: kick, To: outOfOrder, Effects: []string{"alarm", "log"}},                      // 6
			{From: outOfOrder, On: repair, Guard: "inWarranty", To: locked, Effects: []string{"log"}},            // 7
			{From: outOfOrder, On: repair, Guard: "outOfWarranty", To: locked, Effects: []string{"log", "bill"}}, // 8
			{From: engine.Any, On: inspect, To: engine.Stay, Effects: []string{"log"}},                           // 9
		},
		Ignores: []engine.Ignore{
			{From: outOfOrder, On: coin},
			{From: outOfOrder, On: push},
		},
	}
}

// turnstile is the caller's record. History is there to check that Fire does
// not touch what a record points to.
type turnstile struct {
	State         engine.State
	Fare          int
	WarrantyUntil time.Time
	History       []string
}

// payment is the event every trigger carries; only coin reads it.
type payment struct{ Amount int }

func stateOf(r turnstile) engine.State { return r.State }

func turnstileGuards() map[string]engine.Guard[turnstile, payment] {
	return map[string]engine.Guard[turnstile, payment]{
		"paid":          func(r turnstile, p payment, _ time.Time) bool { return p.Amount >= r.Fare },
		"underpaid":     func(r turnstile, p payment, _ time.Time) bool { return p.Amount > 0 && p.Amount < r.Fare },
		"inWarranty":    func(r turnstile, _ payment, now time.Time) bool { return now.Before(r.WarrantyUntil) },
		"outOfWarranty": func(r turnstile, _ payment, now time.Time) bool { return !now.Before(r.WarrantyUntil) },
	}
}

func compileTurnstile(t testing.TB) *engine.Machine[turnstile, payment] {
	t.Helper()
	m, err := engine.Compile(turnstileTable(), stateOf, turnstileGuards())
	if err != nil {
		t.Fatalf("Compile: %v", err)
	}
	return m
}

var (
	t0       = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	warranty = t0.Add(time.Hour)
)

func rec(s engine.State) turnstile {
	return turnstile{State: s, Fare: 2, WarrantyUntil: warranty, History: []string{"built"}}
}

func TestFire(t *testing.T) {
	m := compileTurnstile(t)
	rows := turnstileTable().Rows
	tests := []struct {
		name string
		rec  turnstile
		on   engine.Trigger
		ev   payment
		now  time.Time
		want engine.Result
	}{
		{
			name: "guarded choice: paid unlocks",
			rec:  rec(locked), on: coin, ev: payment{Amount: 2}, now: t0,
			want: engine.Result{From: locked, To: unlocked, Row: rows[0], Effects: []string{"unlock"}},
		},
		{
			name: "guarded choice: underpaid refunds and stays",
			rec:  rec(locked), on: coin, ev: payment{Amount: 1}, now: t0,
			want: engine.Result{From: locked, To: locked, Row: rows[1], Effects: []string{"refund"}},
		},
		{
			name: "unguarded stay",
			rec:  rec(unlocked), on: coin, ev: payment{Amount: 5}, now: t0,
			want: engine.Result{From: unlocked, To: unlocked, Row: rows[2], Effects: []string{"refund", "thank"}},
		},
		{
			name: "plain transition",
			rec:  rec(unlocked), on: push, now: t0,
			want: engine.Result{From: unlocked, To: locked, Row: rows[3], Effects: []string{"lock"}},
		},
		{
			name: "explicit reentry",
			rec:  rec(locked), on: push, now: t0,
			want: engine.Result{From: locked, To: locked, Row: rows[4], Effects: []string{"alarm"}},
		},
		{
			name: "any row from locked",
			rec:  rec(locked), on: kick, now: t0,
			want: engine.Result{From: locked, To: outOfOrder, Row: rows[5], Effects: []string{"alarm", "log"}},
		},
		{
			name: "any row into its own target is a reentry",
			rec:  rec(outOfOrder), on: kick, now: t0,
			want: engine.Result{From: outOfOrder, To: outOfOrder, Row: rows[5], Effects: []string{"alarm", "log"}},
		},
		{
			name: "guard reads now: in warranty",
			rec:  rec(outOfOrder), on: repair, now: warranty.Add(-time.Nanosecond),
			want: engine.Result{From: outOfOrder, To: locked, Row: rows[6], Effects: []string{"log"}},
		},
		{
			name: "guard reads now: warranty ends at its instant",
			rec:  rec(outOfOrder), on: repair, now: warranty,
			want: engine.Result{From: outOfOrder, To: locked, Row: rows[7], Effects: []string{"log", "bill"}},
		},
		{
			name: "any stay row",
			rec:  rec(unlocked), on: inspect, now: t0,
			want: engine.Result{From: unlocked, To: unlocked, Row: rows[8], Effects: []string{"log"}},
		},
		{
			name: "ignore",
			rec:  rec(outOfOrder), on: coin, ev: payment{Amount: 2}, now: t0,
			want: engine.Result{From: outOfOrder, To: outOfOrder, Ignored: true},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := m.Fire(tt.rec, tt.on, tt.ev, tt.now)
			if err != nil {
				t.Fatalf("Fire: %v", err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Fire result mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestFireUnhandled(t *testing.T) {
	m := compileTurnstile(t)
	tests := []struct {
		name    string
		rec     turnstile
		on      engine.Trigger
		ev      payment
		want    *engine.UnhandledError
		wantMsg string
	}{
		{
			name:    "no row for the trigger",
			rec:     rec(locked),
			on:      repair,
			want:    &engine.UnhandledError{State: locked, Trigger: repair},
			wantMsg: `engine: no transition for trigger "repair" from state "locked"`,
		},
		{
			name:    "every guard fails",
			rec:     rec(locked),
			on:      coin,
			ev:      payment{Amount: 0},
			want:    &engine.UnhandledError{State: locked, Trigger: coin, UnmetGuards: []string{"paid", "underpaid"}},
			wantMsg: `engine: no transition for trigger "coin" from state "locked": unmet guards: paid, underpaid`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := m.Fire(tt.rec, tt.on, tt.ev, t0)
			var got *engine.UnhandledError
			if !errors.As(err, &got) {
				t.Fatalf("Fire error = %v (%T), want *engine.UnhandledError", err, err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("UnhandledError mismatch (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantMsg, err.Error()); diff != "" {
				t.Errorf("Error() mismatch (-want +got):\n%s", diff)
			}
			wantRes := engine.Result{From: tt.rec.State, To: tt.rec.State}
			if diff := cmp.Diff(wantRes, res); diff != "" {
				t.Errorf("result on error mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// overlapping is a table whose two guards can pass together: a table bug that
// only shows at Fire time, and which stateless reports with a panic.
func overlapping(t *testing.T, bad engine.Guard[turnstile, payment]) *engine.Machine[turnstile, payment] {
	t.Helper()
	tab := engine.Table{
		Name:     "overlap",
		Initial:  locked,
		States:   []engine.State{locked, unlocked},
		Triggers: []engine.Trigger{coin},
		Guards:   []string{"a", "b"},
		Rows: []engine.Row{
			{From: locked, On: coin, Guard: "a", To: unlocked},
			{From: locked, On: coin, Guard: "b", To: engine.Stay},
			{From: unlocked, On: coin, To: locked},
		},
	}
	m, err := engine.Compile(tab, stateOf, map[string]engine.Guard[turnstile, payment]{
		"a": func(turnstile, payment, time.Time) bool { return true },
		"b": bad,
	})
	if err != nil {
		t.Fatalf("Compile: %v", err)
	}
	return m
}

func TestFireErrors(t *testing.T) {
	tests := []struct {
		name    string
		m       func(t *testing.T) *engine.Machine[turnstile, payment]
		rec     turnstile
		on      engine.Trigger
		wantMsg string
	}{
		{
			name:    "record in an undeclared state",
			m:       func(t *testing.T) *engine.Machine[turnstile, payment] { return compileTurnstile(t) },
			rec:     rec("melted"),
			on:      coin,
			wantMsg: `engine: table "turnstile": record in unknown state "melted"`,
		},
		{
			name:    "undeclared trigger",
			m:       func(t *testing.T) *engine.Machine[turnstile, payment] { return compileTurnstile(t) },
			rec:     rec(locked),
			on:      "jump",
			wantMsg: `engine: table "turnstile": unknown trigger "jump"`,
		},
		{
			name: "two guards pass",
			m: func(t *testing.T) *engine.Machine[turnstile, payment] {
				return overlapping(t, func(turnstile, payment, time.Time) bool { return true })
			},
			rec:     rec(locked),
			on:      coin,
			wantMsg: `engine: table "overlap": rows 1 and 2 both pass their guards ("a", "b") for trigger "coin" from state "locked"`,
		},
		{
			name: "guard panics",
			m: func(t *testing.T) *engine.Machine[turnstile, payment] {
				return overlapping(t, func(turnstile, payment, time.Time) bool { panic("boom") })
			},
			rec:     rec(locked),
			on:      coin,
			wantMsg: `engine: table "overlap": trigger "coin" from state "locked": panic: boom`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := tt.m(t)
			res, err := m.Fire(tt.rec, tt.on, payment{}, t0)
			if err == nil {
				t.Fatalf("Fire = %+v, nil error; want error %q", res, tt.wantMsg)
			}
			var unhandled *engine.UnhandledError
			if errors.As(err, &unhandled) {
				t.Errorf("Fire error is an *UnhandledError (%v); want a plain error", err)
			}
			if diff := cmp.Diff(tt.wantMsg, err.Error()); diff != "" {
				t.Errorf("error mismatch (-want +got):\n%s", diff)
			}
			wantRes := engine.Result{From: tt.rec.State, To: tt.rec.State}
			if diff := cmp.Diff(wantRes, res); diff != "" {
				t.Errorf("result on error mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestFireDoesNotMutateRecord(t *testing.T) {
	m := compileTurnstile(t)
	for _, on := range []engine.Trigger{coin, push, kick, repair, inspect} {
		for _, s := range []engine.State{locked, unlocked, outOfOrder} {
			r := rec(s)
			before := r
			before.History = append([]string(nil), r.History...)
			_, _ = m.Fire(r, on, payment{Amount: 2}, t0)
			if diff := cmp.Diff(before, r); diff != "" {
				t.Errorf("Fire(%s, %s) changed the record (-before +after):\n%s", s, on, diff)
			}
		}
	}
}

// TestResultEffectsAreCopies checks that a caller that scribbles on a Result
// cannot change what the next Fire returns.
func TestResultEffectsAreCopies(t *testing.T) {
	m := compileTurnstile(t)
	res, err := m.Fire(rec(locked), kick, payment{}, t0)
	if err != nil {
		t.Fatalf("Fire: %v", err)
	}
	res.Effects[0] = "scribbled"
	res, err = m.Fire(rec(locked), kick, payment{}, t0)
	if err != nil {
		t.Fatalf("Fire: %v", err)
	}
	if diff := cmp.Diff([]string{"alarm", "log"}, res.Effects); diff != "" {
		t.Errorf("Effects after scribbling on an earlier Result (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(turnstileTable(), m.Table()); diff != "" {
		t.Errorf("Table after scribbling on a Result (-want +got):\n%s", diff)
	}
}

func TestTableIsCopied(t *testing.T) {
	in := turnstileTable()
	m, err := engine.Compile(in, stateOf, turnstileGuards())
	if err != nil {
		t.Fatalf("Compile: %v", err)
	}
	in.States[0] = "scribbled"
	in.Rows[0].Effects[0] = "scribbled"
	out := m.Table()
	out.Rows[1].Effects[0] = "scribbled"
	out.Triggers[0] = "scribbled"
	if diff := cmp.Diff(turnstileTable(), m.Table()); diff != "" {
		t.Errorf("Table() after changing Compile's input and an earlier Table() (-want +got):\n%s", diff)
	}
	res, err := m.Fire(rec(locked), coin, payment{Amount: 2}, t0)
	if err != nil {
		t.Fatalf("Fire: %v", err)
	}
	if diff := cmp.Diff([]string{"unlock"}, res.Effects); diff != "" {
		t.Errorf("Effects after changing Compile's input (-want +got):\n%s", diff)
	}
}

// TestFireConcurrent fires from many goroutines through one Machine, each on
// its own record, and checks every result. Run it with -race.
func TestFireConcurrent(t *testing.T) {
	m := compileTurnstile(t)
	rows := turnstileTable().Rows
	const goroutines, fires = 8, 1000

	type step struct {
		on   engine.Trigger
		ev   payment
		want func(g int) engine.Result
	}
	// One lap round the turnstile; even goroutines are in warranty.
	lap := []step{
		{coin, payment{Amount: 2}, func(int) engine.Result {
			return engine.Result{From: locked, To: unlocked, Row: rows[0], Effects: []string{"unlock"}}
		}},
		{coin, payment{Amount: 9}, func(int) engine.Result {
			return engine.Result{From: unlocked, To: unlocked, Row: rows[2], Effects: []string{"refund", "thank"}}
		}},
		{push, payment{}, func(int) engine.Result {
			return engine.Result{From: unlocked, To: locked, Row: rows[3], Effects: []string{"lock"}}
		}},
		{coin, payment{Amount: 1}, func(int) engine.Result {
			return engine.Result{From: locked, To: locked, Row: rows[1], Effects: []string{"refund"}}
		}},
		{kick, payment{}, func(int) engine.Result {
			return engine.Result{From: locked, To: outOfOrder, Row: rows[5], Effects: []string{"alarm", "log"}}
		}},
		{push, payment{}, func(int) engine.Result {
			return engine.Result{From: outOfOrder, To: outOfOrder, Ignored: true}
		}},
		{repair, payment{}, func(g int) engine.Result {
			if g%2 == 0 {
				return engine.Result{From: outOfOrder, To: locked, Row: rows[6], Effects: []string{"log"}}
			}
			return engine.Result{From: outOfOrder, To: locked, Row: rows[7], Effects: []string{"log", "bill"}}
		}},
	}

	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			r := rec(locked)
			if g%2 == 1 {
				r.WarrantyUntil = t0.Add(-time.Hour)
			}
			for i := range fires {
				s := lap[i%len(lap)]
				got, err := m.Fire(r, s.on, s.ev, t0)
				if err != nil {
					t.Errorf("goroutine %d fire %d: %v", g, i, err)
					return
				}
				if diff := cmp.Diff(s.want(g), got); diff != "" {
					t.Errorf("goroutine %d fire %d (-want +got):\n%s", g, i, diff)
					return
				}
				r.State = got.To // the caller's duty: persist the new state
			}
		})
	}
	wg.Wait()
}
