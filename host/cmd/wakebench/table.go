package main

import (
	"fmt"
	"strings"
)

// row is one line of the results table.
type row struct {
	Num     string // the measurement's number (1 to 5, as in docs/performance.md)
	Measure string // what was measured, and how much of it
	Result  string // the median of the runs
	Target  string // "—" when there is none
	Met     string // "yes", "no", or "—" when there is no target
}

// noTarget is the Target and Met of a row that only reports.
const noTarget = "—"

// verdict is a row's Met for a target that was or was not met.
func verdict(ok bool) string {
	if ok {
		return "yes"
	}
	return "no"
}

// renderTable renders the header line, a blank line and one Markdown table
// of rows, ending with a newline. A "|" inside a cell is escaped.
func renderTable(header string, rows []row) string {
	var b strings.Builder
	b.WriteString(header)
	b.WriteString("\n\n| # | measure | result (median) | target | met |\n|---|---|---|---|---|\n")
	cell := func(s string) string { return strings.ReplaceAll(s, "|", `\|`) }
	for _, r := range rows {
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s |\n",
			cell(r.Num), cell(r.Measure), cell(r.Result), cell(r.Target), cell(r.Met))
	}
	return b.String()
}
