package app_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/wakeonchat/wakeonchat/host/internal/e2e"
	"github.com/wakeonchat/wakeonchat/host/internal/pgtest"
)

// complete sends a non-streaming completion of message to h's door and
// returns the status and the answer's content (or the body).
func (h *wakehost) complete(message string) (int, string) {
	b, _ := json.Marshal(map[string]any{"model": "qwen", "messages": []map[string]string{{"role": "user", "content": message}}})
	ctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, h.base+"/v1/chat/completions", bytes.NewReader(b))
	req.Header.Set("Content-Type", "application/json")
	resp, err := h.client.Do(req)
	if err != nil {
		return 0, "transport error: " + err.Error()
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	var cc struct {
		Choices []struct {
			Message struct {
				Content string `json:"content"`
			} `json:"message"`
		} `json:"choices"`
	}
	if json.Unmarshal(out, &cc) != nil || len(cc.Choices) == 0 {
		return resp.StatusCode, string(out)
	}
	return resp.StatusCode, cc.Choices[0].Message.Content
}

// held is h's wakeonchat_held_requests.
func (h *wakehost) held(t *testing.T) int {
	t.Helper()
	resp, err := h.client.Get(h.base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "wakeonchat_held_requests "); ok {
			n, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatal(err)
			}
			return int(n)
		}
	}
	t.Fatal("no wakeonchat_held_requests in /metrics")
	return 0
}

// TestThreeReplicasHoldEveryRequest (#20, defect 4): three hosts on one
// database in hold mode, 150 concurrent completions spread over them while
// the pod sleeps. Every one is held, on the host that woke the pod and on
// the two that did not (whose view of the pod still says asleep until the
// waking host's notice arrives), and every one is answered by the model
// once it is ready: none gets the waking reply at once. One start in all.
func TestThreeReplicasHoldEveryRequest(t *testing.T) {
	t.Parallel()
	dsn := pgtest.Schema(t)
	p := newSharedPod(t)
	hosts := startReplicas(t, 3, dsn, p, func(c *e2e.Config) { c.ColdStart = "hold" })

	const requests = 150
	answers := make([]string, requests)
	var wg sync.WaitGroup
	for i := range requests {
		wg.Go(func() {
			status, content := hosts[i%len(hosts)].complete(fmt.Sprintf("q%d", i))
			answers[i] = fmt.Sprintf("%d %s", status, content)
		})
	}
	// Every request is held before the pod is made ready: a request
	// answered at once would never be counted here, and the wait fails.
	e2e.WaitCount(t, "held requests on the three hosts", requests, func() int {
		n := 0
		for _, h := range hosts {
			n += h.held(t)
		}
		return n
	}, waitFor)
	p.makeReady()
	wg.Wait()

	for i, a := range answers {
		if want := fmt.Sprintf("200 echo: q%d", i); a != want {
			t.Errorf("request %d (host %d): %q, want %q", i, i%len(hosts), a, want)
		}
	}
	if n := p.starts.Load(); n != 1 {
		t.Errorf("%d start requests, want 1", n)
	}
}
