package machines

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/wakeonchat/wakeonchat/specs"
)

// TestAddingAState adds a state to a copy of the table the way a change to
// the policy would: a [[state]] with its facts, one new row for the state's
// next ask and one retargeted row into it (ready seen down becomes parked,
// not stopped), the reply's effect declared, the state listed beside
// stopped and idled, which it is like, in the lists of states rows and ignores apply
// from, one default text and one scenario. Nothing else
// changes: the machine, Describe, Preview, the facts the doors, metrics
// and status page read, and the reply both doors send all follow from the
// spec.
func TestAddingAState(t *testing.T) {
	t.Parallel()
	src := string(specs.PodLifecycleSource())
	edits := []struct{ old, new string }{
		{`"reply:idle_stopped",` + "\n]", `"reply:idle_stopped", "reply:parked",` + "\n]"},
		{"from = \"ready\"\non = \"podDown\"\nto = \"stopped\"", "from = \"ready\"\non = \"podDown\"\nto = \"parked\""},
	}
	for _, e := range edits {
		if strings.Count(src, e.old) != 1 {
			t.Fatalf("the table no longer has exactly one %q", e.old)
		}
		src = strings.Replace(src, e.old, e.new, 1)
	}
	// Everywhere else parked is like stopped and idled: it joins them in
	// every list of states a row or an ignore applies from.
	src = strings.ReplaceAll(src, `"idled", "refused"`, `"idled", "parked", "refused"`)
	src += `
[[state]]
name = "parked"
means = "The pod was ready, then parked."
group = "down"
outcome = "ready"
tone = "idle"

[[row]]
from = "parked"
on = "notReady"
to = "waking"
effects = ["clearLoading", "wake", "reply:parked"]
`
	l, err := specs.ParseLifecycle([]byte(src))
	if err != nil {
		t.Fatal(err)
	}
	texts := DefaultReplies()
	texts["parked"] = "The GPU was parked to save money. Waking it again — about {{.EtaMinutes}} minutes."
	replies, err := parseReplies(replyKeysOf(l.Table), texts)
	if err != nil {
		t.Fatal(err)
	}
	pod, err := newPod(l, Policy{Timings: DefaultTimings(), Replies: replies})
	if err != nil {
		t.Fatal(err)
	}

	// The first step's reply is the default wording, rendered (%q writes
	// it as a TOML string); the last step's is the new state's own text.
	sc, err := specs.ParseScenario("parked.toml", fmt.Appendf(nil, `
name = "parked"
title = "ready, parked, asked again"
pod = "qwen"

[[step]]
at = 2026-12-01T12:00:00Z
event = "notReady"
action = "wake"
reply = "waking"
text = %q
state = "waking"

[[step]]
at = 2026-12-01T12:09:00Z
event = "readySince"
ready_since = 2026-12-01T12:08:30Z
state = "ready"

[[step]]
at = 2026-12-01T12:30:00Z
event = "podDown"
state = "parked"

[[step]]
at = 2026-12-01T13:00:00Z
event = "notReady"
action = "wake"
reply = "parked"
text = "The GPU was parked to save money. Waking it again — about 9 minutes."
state = "waking"
`, say(ReplyWaking)))
	if err != nil {
		t.Fatal(err)
	}
	replay(t, pod, sc)
	everyEventHandled(t, pod)

	// What the rest of the host reads of the new state.
	parked := Record{Pod: "qwen", State: "parked", WakeRequestedAt: at(0), ReadyAt: at(0)}
	if diff := cmp.Diff(StateFacts{Name: "parked", Means: "The pod was ready, then parked.",
		Group: specs.Down, Outcome: "ready", Tone: "idle"}, pod.Facts("parked")); diff != "" {
		t.Errorf("facts (-want +got):\n%s", diff)
	}
	key, _, err := pod.Describe(parked, View{Status: "EXITED", Lookup: LookupFound}, at(60*min), Estimate{})
	if err != nil || key != ReplyResumeWaiting {
		t.Errorf("a resume in parked: %q, %v; want %q", key, err, ReplyResumeWaiting)
	}
	pv, err := pod.Preview(parked, View{Status: "EXITED", Lookup: LookupFound}, Estimate{}, at(60*min))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(Preview{Reply: "parked", Wakes: true,
		Text: "The GPU was parked to save money. Waking it again — about 9 minutes."}, pv); diff != "" {
		t.Errorf("preview (-want +got):\n%s", diff)
	}
	if !strings.Contains(picture(l.Table, pod.facts), "parked([parked])") {
		t.Error("the diagram does not draw the new state")
	}
}
