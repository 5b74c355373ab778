package app_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/wakeonchat/wakeonchat/host/internal/e2e"
	"github.com/wakeonchat/wakeonchat/host/internal/fakeclock"
)

// TestConcurrentAsksWakeOnce sends 500 asks from 500 sessions at once to an
// asleep pod through the real host and plugins: every one is answered 200,
// exactly one of them wakes and the simulator sees exactly one start.
func TestConcurrentAsksWakeOnce(t *testing.T) {
	t.Parallel()
	const asks = 500
	clk := fakeclock.New(t0)
	h := startHost(t, hostOptions{simulate: true, clock: clk})
	h.Client.Transport = &http.Transport{MaxIdleConnsPerHost: asks}
	s := h.sim(t)

	type answer struct {
		status int
		reply  string
		err    error
	}
	answers := make([]answer, asks)
	var wg sync.WaitGroup
	begin := make(chan struct{})
	for i := range asks {
		wg.Go(func() {
			<-begin
			session := fmt.Sprintf("s-%d", i)
			status, raw, err := h.send(http.MethodPost, "/api/chat", chatRequest{Message: "hello", SessionID: session})
			if err != nil {
				answers[i] = answer{err: err}
				return
			}
			var r chatReply
			if err := json.Unmarshal([]byte(raw), &r); err != nil {
				answers[i] = answer{status: status, err: fmt.Errorf("body %q: %w", raw, err)}
				return
			}
			if r.SessionID != session {
				err = fmt.Errorf("sessionId %q, want %q", r.SessionID, session)
			}
			answers[i] = answer{status: status, reply: r.Reply, err: err}
		})
	}
	began := time.Now()
	close(begin)
	wg.Wait()
	t.Logf("%d concurrent asks answered in %v", asks, time.Since(began).Round(time.Millisecond))

	replies := map[string]int{}
	for i, a := range answers {
		switch {
		case a.err != nil:
			t.Errorf("ask %d: %v", i, a.err)
		case a.status != http.StatusOK:
			t.Errorf("ask %d: status %d, want 200", i, a.status)
		default:
			replies[a.reply]++
		}
	}
	// The clock stands still: one ask wakes, every other one finds the wake
	// on the clock with 0 minutes elapsed.
	want := map[string]int{e2e.ReplyWaking: 1, e2e.ReplyStillWaking(0): asks - 1}
	if diff := cmp.Diff(want, replies); diff != "" {
		t.Errorf("replies (-want +got):\n%s", diff)
	}

	// The start returned and the wake's watch waits on the clock; the
	// start's line was logged before the watch began.
	e2e.WaitWatcher(t, h.clock, waitFor)
	if n := s.StartRequests("qwen"); n != 1 {
		t.Errorf("start requests: %d, want 1", n)
	}
	if n := len(h.log.Matching(t, "provider not ready for pod qwen (status EXITED) → wake")); n != 1 {
		t.Errorf("%d wake decisions logged, want 1", n)
	}
	if n := len(h.log.Matching(t, "wake requested for pod")); n != 1 {
		t.Errorf("%d \"wake requested\" lines, want 1", n)
	}
}
