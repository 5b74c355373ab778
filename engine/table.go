package engine

import "slices"

// State names a state of a table. States are compared as strings.
type State string

// Trigger names something that happened to a record: an event kind.
type Trigger string

// Any, in Row.From, makes a row apply from every state. Stay, in Row.To, makes the
// transition internal: effects are returned, the state does not change.
const (
	Any  State = "*"
	Stay State = "*"
)

// Row is one transition: in state From, on trigger On, if Guard passes, go to
// To and return Effects.
type Row struct {
	From    State   // a declared state, or Any
	On      Trigger // a declared trigger
	Guard   string  // "" means unguarded
	To      State   // a declared state, or Stay
	Effects []string
}

// Ignore makes trigger On a no-op in state From: Fire returns a Result with
// Ignored set, no effects and no error.
type Ignore struct {
	From State
	On   Trigger
}

// Table is the whole description of a machine. It is plain data: build it as a
// literal, compile it with Compile.
type Table struct {
	Name     string
	Initial  State
	States   []State
	Triggers []Trigger
	Guards   []string // declared guard names
	Effects  []string // declared effect names (an effect in a row that is not declared is an error)
	Rows     []Row
	Ignores  []Ignore
}

// clone returns a deep copy of t, so that neither the caller nor a Machine can
// change the other's table through a shared slice.
func (t Table) clone() Table {
	c := t
	c.States = slices.Clone(t.States)
	c.Triggers = slices.Clone(t.Triggers)
	c.Guards = slices.Clone(t.Guards)
	c.Effects = slices.Clone(t.Effects)
	c.Ignores = slices.Clone(t.Ignores)
	c.Rows = slices.Clone(t.Rows)
	for i := range c.Rows {
		c.Rows[i].Effects = slices.Clone(t.Rows[i].Effects)
	}
	return c
}
