package engine

import (
	"fmt"
	"slices"
)

// problems collects validation messages in the order they are found.
type problems []string

func (p *problems) add(format string, args ...any) {
	*p = append(*p, fmt.Sprintf(format, args...))
}

// validate checks t against the rules documented on Compile. bound maps every
// bound guard name to whether its function is non-nil. It returns every
// problem found, in a deterministic order; nil means the table is valid.
func validate(t Table, bound map[string]bool) []string {
	var p problems

	if t.Name == "" {
		p.add("Name is empty")
	}
	if len(t.States) == 0 && len(t.Triggers) == 0 && len(t.Rows) == 0 && len(t.Ignores) == 0 {
		p.add("table is empty: no states, triggers, rows or ignores")
	} else {
		if len(t.States) == 0 {
			p.add("no states declared")
		}
		if len(t.Triggers) == 0 {
			p.add("no triggers declared")
		}
		if len(t.Rows) == 0 {
			p.add("no rows")
		}
	}

	states := declare(&p, "state", "States", t.States)
	if states[Any] {
		p.add("reserved name %q (Any/Stay) in States", Any)
	}
	triggers := declare(&p, "trigger", "Triggers", t.Triggers)
	guards := declare(&p, "guard", "Guards", t.Guards)
	effects := declare(&p, "effect", "Effects", t.Effects)

	switch {
	case t.Initial == "":
		p.add("Initial is empty")
	case t.Initial == Any || !states[t.Initial]:
		p.add("unknown state %q in Initial", t.Initial)
	}

	used := make(map[string]bool) // guard names used by rows
	for i, r := range t.Rows {
		n := i + 1
		if r.From != Any && !states[r.From] {
			p.add("row %d: unknown state %q in From", n, r.From)
		}
		if !triggers[r.On] {
			p.add("row %d: unknown trigger %q", n, r.On)
		}
		if r.Guard != "" {
			used[r.Guard] = true
			if !guards[r.Guard] {
				p.add("row %d: unknown guard %q", n, r.Guard)
			}
		}
		if r.To != Stay && !states[r.To] {
			p.add("row %d: unknown state %q in To", n, r.To)
		}
		for j, e := range r.Effects {
			if !effects[e] {
				p.add("row %d: unknown effect %q", n, e)
			}
			if slices.Index(r.Effects, e) < j {
				p.add("row %d: effect %q listed twice", n, e)
			}
		}
	}

	for i, ig := range t.Ignores {
		n := i + 1
		switch {
		case ig.From == Any:
			p.add("ignore %d: From may not be Any (%q): list the states", n, Any)
		case !states[ig.From]:
			p.add("ignore %d: unknown state %q", n, ig.From)
		}
		if !triggers[ig.On] {
			p.add("ignore %d: unknown trigger %q", n, ig.On)
		}
	}

	conflicts(&p, t, states)

	// A state with nothing at all is almost always a typo or a forgotten row;
	// a final state says so by listing the triggers it ignores.
	hasAny := slices.ContainsFunc(t.Rows, func(r Row) bool { return r.From == Any })
	if !hasAny {
		for _, s := range dedup(t.States) {
			if s == Any || s == "" {
				continue
			}
			if !slices.ContainsFunc(t.Rows, func(r Row) bool { return r.From == s }) &&
				!slices.ContainsFunc(t.Ignores, func(ig Ignore) bool { return ig.From == s }) {
				p.add("state %q has no rows and no ignores (a final state must declare what it ignores)", s)
			}
		}
	}

	for _, g := range dedup(t.Guards) {
		if g == "" {
			continue
		}
		nonNil, isBound := bound[g]
		switch {
		case !isBound:
			p.add("guard %q is declared but not bound", g)
		case !nonNil:
			p.add("guard %q is bound to a nil function", g)
		}
		if !used[g] {
			if isBound {
				p.add("guard %q is bound but never used", g)
			} else {
				p.add("guard %q is declared but never used", g)
			}
		}
	}
	names := make([]string, 0, len(bound))
	for g := range bound {
		names = append(names, g)
	}
	slices.Sort(names)
	for _, g := range names {
		if !guards[g] {
			p.add("guard %q is bound but not declared", g)
		}
	}
	return p
}

// conflicts reports rows and ignores that compete for the same state and
// trigger once Any rows are expanded. Each pair is reported once, in table
// order. Rows whose From is undeclared are skipped: they are reported already.
func conflicts(p *problems, t Table, states map[State]bool) {
	known := func(s State) bool { return s == Any || states[s] }
	// overlap returns the state two From values share, or false.
	overlap := func(a, b State) (State, bool) {
		switch {
		case !known(a) || !known(b):
			return "", false
		case a == Any:
			return b, true // Any vs Any reports the state as "*"
		case b == Any || a == b:
			return a, true
		}
		return "", false
	}
	for i, a := range t.Rows {
		for j := i + 1; j < len(t.Rows); j++ {
			b := t.Rows[j]
			s, ok := overlap(a.From, b.From)
			if !ok || a.On != b.On {
				continue
			}
			switch {
			case a.Guard == "" && b.Guard == "":
				p.add("rows %d and %d: both handle trigger %q from state %q and neither has a guard", i+1, j+1, a.On, s)
			case a.Guard == "":
				p.add("rows %d and %d: both handle trigger %q from state %q and row %d has no guard", i+1, j+1, a.On, s, i+1)
			case b.Guard == "":
				p.add("rows %d and %d: both handle trigger %q from state %q and row %d has no guard", i+1, j+1, a.On, s, j+1)
			case a.Guard == b.Guard:
				p.add("rows %d and %d: both handle trigger %q from state %q with the same guard %q", i+1, j+1, a.On, s, a.Guard)
			}
		}
		for k, ig := range t.Ignores {
			if ig.From == Any {
				continue
			}
			if s, ok := overlap(a.From, ig.From); ok && a.On == ig.On {
				p.add("row %d and ignore %d: trigger %q from state %q is both handled and ignored", i+1, k+1, a.On, s)
			}
		}
	}
	for k, a := range t.Ignores {
		for l := k + 1; l < len(t.Ignores); l++ {
			if b := t.Ignores[l]; a == b {
				p.add("ignores %d and %d: trigger %q from state %q is ignored twice", k+1, l+1, a.On, a.From)
			}
		}
	}
}

// declare checks a list of declared names for empty and duplicate entries and
// returns the set of non-empty names.
func declare[T ~string](p *problems, kind, field string, names []T) map[T]bool {
	set := make(map[T]bool, len(names))
	dup := make(map[T]bool)
	for _, n := range names {
		switch {
		case n == "":
			p.add("empty %s name in %s", kind, field)
		case set[n] && !dup[n]:
			dup[n] = true
			p.add("duplicate %s %q in %s", kind, n, field)
		}
		if n != "" {
			set[n] = true
		}
	}
	return set
}

// dedup returns names without repeats, in first-seen order.
func dedup[T comparable](names []T) []T {
	seen := make(map[T]bool, len(names))
	out := make([]T, 0, len(names))
	for _, n := range names {
		if !seen[n] {
			seen[n] = true
			out = append(out, n)
		}
	}
	return out
}
