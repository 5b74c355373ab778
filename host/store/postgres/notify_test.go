package postgres_test

import (
	"log/slog"
	"testing"
	"time"

	"github.com/wakeonchat/wakeonchat/host/internal/pgtest"
	"github.com/wakeonchat/wakeonchat/host/store"
	"github.com/wakeonchat/wakeonchat/host/store/postgres"
	"github.com/wakeonchat/wakeonchat/machines"
)

// TestRecordChanges: a change one replica stores reaches the listener of
// another within a second, in order, before and after; a replica hears
// none of its own, nor of an update that changes nothing; a replica on
// another schema of the database hears nothing of this one's. When the listener loses the database and gets it back, it
// resyncs every record, and later changes arrive again. It is Following
// from its first LISTEN on, not while it resyncs, and again after.
func TestRecordChanges(t *testing.T) {
	t.Parallel()
	dsn := pgtest.Schema(t)
	proxy, proxied := pgtest.NewProxy(t, dsn)
	quiet := slog.New(slog.DiscardHandler)
	a := openAt(t, dsn, postgres.Options{Logger: quiet})
	b := openAt(t, proxied, postgres.Options{Logger: quiet, OpTimeout: time.Second, ConnectTimeout: time.Second})
	otherDSN := pgtest.Schema(t)
	other := openAt(t, otherDSN, postgres.Options{Logger: quiet})

	// heard is a change and whether the listener was Following as it came.
	type heard struct {
		store.RecordChange
		following bool
	}
	listen := func(s *postgres.Store) <-chan heard {
		ch := make(chan heard, 64)
		if err := s.OnRecordChange(t.Context(), func(c store.RecordChange) { ch <- heard{c, s.Following()} }); err != nil {
			t.Fatal(err)
		}
		return ch
	}
	atA, atB, atOther := listen(a), listen(b), listen(other)
	if !b.Following() {
		t.Error("B is not Following once OnRecordChange returned")
	}
	if err := b.OnRecordChange(t.Context(), func(store.RecordChange) {}); err == nil {
		t.Error("a second OnRecordChange: no error")
	}
	next := func(ch <-chan heard, within time.Duration) (heard, bool) {
		select {
		case c := <-ch:
			return c, true
		case <-time.After(within):
			return heard{}, false
		}
	}

	waking := machines.Record{Pod: "qwen", State: machines.Waking, WakeRequestedAt: time.Date(2026, 9, 9, 12, 0, 0, 0, time.UTC)}
	ready := waking
	ready.State, ready.ReadyAt = machines.Ready, waking.WakeRequestedAt.Add(9*time.Minute)
	for _, r := range []machines.Record{waking, ready} {
		if _, _, err := a.UpdateRecord(t.Context(), "qwen", func(machines.Record) (machines.Record, *machines.Wake, error) { return r, nil, nil }); err != nil {
			t.Fatal(err)
		}
	}
	sent := time.Now()
	for i, want := range []store.RecordChange{{Before: machines.NewRecord("qwen"), After: waking}, {Before: waking, After: ready}} {
		got, ok := next(atB, time.Second)
		if !ok {
			t.Fatalf("change %d had not reached B %v after it was stored", i+1, time.Since(sent))
		}
		if !got.Before.Equal(want.Before) || !got.After.Equal(want.After) || got.Resync || !got.following {
			t.Errorf("change %d at B = %+v, want %+v, following", i+1, got, want)
		}
	}
	// An update that changes nothing is no change, a replica hears none of
	// its own, and one on another schema none of this one's: what each
	// hears first from here on is a change another replica of its schema
	// stores after them (a listener hears its notices in commit order).
	if _, _, err := a.UpdateRecord(t.Context(), "qwen", func(r machines.Record) (machines.Record, *machines.Wake, error) { return r, nil, nil }); err != nil {
		t.Fatal(err)
	}
	mark := func(pod string) machines.Record {
		return machines.Record{Pod: pod, State: machines.Waking, WakeRequestedAt: waking.WakeRequestedAt}
	}
	otherPeer := openAt(t, otherDSN, postgres.Options{Logger: quiet})
	for _, m := range []struct {
		by, hears string
		s         *postgres.Store
		ch        <-chan heard
		rec       machines.Record
	}{
		{"A", "B", a, atB, mark("mark-a")},
		{"B", "A", b, atA, mark("mark-b")},
		{"another replica on the other schema", "the replica on the other schema", otherPeer, atOther, mark("mark-other")},
	} {
		if err := m.s.PutRecord(t.Context(), m.rec); err != nil {
			t.Fatal(err)
		}
		got, ok := next(m.ch, time.Second)
		if !ok {
			t.Fatalf("%s had not heard the change %s stored a second after", m.hears, m.by)
		}
		if !got.Before.Equal(machines.NewRecord(m.rec.Pod)) || !got.After.Equal(m.rec) || got.Resync {
			t.Errorf("the first change %s heard = %+v, want %s's to %+v: none of the update that changed nothing, "+
				"of its own or of another schema's before it", m.hears, got, m.by, m.rec)
		}
	}

	// B loses the database; A's change meanwhile comes as a resync once B
	// is back, and later changes as changes.
	proxy.Down()
	llama := machines.Record{Pod: "llama", State: machines.Waking, WakeRequestedAt: waking.WakeRequestedAt}
	if err := a.PutRecord(t.Context(), llama); err != nil {
		t.Fatal(err)
	}
	proxy.Up()
	resynced := map[string]machines.Record{}
	for len(resynced) < 4 {
		c, ok := next(atB, 10*time.Second)
		if !ok {
			t.Fatalf("B resynced %v within 10 s of the database coming back, want qwen, llama and the marks", resynced)
		}
		if !c.Resync {
			t.Fatalf("B heard %+v before its resync", c)
		}
		if c.following {
			t.Errorf("B was Following during its resync (%s)", c.After.Pod)
		}
		resynced[c.After.Pod] = c.After
	}
	if !resynced["qwen"].Equal(ready) || !resynced["llama"].Equal(llama) ||
		!resynced["mark-a"].Equal(mark("mark-a")) || !resynced["mark-b"].Equal(mark("mark-b")) {
		t.Errorf("B's resync = %+v, want qwen ready, llama and the marks waking", resynced)
	}
	if err := a.PutRecord(t.Context(), waking); err != nil {
		t.Fatal(err)
	}
	if c, ok := next(atB, time.Second); !ok || c.Resync || !c.After.Equal(waking) || !c.Before.Equal(ready) || !c.following {
		t.Errorf("the change after the resync at B = %+v, %v; want ready to waking, following", c, ok)
	}
}

// TestListenerNoticesASilentDatabase: a database that goes silent behind a
// partition (the proxy frozen: no reset, no answer) stops the listener
// Following within about ListenCheck and a ping's OpTimeout, so that the
// host reads every record again instead of deciding on ones that may miss
// the other hosts' changes; once the database answers again it follows
// again. A quiet database that answers keeps it Following: its pings work.
func TestListenerNoticesASilentDatabase(t *testing.T) {
	t.Parallel()
	dsn := pgtest.Schema(t)
	proxy, proxied := pgtest.NewProxy(t, dsn)
	b := openAt(t, proxied, postgres.Options{
		Logger: slog.New(slog.DiscardHandler), OpTimeout: 300 * time.Millisecond, ConnectTimeout: time.Second,
		ListenCheck: 10 * time.Millisecond,
	})
	if err := b.OnRecordChange(t.Context(), func(store.RecordChange) {}); err != nil {
		t.Fatal(err)
	}
	// until polls cond every 10 ms for up to within.
	until := func(cond func() bool, within time.Duration) bool {
		for deadline := time.Now().Add(within); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
			if cond() {
				return true
			}
		}
		return cond()
	}
	// Ten checks, each a ping the database answers, and the listener
	// Following throughout.
	quiet, pinged := time.Now(), postgres.ListenPings(b)
	for postgres.ListenPings(b) < pinged+10 {
		if !b.Following() {
			t.Fatal("the listener stopped Following a quiet database that answers")
		}
		if time.Since(quiet) > 10*time.Second {
			t.Fatalf("the listener pinged a quiet database %d times in 10 s, want ten every %v", postgres.ListenPings(b)-pinged, 10*time.Millisecond)
		}
		time.Sleep(time.Millisecond)
	}
	proxy.Freeze()
	if !until(func() bool { return !b.Following() }, 10*time.Second) {
		t.Fatal("the listener still Following 10 s after the database went silent")
	}
	proxy.Thaw()
	if !until(b.Following, 20*time.Second) {
		t.Fatal("the listener not Following again 20 s after the database answered again")
	}
}
