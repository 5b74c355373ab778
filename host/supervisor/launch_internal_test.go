package supervisor

import (
	"context"
	"testing"
	"testing/synctest"
)

// An instance's exited is closed by the time its kill returns, even when
// go-plugin has not yet said the process exited (it cancels its context a
// moment after its Kill returns): a caller that killed a crashed plugin
// and looks again finds it down, never the dead process.
func TestExitedWhenKillReturns(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		stops := 0
		inst := &instance{}
		inst.exited, inst.kill = exitSignal(ctx, func() { stops++ })
		if inst.hasExited() {
			t.Fatal("exited before anything happened")
		}
		inst.kill()
		if !inst.hasExited() {
			t.Fatal("kill returned and exited is still open")
		}
		inst.kill() // safe again
		cancel()    // go-plugin's word, late: harmless
		synctest.Wait()
		if stops != 2 {
			t.Errorf("the process was stopped %d times, want 2 (each kill stops it; go-plugin's Kill is idempotent)", stops)
		}
	})
}

// A process that exits by itself closes exited once go-plugin says so,
// with no kill.
func TestExitedWhenGoPluginSaysSo(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		exited, _ := exitSignal(ctx, func() { t.Error("stopped without a kill") })
		synctest.Wait()
		select {
		case <-exited:
			t.Fatal("exited before go-plugin said so")
		default:
		}
		cancel()
		synctest.Wait()
		select {
		case <-exited:
		default:
			t.Fatal("go-plugin said the process exited and exited is still open")
		}
	})
}
