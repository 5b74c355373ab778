package sim_test

import (
	"bufio"
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/wakeonchat/wakeonchat/host/sim"
)

// TestOnAnswer: Config.OnAnswer hears of each answered completion, and only
// of those, with instants that fall between the client sending and the
// client having the answer (a stream's first byte), and before the answer
// is sent: a caller that reads its record once the answer is in finds it
// there.
func TestOnAnswer(t *testing.T) {
	t.Parallel()
	heard := make(chan sim.AnswerTimes, 8)
	clk := sim.NewManualClock(t0)
	s := startSim(t, sim.Config{Clock: clk, NoStartHold: true, OnAnswer: func(a sim.AnswerTimes) { heard <- a }})
	do(t, http.MethodPost, s.URL()+"/api/pods/qwen/start", "{}")
	proxy := s.URL() + "/proxy/pod-1"
	url := proxy + "/v1/chat/completions"
	none := func(step string) {
		t.Helper()
		select {
		case a := <-heard:
			t.Errorf("%s: OnAnswer called (%+v), want not", step, a)
		default:
		}
	}
	// inOrder checks that the instants run sent <= Began <= Written <= in.
	inOrder := func(step string, sent time.Time, a sim.AnswerTimes, in time.Time) {
		t.Helper()
		if a.Began.Before(sent) || a.Written.Before(a.Began) || in.Before(a.Written) {
			t.Errorf("%s: after sending, began %v, written %v, in %v: want sent <= began <= written <= in",
				step, a.Began.Sub(sent), a.Written.Sub(sent), in.Sub(sent))
		}
	}

	clk.Set(t0.Add(7 * time.Minute))
	wantLoading(t, "completion while the model loads", complete(t, proxy, "hi"))
	none("turned away while loading")

	clk.Set(t0.Add(9 * time.Minute))
	if r := do(t, http.MethodPost, url, `{"messages":[]}`); r.code != http.StatusBadRequest {
		t.Errorf("a completion without messages: status %d, want 400", r.code)
	}
	none("a request refused")
	do(t, http.MethodGet, proxy+"/v1/models", "")
	none("the model list")

	sent := time.Now()
	wantReply(t, "a completion", complete(t, proxy, "hi"), "echo: hi")
	in := time.Now()
	select {
	case a := <-heard:
		inOrder("a completion", sent, a, in)
	default:
		t.Fatal("a completion: OnAnswer not called by the time the answer arrived")
	}

	// Word chunks 20 ms apart: an answer written at the stream's end, not
	// at its first chunk, would come after the client's first byte.
	s.SetStreamGap(20 * time.Millisecond)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url,
		strings.NewReader(`{"stream":true,"messages":[{"role":"user","content":"a b c"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	sent = time.Now()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("stream: %v", err)
	}
	defer resp.Body.Close()
	br := bufio.NewReader(resp.Body)
	if _, err := br.ReadByte(); err != nil {
		t.Fatalf("stream: first byte: %v", err)
	}
	first := time.Now()
	var rest strings.Builder
	if _, err := br.WriteTo(&rest); err != nil || !strings.HasSuffix(rest.String(), "data: [DONE]\n\n") {
		t.Fatalf("stream: read to the end: %v, %q", err, rest.String())
	}
	select {
	case a := <-heard:
		inOrder("a stream, to its first byte", sent, a, first)
	default:
		t.Fatal("a stream: OnAnswer not called by the time the stream ended")
	}
	none("after the stream")
	if n := s.Completions(); n != 2 {
		t.Errorf("Completions() = %d, want 2, each heard once", n)
	}
}
