package app_test

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/wakeonchat/wakeonchat/host/internal/e2e"
	"github.com/wakeonchat/wakeonchat/host/internal/fakeclock"
)

// TestLargeTurnsKeepTheSessionUsable: three turns of 700 KB each, answered
// by the model's 700 KB echo, then "hi" on the same session. Sent whole,
// the history would outgrow the plugin boundary's limit on a request (4 MiB
// by gRPC's default; the simulated model takes 4 MiB too) and fail every
// later turn of the session; [agent] history_bytes keeps what is sent
// small, so every turn answers.
func TestLargeTurnsKeepTheSessionUsable(t *testing.T) {
	t.Parallel()
	clk := fakeclock.New(t0)
	h := startHost(t, hostOptions{simulate: true, clock: clk})
	const session = "large"

	if got := h.ask(t, session, "hello"); got != e2e.ReplyWaking {
		t.Fatalf("first ask: reply %q, want %q", got, e2e.ReplyWaking)
	}
	stepTo(t, clk, t0.Add(9*time.Minute), time.Minute)
	h.waitState(t, "ready")

	for i, c := range []string{"a", "b", "c"} {
		large := strings.Repeat(c, 700<<10)
		if got := h.ask(t, session, large); got != "echo: "+large {
			t.Fatalf("large turn %d: reply of %d bytes starting %.20q, want the echo of %d bytes", i+1, len(got), got, len(large))
		}
	}
	if got, want := h.ask(t, session, "hi"), "echo: hi"; got != want {
		t.Errorf("after three large turns: reply %q, want %q", got, want)
	}
	if got, want := h.ask(t, session, "still there?"), "echo: still there?"; got != want {
		t.Errorf("the turn after that: reply %q, want %q", got, want)
	}
}

// TestRefusalsBeforeTheHandlerAreJSON sends the host requests net/http
// refuses by itself, over raw TCP: each answer is JSON, like every other.
func TestRefusalsBeforeTheHandlerAreJSON(t *testing.T) {
	t.Parallel()
	h := startHost(t, hostOptions{simulate: true, clock: fakeclock.New(t0)})
	addr := strings.TrimPrefix(h.Base, "http://")
	tests := []struct {
		name       string
		raw        string
		wantStatus int
		wantBody   string
	}{
		{"a malformed request line", "GARBAGE\r\n\r\n", http.StatusBadRequest,
			`{"error":"malformed HTTP request: the request line or a header is invalid"}` + "\n"},
		{"headers over 1 MiB", "GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: " + strings.Repeat("a", http.DefaultMaxHeaderBytes+4096) + "\r\n\r\n",
			http.StatusRequestHeaderFieldsTooLarge, `{"error":"request headers are larger than 1048576 bytes"}` + "\n"},
		{"OPTIONS *", "OPTIONS * HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", http.StatusNotFound,
			`{"error":"no such endpoint; the API is POST /api/chat, GET /api/pods/{name}, GET /api/pods/{name}/events, GET /healthz and GET /readyz"}` + "\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			c.SetDeadline(time.Now().Add(requestTimeout))
			if _, err := io.WriteString(c, tt.raw); err != nil {
				t.Fatal(err)
			}
			res, err := http.ReadResponse(bufio.NewReader(c), nil)
			if err != nil {
				t.Fatal(err)
			}
			defer res.Body.Close()
			body, err := io.ReadAll(res.Body)
			if err != nil {
				t.Fatal(err)
			}
			if res.StatusCode != tt.wantStatus || string(body) != tt.wantBody {
				t.Errorf("answer %d %q, want %d %q", res.StatusCode, body, tt.wantStatus, tt.wantBody)
			}
			if ct := res.Header.Get("Content-Type"); ct != "application/json" {
				t.Errorf("Content-Type %q, want application/json", ct)
			}
		})
	}
}
