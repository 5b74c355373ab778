package supervisor

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
)

// Health follows the process through an exit, a failed relaunch, a
// relaunch that runs and Close, on synctest's clock.
func TestHealth(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		// Launch 2 (the first relaunch) fails; the others run until killed.
		f := newFakeLauncher(func(n int) (bool, time.Duration) { return n == 2, forever })
		p := newSupervised(Spec{Name: "wake-plugin-conductor"}, "gpu", f.launch)
		defer p.close()
		var got []Health
		snap := func() {
			synctest.Wait()
			got = append(got, p.health())
		}

		snap() // never launched
		if err := p.start(context.Background()); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Minute)
		snap() // up a minute
		f.kill()
		snap() // down, relaunch 1 due in 100 ms
		time.Sleep(firstRelaunchDelay)
		snap() // relaunch 1 failed, relaunch 2 due in 200 ms
		time.Sleep(2*firstRelaunchDelay + 5*time.Second)
		snap() // relaunch 2 runs, up 5 s
		if err := p.close(); err != nil {
			t.Fatal(err)
		}
		snap()

		base := Health{Name: "wake-plugin-conductor", Kind: "gpu"}
		with := func(f func(*Health)) Health { h := base; f(&h); return h }
		want := []Health{
			base,
			with(func(h *Health) { h.Running, h.Up = true, time.Minute }),
			with(func(h *Health) { h.NextRelaunch = firstRelaunchDelay }),
			with(func(h *Health) { h.FailedLaunches, h.LastLaunchFailed, h.NextRelaunch = 1, true, 2*firstRelaunchDelay }),
			with(func(h *Health) { h.Running, h.Up, h.Restarts, h.FailedLaunches = true, 5*time.Second, 1, 1 }),
			with(func(h *Health) { h.Restarts, h.FailedLaunches, h.Closed = 1, 1, true }),
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("health snapshots (-want +got):\n%s", diff)
		}
	})
}
