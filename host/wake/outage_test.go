package wake_test

import (
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/wakeonchat/wakeonchat/host/wake"
	"github.com/wakeonchat/wakeonchat/machines"
)

// errDown is what a store that lost its database answers.
var errDown = errors.New("store: read the record of pod qwen: PostgreSQL ECONNREFUSED")

// TestReadyDuringStoreOutage: the store fails from 1:30 to 11:30 after the
// request, and the model answers from 2:00. The wake is recorded ready at
// 2:00, when the watch's probe saw it answer, not when the store came back;
// and the failures, twice a second while the watch reads the record and
// feeds each answer, are logged once, with one line when the store answers
// again.
func TestReadyDuringStoreOutage(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newSyncEnv(t, wake.Config{})
		e.boots(time.Minute, time.Time{}) // no readySince: the probe's answer is the readiness
		e.loads(2 * time.Minute)
		e.wakeNow(t)

		time.Sleep(90 * time.Second)
		synctest.Wait()
		if got := e.record(t); got.State != machines.Loading {
			t.Fatalf("at 1:30 the pod is %s, want loading", got.State)
		}
		e.recs.setOutage(errDown)
		time.Sleep(10 * time.Minute)
		synctest.Wait()
		e.recs.setOutage(nil)
		time.Sleep(time.Minute)
		synctest.Wait()

		want := machines.Record{Pod: "qwen", State: machines.Ready, WakeRequestedAt: e.start,
			RunningAt: e.at(time.Minute), ReadyAt: e.at(2 * time.Minute)}
		if diff := cmp.Diff(want, e.record(t)); diff != "" {
			t.Errorf("record (-want +got):\n%s", diff)
		}
		all := e.logs.lines(t)
		var failed, back []logLine
		for _, l := range all {
			switch {
			case l.Level == "ERROR" && strings.Contains(l.Msg, errDown.Error()):
				failed = append(failed, l)
			case l.Msg == wake.LineStoreBack:
				back = append(back, l)
			}
		}
		if len(failed) != 1 || len(back) != 1 || back[0].Level != "INFO" {
			t.Errorf("during the outage: %d ERROR lines about it and %d %q lines; want one of each (INFO)\n%s",
				len(failed), len(back), wake.LineStoreBack, e.logs.String())
		}
	})
}
