package engine

import (
	"fmt"
	"strings"
)

// anyID is the Mermaid id of the pseudo-state Any rows are drawn from.
const anyID = "any"

// Mermaid renders a table as a Mermaid stateDiagram-v2 (pure function of the table; deterministic).
//
// Every declared state gets a line `state "name" as id`, where id is the name
// with every character other than a letter, digit or '_' replaced by '_' (made
// unique if two names collide); then `[*] --> initial`; then one edge per row,
// in table order: `from --> to : on [guard] / effect1, effect2`. An Any row is
// drawn from a pseudo-state "any state" (id any), a Stay row as a loop. Ignores
// are not drawn. Characters that would end a label early (: ; # " < > and line
// breaks) are written as Mermaid entity codes. Mermaid does not validate: an
// invalid table renders as well as it can.
func Mermaid(t Table) string {
	ids := newMermaidIDs()
	var b strings.Builder
	b.WriteString("stateDiagram-v2\n")
	for _, s := range dedup(t.States) {
		fmt.Fprintf(&b, "    state \"%s\" as %s\n", mermaidText(string(s)), ids.of(s))
	}
	for _, r := range t.Rows {
		if r.From == Any {
			fmt.Fprintf(&b, "    state \"any state\" as %s\n", anyID)
			break
		}
	}
	if t.Initial != "" {
		fmt.Fprintf(&b, "    [*] --> %s\n", ids.of(t.Initial))
	}
	for _, r := range t.Rows {
		from := anyID
		if r.From != Any {
			from = ids.of(r.From)
		}
		to := from
		if r.To != Stay {
			to = ids.of(r.To)
		}
		var label []string
		if r.On != "" {
			label = append(label, string(r.On))
		}
		if r.Guard != "" {
			label = append(label, "["+r.Guard+"]")
		}
		if len(r.Effects) > 0 {
			label = append(label, "/ "+strings.Join(r.Effects, ", "))
		}
		fmt.Fprintf(&b, "    %s --> %s", from, to)
		if len(label) > 0 {
			b.WriteString(" : ")
			b.WriteString(mermaidText(strings.Join(label, " ")))
		}
		b.WriteString("\n")
	}
	return b.String()
}

// mermaidText makes s safe inside a state description or transition label.
var mermaidText = strings.NewReplacer(
	"#", "#35;",
	":", "#58;",
	";", "#59;",
	`"`, "#quot;",
	"<", "#lt;",
	">", "#gt;",
	"\r\n", " ",
	"\n", " ",
	"\r", " ",
).Replace

// mermaidIDs hands out a unique Mermaid id per state name.
type mermaidIDs struct {
	byState map[State]string
	taken   map[string]bool
}

func newMermaidIDs() *mermaidIDs {
	taken := map[string]bool{anyID: true}
	// Words the stateDiagram grammar reads as keywords.
	for _, k := range []string{"state", "as", "note", "end", "direction", "class", "classDef", "style", "click", "default"} {
		taken[k] = true
	}
	return &mermaidIDs{byState: make(map[State]string), taken: taken}
}

func (m *mermaidIDs) of(s State) string {
	if id, ok := m.byState[s]; ok {
		return id
	}
	var b strings.Builder
	for _, r := range string(s) {
		if r == '_' || 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	base := b.String()
	if base == "" || base[0] >= '0' && base[0] <= '9' {
		base = "s_" + base
	}
	id := base
	for n := 2; m.taken[id]; n++ {
		id = fmt.Sprintf("%s_%d", base, n)
	}
	m.taken[id] = true
	m.byState[s] = id
	return id
}
