package supervisor

import (
	"context"
	"errors"
	"log/slog"
	"strconv"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
)

// The relaunch schedule, on synctest's clock, with a fake launcher: what
// each launch does is the test's to say.

// fakeLauncher launches fake plugin processes and records when.
type fakeLauncher struct {
	// life says what launch n (from 1) does: fail, or run for runFor (0:
	// exits at once, forever: runs until killed).
	life func(n int) (fail bool, runFor time.Duration)

	mu       sync.Mutex
	began    time.Time
	launches []time.Duration // since began
	procs    []*instance
}

const forever = time.Duration(-1)

func newFakeLauncher(life func(n int) (bool, time.Duration)) *fakeLauncher {
	return &fakeLauncher{life: life, began: time.Now()}
}

var errHandshake = errors.New("plugin x: failed the go-plugin handshake")

func (f *fakeLauncher) launch(context.Context) (*instance, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.launches = append(f.launches, time.Since(f.began))
	n := len(f.launches)
	fail, runFor := f.life(n)
	if fail {
		return nil, errHandshake
	}
	exited := make(chan struct{})
	var once sync.Once
	exit := func() { once.Do(func() { close(exited) }) }
	switch {
	case runFor == 0:
		exit()
	case runFor > 0:
		time.AfterFunc(runFor, exit)
	}
	inst := &instance{impl: n, pid: strconv.Itoa(n), started: time.Now(), exited: exited, kill: exit}
	f.procs = append(f.procs, inst)
	return inst, nil
}

func (f *fakeLauncher) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.launches)
}

func (f *fakeLauncher) at() []time.Duration {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]time.Duration(nil), f.launches...)
}

// kill ends the last launched process, as a SIGKILL would.
func (f *fakeLauncher) kill() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.procs[len(f.procs)-1].kill()
}

// offsets are the moments of launches that follow each other by delays,
// the first at 0.
func offsets(delays ...time.Duration) []time.Duration {
	out := []time.Duration{0}
	for _, d := range delays {
		out = append(out, out[len(out)-1]+d)
	}
	return out
}

// doubling is the schedule of a streak: 100ms doubling to 25.6s, then 30s
// n times.
func doubling(n int) []time.Duration {
	out := []time.Duration{}
	for d := firstRelaunchDelay; d < maxRelaunchDelay; d *= 2 {
		out = append(out, d)
	}
	for range n {
		out = append(out, maxRelaunchDelay)
	}
	return out
}

func repeat(d time.Duration, n int) []time.Duration {
	out := make([]time.Duration, n)
	for i := range out {
		out[i] = d
	}
	return out
}

// plus adds d to every delay.
func plus(d time.Duration, delays []time.Duration) []time.Duration {
	out := make([]time.Duration, len(delays))
	for i, x := range delays {
		out[i] = x + d
	}
	return out
}

func TestRelaunchSchedule(t *testing.T) {
	t.Parallel()
	const window = 10 * time.Minute
	tests := []struct {
		name string
		life func(n int) (bool, time.Duration)
		want []time.Duration // every launch in the window, from the first
	}{
		{
			// The first launch runs and exits at once; every relaunch fails:
			// 9 doubling delays (51.1 s) and then one launch per 30 s.
			name: "a binary that keeps failing",
			life: func(n int) (bool, time.Duration) { return n > 1, 0 },
			want: offsets(doubling(30)...),
		},
		{
			name: "a plugin that exits as soon as it is launched",
			life: func(int) (bool, time.Duration) { return false, 0 },
			want: offsets(doubling(30)...),
		},
		{
			// Each run lasts stableAfter: each exit is a fresh failure.
			name: "a plugin that stays up stableAfter each time",
			life: func(int) (bool, time.Duration) { return false, stableAfter },
			want: offsets(repeat(stableAfter+firstRelaunchDelay, 70)...),
		},
		{
			name: "a plugin that dies just short of stableAfter",
			life: func(int) (bool, time.Duration) { return false, stableAfter - time.Millisecond },
			want: offsets(plus(stableAfter-time.Millisecond, doubling(30))...),
		},
		{
			// A failed relaunch does not reset the streak; a stable run does.
			name: "failures, then a stable run, then failures",
			life: func(n int) (bool, time.Duration) {
				switch {
				case n == 1:
					return false, 0
				case n < 4:
					return true, 0
				case n == 4:
					return false, time.Minute
				}
				return true, 0
			},
			want: offsets(append(
				[]time.Duration{100 * time.Millisecond, 200 * time.Millisecond, 400 * time.Millisecond, time.Minute + 100*time.Millisecond},
				doubling(30)[1:]...)...),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				f := newFakeLauncher(tt.life)
				p := newSupervised(Spec{Name: "x"}, "gpu", f.launch)
				defer p.close()
				if err := p.start(context.Background()); err != nil {
					t.Fatalf("start: %v", err)
				}
				time.Sleep(window - time.Nanosecond)
				if err := p.close(); err != nil {
					t.Fatal(err)
				}
				var want []time.Duration
				for _, d := range tt.want {
					if d < window {
						want = append(want, d)
					}
				}
				if diff := cmp.Diff(want, f.at()); diff != "" {
					t.Errorf("launches (-want +got):\n%s", diff)
				}
				// However it fails, the plugin costs at most one launch per
				// firstRelaunchDelay... and, once a streak is long, one per
				// maxRelaunchDelay: never a spinning core.
				if n := f.count(); n > 60 {
					t.Errorf("%d launches in %v", n, window)
				}
			})
		})
	}
}

// A plugin killed while idle is relaunched without any call; Ready follows
// the process within the relaunch delay; and each step is logged.
func TestIdleExitIsRelaunched(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		f := newFakeLauncher(func(n int) (bool, time.Duration) { return n == 2, forever })
		logs := &records{}
		p := newSupervised(Spec{Name: "conductor", Logger: slog.New(logs)}, "gpu", f.launch)
		defer p.close()
		if err := p.start(context.Background()); err != nil {
			t.Fatal(err)
		}
		if !p.ready() {
			t.Fatal("not ready after start")
		}

		f.kill()
		synctest.Wait()
		if p.ready() {
			t.Error("ready after the process exited")
		}
		time.Sleep(firstRelaunchDelay) // relaunch 1: fails
		synctest.Wait()
		if p.ready() || f.count() != 2 {
			t.Errorf("ready %v after %d launches, want not ready after 2", p.ready(), f.count())
		}
		time.Sleep(2 * firstRelaunchDelay) // relaunch 2: runs
		synctest.Wait()
		if !p.ready() || f.count() != 3 {
			t.Errorf("ready %v after %d launches, want ready after 3", p.ready(), f.count())
		}

		want := []record{
			{Level: slog.LevelWarn, Msg: "plugin not running; relaunching", Attrs: map[string]string{"plugin": "conductor", "pid": "1", "ran": "0s", "next_delay": "100ms"}},
			{Level: slog.LevelError, Msg: "plugin relaunch failed", Attrs: map[string]string{"plugin": "conductor", "attempt": "1", "next_delay": "200ms", "error": errHandshake.Error()}},
			{Level: slog.LevelInfo, Msg: "plugin relaunched", Attrs: map[string]string{"plugin": "conductor", "attempt": "2", "pid": "3"}},
		}
		if diff := cmp.Diff(want, logs.at(slog.LevelInfo)); diff != "" {
			t.Errorf("log records (-want +got):\n%s", diff)
		}
	})
}

// A call that finds the plugin down waits for a relaunch due within
// callWait and before its deadline, and otherwise fails at once, without
// launching anything itself.
func TestCallsWhileDown(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		// Launches 2 to 9 fail: after the exit, the streak's delays grow.
		f := newFakeLauncher(func(n int) (bool, time.Duration) { return n > 1 && n < 10, forever })
		p := newSupervised(Spec{Name: "x"}, "gpu", f.launch)
		defer p.close()
		if err := p.start(context.Background()); err != nil {
			t.Fatal(err)
		}
		f.kill()
		synctest.Wait()

		// Relaunch 1 is 100 ms away: a call waits for it, and fails with
		// it.
		began := time.Now()
		if _, _, err := p.get(context.Background()); !errors.Is(err, errHandshake) || time.Since(began) != firstRelaunchDelay {
			t.Errorf("get: %v after %v, want the handshake error after %v", err, time.Since(began), firstRelaunchDelay)
		}
		// Relaunch 2 is 200 ms away, after a 100 ms deadline: the call
		// fails at once, naming the last launch's failure.
		began = time.Now()
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		_, _, err := p.get(ctx)
		cancel()
		if !errors.Is(err, errHandshake) || time.Since(began) != 0 {
			t.Errorf("get with a 100ms deadline: %v after %v, want the handshake error at once", err, time.Since(began))
		}
		// Launches 3 to 9 fail by 25.5 s; launch 10 comes 25.6 s later. A
		// call in that delay fails at once, and launches nothing itself.
		time.Sleep(30 * time.Second)
		synctest.Wait()
		launches := f.count()
		began = time.Now()
		_, _, err = p.get(context.Background())
		if !errors.Is(err, errHandshake) || time.Since(began) != 0 {
			t.Errorf("get during a long delay: %v after %v, want the handshake error at once", err, time.Since(began))
		}
		if n := f.count(); n != launches || n != 9 {
			t.Errorf("%d launches, %d of them by the call; want 9 and none", n, n-launches)
		}

		// When a relaunch works, a call waiting for it gets it.
		time.Sleep(time.Minute)
		synctest.Wait()
		impl, gen, err := p.get(context.Background())
		if err != nil || impl != 10 || gen != 2 {
			t.Errorf("get after the relaunch: %v, %d, %v; want launch 10, generation 2", impl, gen, err)
		}
	})
}

// Close during a relaunch delay ends the watch at once: synctest would
// report its goroutine blocked otherwise.
func TestCloseDuringDelay(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		f := newFakeLauncher(func(n int) (bool, time.Duration) { return n > 1, 0 })
		p := newSupervised(Spec{Name: "x"}, "gpu", f.launch)
		defer p.close()
		if err := p.start(context.Background()); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Minute)
		if err := p.close(); err != nil {
			t.Fatal(err)
		}
		if _, _, err := p.get(context.Background()); !errors.Is(err, ErrClosed) {
			t.Errorf("get after close: %v, want ErrClosed", err)
		}
		n := f.count()
		time.Sleep(time.Hour)
		if f.count() != n {
			t.Errorf("%d launches after close", f.count()-n)
		}
	})
}

// record is one log record with its attributes as text.
type record struct {
	Level slog.Level
	Msg   string
	Attrs map[string]string
}

// records is a slog.Handler that keeps every record.
type records struct {
	mu    sync.Mutex
	all   []record
	attrs []slog.Attr
	root  *records
}

func (r *records) Enabled(context.Context, slog.Level) bool { return true }

func (r *records) Handle(_ context.Context, rec slog.Record) error {
	attrs := map[string]string{}
	for _, a := range r.attrs {
		attrs[a.Key] = a.Value.String()
	}
	rec.Attrs(func(a slog.Attr) bool {
		attrs[a.Key] = a.Value.String()
		return true
	})
	root := r.rootOf()
	root.mu.Lock()
	defer root.mu.Unlock()
	root.all = append(root.all, record{Level: rec.Level, Msg: rec.Message, Attrs: attrs})
	return nil
}

func (r *records) rootOf() *records {
	if r.root != nil {
		return r.root
	}
	return r
}

func (r *records) WithAttrs(attrs []slog.Attr) slog.Handler {
	return &records{attrs: append(append([]slog.Attr(nil), r.attrs...), attrs...), root: r.rootOf()}
}

func (r *records) WithGroup(string) slog.Handler { return r }

// at are the records at level or above.
func (r *records) at(level slog.Level) []record {
	root := r.rootOf()
	root.mu.Lock()
	defer root.mu.Unlock()
	var out []record
	for _, rec := range root.all {
		if rec.Level >= level {
			out = append(out, rec)
		}
	}
	return out
}
