package sim_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/wakeonchat/wakeonchat/host/sim"
)

// t0 is message 1 of the first live wake, 2026-09-09 12:26:25 UTC.
var t0 = time.Date(2026, 9, 9, 12, 26, 25, 0, time.UTC)

// startSim starts a Sim on loopback and closes it when the test ends.
func startSim(t *testing.T, cfg sim.Config) *sim.Sim {
	t.Helper()
	s := sim.New(cfg)
	if err := s.Start(); err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return s
}

// response is what a test looks at in an HTTP answer.
type response struct {
	code        int
	contentType string
	body        string
}

// do sends one request with a 5 s cap and reads the whole answer.
func do(t *testing.T, method, url, body string) response {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, url, strings.NewReader(body))
	if err != nil {
		t.Fatalf("new request: %v", err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: read body: %v", method, url, err)
	}
	return response{code: resp.StatusCode, contentType: resp.Header.Get("Content-Type"), body: string(b)}
}

// wantPod checks both GET /api/pods/{name} and Snapshot against want.
func wantPod(t *testing.T, step string, s *sim.Sim, want sim.PodView) {
	t.Helper()
	r := do(t, http.MethodGet, s.URL()+"/api/pods/"+want.Name, "")
	if r.code != http.StatusOK {
		t.Fatalf("%s: GET pod status = %d, want 200 (body %q)", step, r.code, r.body)
	}
	var got sim.PodView
	if err := json.Unmarshal([]byte(r.body), &got); err != nil {
		t.Fatalf("%s: decode pod: %v", step, err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("%s: GET pod mismatch (-want +got):\n%s", step, diff)
	}
	if diff := cmp.Diff(want, s.Snapshot(want.Name)); diff != "" {
		t.Errorf("%s: Snapshot mismatch (-want +got):\n%s", step, diff)
	}
}

// chatBody is a one-message chat completions request.
func chatBody(content string) string {
	b, _ := json.Marshal(map[string]any{
		"model":    "qwen",
		"messages": []map[string]string{{"role": "user", "content": content}},
	})
	return string(b)
}

// complete posts a one-message completion to a proxy URL.
func complete(t *testing.T, proxyURL, content string) response {
	t.Helper()
	return do(t, http.MethodPost, proxyURL+"/v1/chat/completions", chatBody(content))
}

// reply is the assistant's content in a chat completion answer.
func reply(t *testing.T, r response) string {
	t.Helper()
	var c struct {
		Choices []struct {
			Message struct {
				Content string `json:"content"`
			} `json:"message"`
		} `json:"choices"`
	}
	if err := json.Unmarshal([]byte(r.body), &c); err != nil || len(c.Choices) != 1 {
		t.Fatalf("completion body %q: want one choice (err %v)", r.body, err)
	}
	return c.Choices[0].Message.Content
}

// wantLoading checks the proxy's 502 HTML page.
func wantLoading(t *testing.T, step string, r response) {
	t.Helper()
	if r.code != http.StatusBadGateway || !strings.HasPrefix(r.contentType, "text/html") ||
		!strings.HasPrefix(r.body, "<!DOCTYPE html>") || !strings.Contains(r.body, "Bad Gateway") {
		t.Errorf("%s: got %d %q %.60q, want 502 text/html <!DOCTYPE html>...Bad Gateway", step, r.code, r.contentType, r.body)
	}
}

// wantGone checks the plain-text 404 of a proxy URL whose pod is gone.
func wantGone(t *testing.T, step string, r response) {
	t.Helper()
	if r.code != http.StatusNotFound || !strings.HasPrefix(r.contentType, "text/plain") {
		t.Errorf("%s: got %d %q %q, want 404 text/plain", step, r.code, r.contentType, r.body)
	}
}

// wantReply checks a 200 completion that echoes want.
func wantReply(t *testing.T, step string, r response, want string) {
	t.Helper()
	if r.code != http.StatusOK {
		t.Errorf("%s: completion status = %d, want 200 (body %.80q)", step, r.code, r.body)
		return
	}
	if got := reply(t, r); got != want {
		t.Errorf("%s: reply = %q, want %q", step, got, want)
	}
}

// waitFor polls cond every millisecond for up to a second.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// newHTTPTestServer serves h on an httptest server closed when the test ends,
// and returns its URL.
func newHTTPTestServer(t *testing.T, h http.Handler) string {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv.URL
}

// startAsync posts a start from another goroutine, for starts that hold. The
// channel gets the answer; a transport error arrives as code 0 with the error
// text as the body.
func startAsync(url string) <-chan response {
	done := make(chan response, 1)
	go func() {
		resp, err := http.Post(url, "application/json", strings.NewReader("{}"))
		if err != nil {
			done <- response{body: err.Error()}
			return
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		done <- response{code: resp.StatusCode, contentType: resp.Header.Get("Content-Type"), body: string(b)}
	}()
	return done
}
