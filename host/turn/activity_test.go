package turn_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/wakeonchat/wakeonchat/host/resolve"
	"github.com/wakeonchat/wakeonchat/host/store"
	"github.com/wakeonchat/wakeonchat/host/turn"
	"github.com/wakeonchat/wakeonchat/machines"
	"github.com/wakeonchat/wakeonchat/plugins/pluginapi"
)

// activity is a turn.Activity that records each turn's begin and end in
// the fixture's calls.
type activity struct{ calls *calls }

func (a activity) Begin(pod string) func() {
	a.calls.add("begin %q", pod)
	return func() { a.calls.add("end %q", pod) }
}

func withActivity(f *fixture, c *turn.Config) { c.Activity = activity{f.calls} }

// Every turn is in flight, for the host's idle stop, from before its
// model call until it ended: a turn of a provider chain is of no known
// pod, a door's of its provider's pod; a resume is of its pinned pod.
func TestActivityOfATurn(t *testing.T) {
	t.Parallel()
	f := newFixture(t, withActivity)
	if _, err := turn.Run(context.Background(), f.svc, turn.Ask{Send: resolve.Retry}, f.model.call); err != nil {
		t.Fatal(err)
	}
	f.calls.assert(t, `begin ""`, "model retry", `end ""`)

	f.pending.m["s1"] = store.Pending{Key: "k", Pod: "qwen", Provider: "a"}
	f.coord.rec = machines.Record{State: machines.Ready, WakeRequestedAt: time.Now()}
	f.pod.res = resolve.Resolution{Pod: "qwen", Status: "RUNNING", IsRunning: true, Lookup: pluginapi.LookupFound, ReadySince: time.Now()}
	f.model.answers(nil)
	has := func(string) bool { return true }
	if _, err := turn.Resume(context.Background(), f.svc, "s1", "k", has, func(string) turn.Call[string] { return f.model.call }); err != nil {
		t.Fatal(err)
	}
	f.calls.assert(t, "Pending s1", `begin "qwen"`, "Lookup", "Record qwen", "TakePending s1 k", "model once", `end "qwen"`)
}

// A held request is in flight for the whole hold, and ends only once its
// prompt ran: the host never stops a pod a request waits for.
func TestActivityOfAHold(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(t, func(f *fixture, c *turn.Config) { c.Events = f.hub; withActivity(f, c) })
		f.model.answers(asleep(), nil)
		h := f.hold(context.Background())
		time.Sleep(20 * time.Second)
		h.pending(t)
		f.readyNow()
		<-h.done
		f.calls.assert(t, `begin "qwen"`, "model retry", "NotReady qwen EXITED FOUND loading=false", "hold waking",
			"tick 0 min", "model once", "hold ended", `end "qwen"`)
	})
}
