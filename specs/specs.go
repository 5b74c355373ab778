// Package specs holds wake-on-chat's declarative behaviour: the pod lifecycle
// transition table (pod-lifecycle.toml) and the scenario timelines
// (scenarios/*.toml) that tests replay and docs/state-diagram.md shows.
//
// The files are embedded, so the table the binary runs is the table the
// diagram documents. This package only parses; it does not run a machine and
// does no I/O beyond reading its embedded files.
package specs

import (
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"time"

	"github.com/BurntSushi/toml"

	"github.com/wakeonchat/wakeonchat/engine"
)

//go:embed pod-lifecycle.toml scenarios/*.toml
var files embed.FS

// PodLifecycleSource is the embedded pod-lifecycle.toml, verbatim.
func PodLifecycleSource() []byte {
	b, err := files.ReadFile("pod-lifecycle.toml")
	if err != nil {
		panic(err) // embedded at build time
	}
	return b
}

type tableFile struct {
	Name     string   `toml:"name"`
	Initial  string   `toml:"initial"`
	States   []State  `toml:"state"`
	Triggers []string `toml:"triggers"`
	Guards   []string `toml:"guards"`
	Effects  []string `toml:"effects"`
	Rows     []struct {
		From    names    `toml:"from"`
		On      string   `toml:"on"`
		Guard   string   `toml:"guard"`
		To      string   `toml:"to"`
		Effects []string `toml:"effects"`
	} `toml:"row"`
	Ignores []struct {
		From names `toml:"from"`
		On   names `toml:"on"`
	} `toml:"ignore"`
}

// names is a name or a list of names: `from = "waking"` or
// `from = ["waking", "loading"]`.
type names []string

func (n *names) UnmarshalTOML(v any) error {
	switch v := v.(type) {
	case string:
		*n = names{v}
		return nil
	case []any:
		out := make(names, 0, len(v))
		for _, e := range v {
			s, ok := e.(string)
			if !ok {
				return fmt.Errorf("want a name or a list of names, got %T in the list", e)
			}
			out = append(out, s)
		}
		if len(out) == 0 {
			return fmt.Errorf("empty list of names")
		}
		*n = out
		return nil
	default:
		return fmt.Errorf("want a name or a list of names, got %T", v)
	}
}

// State is one [[state]] of the table: a state and every fact the host
// reads of it. pod-lifecycle.toml's header says what each fact means.
type State struct {
	Name       engine.State `toml:"name"`
	Means      string       `toml:"means"`
	Group      Group        `toml:"group"`
	InProgress bool         `toml:"in_progress"`
	Holdable   bool         `toml:"holdable"`
	Outcome    string       `toml:"outcome"`
	Tone       string       `toml:"tone"`
}

// Group is where the conductor last said the pod is, in a state.
type Group string

// The groups.
const (
	Down   Group = "down"
	Up     Group = "up"
	Either Group = "either" // down or up: the conductor's view says which
)

// Lifecycle is a parsed table: the transitions and the facts of its states,
// in the order declared.
type Lifecycle struct {
	Table  engine.Table
	States []State
}

// PodLifecycle parses the embedded pod lifecycle table.
func PodLifecycle() (engine.Table, error) {
	l, err := ParseLifecycle(PodLifecycleSource())
	return l.Table, err
}

// PodStates parses the facts of the embedded table's states.
func PodStates() ([]State, error) {
	l, err := ParseLifecycle(PodLifecycleSource())
	return l.States, err
}

var tones = []string{"ok", "busy", "idle", "bad"}

// checkState reports what is wrong with a state's facts.
func checkState(s State) error {
	switch {
	case s.Name == "":
		return errors.New("a state has no name")
	case s.Group != Down && s.Group != Up && s.Group != Either:
		return fmt.Errorf("state %s: group %q, want down, up or either", s.Name, s.Group)
	case s.Holdable && !s.InProgress:
		return fmt.Errorf("state %s: holdable needs in_progress (only a wake in progress becomes ready by waiting)", s.Name)
	case s.InProgress && s.Outcome != "":
		return fmt.Errorf("state %s: a wake in progress has no outcome yet", s.Name)
	case !slices.Contains(tones, s.Tone):
		return fmt.Errorf("state %s: tone %q, want one of %v", s.Name, s.Tone, tones)
	case s.Means == "":
		return fmt.Errorf("state %s: means is required", s.Name)
	}
	return nil
}

// ParseLifecycle parses a transition table in the pod-lifecycle.toml format.
// A row or an ignore whose from lists several states becomes one engine row
// or ignore per state, in the order listed (an ignore's on may list several
// triggers too). Unknown keys are errors, and so are a state's facts that
// contradict each other; the table's meaning is checked by engine.Compile.
func ParseLifecycle(src []byte) (Lifecycle, error) {
	var f tableFile
	md, err := toml.Decode(string(src), &f)
	if err != nil {
		return Lifecycle{}, fmt.Errorf("transition table: %w", err)
	}
	if und := md.Undecoded(); len(und) > 0 {
		return Lifecycle{}, fmt.Errorf("transition table: unknown key %q", und[0].String())
	}
	t := engine.Table{
		Name:    f.Name,
		Initial: engine.State(f.Initial),
		Guards:  slices.Clone(f.Guards),
		Effects: slices.Clone(f.Effects),
	}
	for _, s := range f.States {
		if err := checkState(s); err != nil {
			return Lifecycle{}, fmt.Errorf("transition table: %w", err)
		}
		t.States = append(t.States, s.Name)
	}
	for _, tr := range f.Triggers {
		t.Triggers = append(t.Triggers, engine.Trigger(tr))
	}
	for i, r := range f.Rows {
		if len(r.From) == 0 {
			return Lifecycle{}, fmt.Errorf("transition table: row %d has no from", i+1)
		}
		for _, from := range r.From {
			t.Rows = append(t.Rows, engine.Row{
				From: engine.State(from), On: engine.Trigger(r.On), Guard: r.Guard,
				To: engine.State(r.To), Effects: slices.Clone(r.Effects),
			})
		}
	}
	for i, ig := range f.Ignores {
		if len(ig.From) == 0 || len(ig.On) == 0 {
			return Lifecycle{}, fmt.Errorf("transition table: ignore %d needs from and on", i+1)
		}
		for _, from := range ig.From {
			for _, on := range ig.On {
				t.Ignores = append(t.Ignores, engine.Ignore{From: engine.State(from), On: engine.Trigger(on)})
			}
		}
	}
	return Lifecycle{Table: t, States: slices.Clone(f.States)}, nil
}

// Scenario is one timeline replayed against the pod machine.
type Scenario struct {
	File        string // file name under scenarios/
	Name        string `toml:"name"`
	Title       string `toml:"title"`
	Description string `toml:"description"`
	Pod         string `toml:"pod"`
	Steps       []Step `toml:"step"`
}

// Step is one event of a scenario and what the policy must answer.
type Step struct {
	At   time.Time `toml:"at"`
	Note string    `toml:"note"` // what happened, in words, for the timeline table

	// The event.
	Event      string    `toml:"event"`       // a trigger of the pod lifecycle
	Status     string    `toml:"status"`      // notReady: the conductor's status (default EXITED)
	Lookup     string    `toml:"lookup"`      // notReady: FOUND (default), NOT_FOUND or UNREADABLE
	ReadySince time.Time `toml:"ready_since"` // readySince: the conductor's readySince
	HTTPStatus int       `toml:"http_status"` // refused: the start's HTTP status
	StopReason string    `toml:"stop_reason"` // hostStopped: why the host stopped the pod (idle, unserved)
	// Wake names the wake an outcome belongs to; zero means the wake on record.
	Wake time.Time `toml:"wake"`

	// What must come out.
	Action  string `toml:"action"`  // wake, wait, or "" for outcome events
	Reply   string `toml:"reply"`   // the reply key, "" when none
	Text    string `toml:"text"`    // the reply with default wording
	State   string `toml:"state"`   // the state after the step
	Stuck   bool   `toml:"stuck"`   // the decision is logged STUCK
	Crashed bool   `toml:"crashed"` // the decision is logged CRASHED
}

// Scenarios parses every embedded scenario, in file-name order.
func Scenarios() ([]Scenario, error) {
	names, err := fs.Glob(files, "scenarios/*.toml")
	if err != nil {
		return nil, err
	}
	slices.Sort(names)
	out := make([]Scenario, 0, len(names))
	for _, name := range names {
		b, err := files.ReadFile(name)
		if err != nil {
			return nil, err
		}
		sc, err := ParseScenario(path.Base(name), b)
		if err != nil {
			return nil, err
		}
		out = append(out, sc)
	}
	return out, nil
}

// ParseScenario parses one scenario file, named file.
func ParseScenario(file string, src []byte) (Scenario, error) {
	var sc Scenario
	md, err := toml.Decode(string(src), &sc)
	if err != nil {
		return Scenario{}, fmt.Errorf("scenario %s: %w", file, err)
	}
	if und := md.Undecoded(); len(und) > 0 {
		return Scenario{}, fmt.Errorf("scenario %s: unknown key %q", file, und[0].String())
	}
	sc.File = file
	if len(sc.Steps) == 0 {
		return Scenario{}, fmt.Errorf("scenario %s: no steps", file)
	}
	return sc, nil
}
