package engine

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/qmuntal/stateless"
)

// Guard decides whether a row may be taken. rec and ev are whatever the caller fires with.
//
// A guard must be a pure, cheap function of its arguments: stateless may call
// it more than once per Fire (twice for a Stay row), and every guard of the
// candidate rows runs, not only until one passes. Guards of rows that share a
// state and trigger must be exact complements (<= and >), because two guards
// that pass together make Fire fail.
type Guard[R, E any] func(rec R, ev E, now time.Time) bool

// Machine is a compiled Table. It holds no record state: every Fire reads the
// state from the record it is given and returns the new one. A Machine is
// immutable after Compile and safe for concurrent Fire calls on different
// records.
type Machine[R, E any] struct {
	table   Table
	stateOf func(R) State
	sm      *stateless.StateMachine

	// Boxed copies of every declared state and trigger, made once, so that
	// Fire does not allocate to turn a string into a stateless.State/Trigger.
	states   map[State]any
	triggers map[Trigger]any
	initial  any

	// rowsFor lists, per state and trigger, the indices into table.Rows of the
	// candidate rows after Any expansion, in table order.
	rowsFor map[stateTrigger][]int
}

type stateTrigger struct {
	state   State
	trigger Trigger
}

// cell is the per-Fire storage stateless reads and writes through the
// accessor and mutator. It lives in the context of one FireCtx call only.
type cell[R, E any] struct {
	rec   R
	ev    E
	now   time.Time
	state any // current state, boxed; the mutator writes here
	row   int // index of the row whose guard passed, -1 if none
	other int // index of a second row whose guard also passed, -1 if none
}

type cellKey struct{}

func cellFrom[R, E any](ctx context.Context) (*cell[R, E], bool) {
	c, ok := ctx.Value(cellKey{}).(*cell[R, E])
	return c, ok
}

// Compile validates t and builds one stateless machine with external storage.
// stateOf reads the state from the caller's record. guards binds every guard name.
//
// Compile returns a *TableError listing every problem it finds. A table is
// valid when:
//   - Name, Initial and every declared name are non-empty; no state,
//     trigger, guard or effect is declared twice; no state is named "*";
//   - Initial, every From and To (besides Any and Stay) and every Ignore
//     names a declared state; every On a declared trigger; every Guard a
//     declared guard; every effect a declared effect; Ignores do not use Any;
//   - after expanding Any rows to every state, no two rows share a state and
//     trigger unless both are guarded by different guards, no row shares a
//     state and trigger with an Ignore, and no Ignore is listed twice;
//   - every state has at least one row (Any rows count) or Ignore;
//   - every declared guard is bound to a non-nil function and used by a row,
//     and every bound name is declared.
//
// t is copied: changing it after Compile does not change the Machine.
func Compile[R, E any](t Table, stateOf func(R) State, guards map[string]Guard[R, E]) (*Machine[R, E], error) {
	t = t.clone()
	bound := make(map[string]bool, len(guards))
	for name, g := range guards {
		bound[name] = g != nil
	}
	probs := validate(t, bound)
	if stateOf == nil {
		probs = append(probs, "stateOf is nil")
	}
	if len(probs) > 0 {
		return nil, &TableError{Table: t.Name, Problems: probs}
	}

	m := &Machine[R, E]{
		table:    t,
		stateOf:  stateOf,
		states:   make(map[State]any, len(t.States)),
		triggers: make(map[Trigger]any, len(t.Triggers)),
		rowsFor:  make(map[stateTrigger][]int),
	}
	for _, s := range t.States {
		m.states[s] = s
	}
	for _, tr := range t.Triggers {
		m.triggers[tr] = tr
	}
	m.initial = m.states[t.Initial]
	for _, s := range t.States {
		for i, r := range t.Rows {
			if r.From == s || r.From == Any {
				k := stateTrigger{s, r.On}
				m.rowsFor[k] = append(m.rowsFor[k], i)
			}
		}
	}

	if err := m.configure(guards); err != nil {
		return nil, err
	}
	return m, nil
}

// configure builds the stateless machine: every state is configured before
// the machine is shared, since stateless writes its maps without locks.
func (m *Machine[R, E]) configure(guards map[string]Guard[R, E]) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("engine: table %q: configuring stateless: %v", m.table.Name, p)
		}
	}()
	sm := stateless.NewStateMachineWithExternalStorage(m.access, m.mutate, stateless.FiringImmediate)
	sm.OnUnhandledTrigger(m.unhandled)
	for _, s := range m.table.States {
		sc := sm.Configure(m.states[s])
		for i, r := range m.table.Rows {
			if r.From != s && r.From != Any {
				continue
			}
			on := m.triggers[r.On]
			g := m.guard(i, guards[r.Guard])
			switch r.To {
			case Stay:
				sc.InternalTransition(on, noAction, g)
			case s:
				sc.PermitReentry(on, g)
			default:
				sc.Permit(on, m.states[r.To], g)
			}
		}
		for _, ig := range m.table.Ignores {
			if ig.From == s {
				sc.Ignore(m.triggers[ig.On])
			}
		}
	}
	m.sm = sm
	return nil
}

// guard returns the stateless guard of row i: it runs g (nil for an unguarded
// row) on the Fire's cell and, when it passes, records i as the row taken.
// Without a cell (stateless calls guards from String, PermittedTriggers and
// CanFire with no arguments) it returns false and never panics.
func (m *Machine[R, E]) guard(i int, g Guard[R, E]) stateless.GuardFunc {
	return func(ctx context.Context, _ ...any) bool {
		c, ok := cellFrom[R, E](ctx)
		if !ok {
			return false
		}
		if g != nil && !g(c.rec, c.ev, c.now) {
			return false
		}
		if c.row >= 0 && c.row != i {
			c.other = i
		} else {
			c.row = i
		}
		return true
	}
}

func noAction(context.Context, ...any) error { return nil }

// access is the stateless state accessor. Outside Fire (ToGraph) it reports
// the table's initial state.
func (m *Machine[R, E]) access(ctx context.Context) (stateless.State, error) {
	if c, ok := cellFrom[R, E](ctx); ok {
		return c.state, nil
	}
	return m.initial, nil
}

// mutate is the stateless state mutator: it writes the cell, never the record.
func (m *Machine[R, E]) mutate(ctx context.Context, s stateless.State) error {
	c, ok := cellFrom[R, E](ctx)
	if !ok {
		return fmt.Errorf("engine: table %q: state change to %v outside Fire", m.table.Name, s)
	}
	c.state = s
	return nil
}

func (m *Machine[R, E]) unhandled(_ context.Context, state stateless.State, trigger stateless.Trigger, _ []string) error {
	// stateless names guards after their Go functions (func1, func2...);
	// report the table's guard names instead.
	s, _ := state.(State)
	on, _ := trigger.(Trigger)
	var unmet []string
	for _, i := range m.rowsFor[stateTrigger{s, on}] {
		if g := m.table.Rows[i].Guard; g != "" {
			unmet = append(unmet, g)
		}
	}
	return &UnhandledError{State: s, Trigger: on, UnmetGuards: unmet}
}

// Result is what Fire decided. The caller persists To and performs Effects.
type Result struct {
	From    State
	To      State // equals From for an internal (Stay) row
	Row     Row   // the row taken, as written in the table (From may be Any, To may be Stay)
	Effects []string
	Ignored bool // true when an Ignore entry matched: no row, no effects, To == From
}

// Fire runs trigger `on` for rec with event ev at time now. It never mutates
// rec: R is passed by value, and the new state is returned in Result.To. If R
// is a pointer (or holds slices or maps), guards see the caller's data and
// must treat it as read-only; pass values where you can.
//
// Fire returns a *UnhandledError when no row applies and no Ignore matches.
// It returns a plain error when the record's state or the trigger is not
// declared in the table, when two guarded rows both pass, or when a guard
// panics; Fire recovers every panic and never lets one escape. On error,
// Result has From and To set to the record's state and nothing else.
//
// Result.Effects and Result.Row.Effects are one fresh copy, shared by the
// two fields; changing them does not change the Machine.
//
// Fire is safe to call concurrently on different records. Calls for the same
// record must be serialised by the caller, each one seeing the state the
// previous one returned.
func (m *Machine[R, E]) Fire(rec R, on Trigger, ev E, now time.Time) (res Result, err error) {
	var from State
	c := &cell[R, E]{rec: rec, ev: ev, now: now, row: -1, other: -1}
	defer func() {
		if p := recover(); p != nil {
			res, err = Result{From: from, To: from}, m.panicError(c, from, on, p)
		}
	}()

	from = m.stateOf(rec)
	st, ok := m.states[from]
	if !ok {
		return Result{From: from, To: from}, fmt.Errorf("engine: table %q: record in unknown state %q", m.table.Name, from)
	}
	tr, ok := m.triggers[on]
	if !ok {
		return Result{From: from, To: from}, fmt.Errorf("engine: table %q: unknown trigger %q", m.table.Name, on)
	}
	c.state = st

	if err := m.sm.FireCtx(context.WithValue(context.Background(), cellKey{}, c), tr); err != nil {
		return Result{From: from, To: from}, err
	}
	if c.row < 0 {
		// No row's guard passed and stateless reported no error: only an
		// Ignore (which has no guard) can have matched.
		return Result{From: from, To: from, Ignored: true}, nil
	}
	to, _ := c.state.(State)
	row := m.table.Rows[c.row]
	row.Effects = slices.Clone(row.Effects)
	return Result{From: from, To: to, Row: row, Effects: row.Effects}, nil
}

func (m *Machine[R, E]) panicError(c *cell[R, E], from State, on Trigger, p any) error {
	if c.row >= 0 && c.other >= 0 {
		a, b := min(c.row, c.other), max(c.row, c.other)
		return fmt.Errorf("engine: table %q: rows %d and %d both pass their guards (%q, %q) for trigger %q from state %q",
			m.table.Name, a+1, b+1, m.table.Rows[a].Guard, m.table.Rows[b].Guard, on, from)
	}
	return fmt.Errorf("engine: table %q: trigger %q from state %q: panic: %v", m.table.Name, on, from, p)
}

// Table returns a copy of the table as compiled.
func (m *Machine[R, E]) Table() Table { return m.table.clone() }
