package chat_test

import (
	"bufio"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/wakeonchat/wakeonchat/host/chat"
)

// rawServer serves h from a real http.Server on loopback,
// through chat.Listener, as the host does; it returns the address.
func rawServer(t *testing.T, h http.Handler, maxHeaderBytes int, readHeaderTimeout time.Duration) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	// conns counts the connections still served: after a 431 net/http
	// lingers half a second on a connection before it closes it.
	var conns sync.WaitGroup
	srv := &http.Server{
		Handler: h, MaxHeaderBytes: maxHeaderBytes, ReadHeaderTimeout: readHeaderTimeout,
		DisableGeneralOptionsHandler: true,
		ConnState: func(_ net.Conn, s http.ConnState) {
			switch s {
			case http.StateNew:
				conns.Add(1)
			case http.StateClosed, http.StateHijacked:
				conns.Done()
			}
		},
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(chat.Listener(ln, maxHeaderBytes)) }()
	t.Cleanup(func() {
		srv.Close()
		if err := <-served; !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("Serve: %v", err)
		}
		conns.Wait()
	})
	return ln.Addr().String()
}

// rawAnswer is one answer read off a raw connection.
type rawAnswer struct {
	Status      int
	ContentType string
	Body        string
	Close       bool // the server closed the connection after it
}

// sendRaw writes raw on a new connection and reads the answers until the
// server closes it (or, with keepAlive answers, reads that many).
func sendRaw(t *testing.T, addr, raw string, answers int) []rawAnswer {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(c, raw); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(c)
	var got []rawAnswer
	for len(got) < answers {
		res, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("answer %d: %v", len(got)+1, err)
		}
		b, err := io.ReadAll(res.Body)
		res.Body.Close()
		if err != nil {
			t.Fatalf("answer %d body: %v", len(got)+1, err)
		}
		got = append(got, rawAnswer{Status: res.StatusCode, ContentType: res.Header.Get("Content-Type"), Body: string(b), Close: res.Close})
	}
	if rest, err := io.ReadAll(br); err != nil || len(rest) != 0 {
		t.Errorf("after the answers: %q, %v; want the connection closed with nothing more", rest, err)
	}
	return got
}

// TestNetHTTPErrorsAreJSON sends what net/http refuses before any handler
// runs, over raw TCP to a real http.Server: every answer is JSON naming
// what was wrong, with net/http's status, and closes the connection.
func TestNetHTTPErrorsAreJSON(t *testing.T) {
	t.Parallel()
	d := newDoor(t, nil)
	const maxHeader = 1 << 10
	addr := rawServer(t, d.handler, maxHeader, 5*time.Second)

	badRequest := `{"error":"malformed HTTP request: the request line or a header is invalid"}` + "\n"
	tests := []struct {
		name       string
		raw        string
		wantStatus int
		wantBody   string
	}{
		{"a request line that is not one", "GARBAGE\r\n\r\n", 400, badRequest},
		{"a method with a bad character", "G@T / HTTP/1.1\r\nHost: x\r\n\r\n", 400, badRequest},
		{"a bad URL", "GET %zz HTTP/1.1\r\nHost: x\r\n\r\n", 400, badRequest},
		{"two Content-Lengths", "POST /api/chat HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n", 400, badRequest},
		{"a Content-Length that is no number", "POST /api/chat HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n", 400, badRequest},
		{"no Host", "GET /healthz HTTP/1.1\r\n\r\n", 400,
			`{"error":"malformed HTTP request: missing required Host header"}` + "\n"},
		{"a malformed Host", "GET /healthz HTTP/1.1\r\nHost: a b\r\n\r\n", 400,
			`{"error":"malformed HTTP request: malformed Host header"}` + "\n"},
		{"a header name with a space", "GET /healthz HTTP/1.1\r\nHost: x\r\nBad Header: y\r\n\r\n", 400,
			`{"error":"malformed HTTP request: invalid header name"}` + "\n"},
		{"headers over MaxHeaderBytes", "GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: " + strings.Repeat("a", maxHeader+4096) + "\r\n\r\n", 431,
			`{"error":"request headers are larger than 1024 bytes"}` + "\n"},
		{"an unsupported Transfer-Encoding", "POST /api/chat HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip\r\n\r\n", 501,
			`{"error":"the Transfer-Encoding is not supported (only chunked is)"}` + "\n"},
		{"HTTP/9.9", "GET /healthz HTTP/9.9\r\nHost: x\r\n\r\n", 505,
			`{"error":"the HTTP version is not supported; use HTTP/1.1"}` + "\n"},
		{"an Expect other than 100-continue", "POST /api/chat HTTP/1.1\r\nHost: x\r\nExpect: something\r\nContent-Length: 0\r\n\r\n", 417,
			`{"error":"the Expect header is not supported (only 100-continue is)"}` + "\n"},
		// Answered by the handler, since DisableGeneralOptionsHandler: not
		// net/http's empty 200.
		{"OPTIONS *", "OPTIONS * HTTP/1.1\r\nHost: x\r\n\r\n", 404,
			`{"error":"no such endpoint; the API is POST /api/chat, GET /api/pods/{name}, GET /api/pods/{name}/events, GET /healthz and GET /readyz"}` + "\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			raw := tt.raw
			if tt.wantStatus == 404 {
				raw = strings.Replace(raw, "\r\n\r\n", "\r\nConnection: close\r\n\r\n", 1)
			}
			got := sendRaw(t, addr, raw, 1)
			want := []rawAnswer{{Status: tt.wantStatus, ContentType: "application/json", Body: tt.wantBody, Close: true}}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("answer (-want +got):\n%s", diff)
			}
		})
	}
	if calls, n := d.turns.made(), d.model.calls.Load(); calls != nil || n != 0 {
		t.Errorf("refused requests reached the turn service (%q) and the model (%d calls)", calls, n)
	}
}

// TestListenerPassesAnswersThrough: through chat.Listener, handler answers
// on one kept-alive connection arrive whole, a large one included, however
// they are split into writes.
func TestListenerPassesAnswersThrough(t *testing.T) {
	t.Parallel()
	d := newDoor(t, nil)
	addr := rawServer(t, d.handler, 0, 5*time.Second)

	large := strings.Repeat("HTTP/1.1 400 Bad Request\r\n", 2000) // the model's answer echoes it
	body := `{"message":` + jsonString(large) + `,"sessionId":"s1"}`
	raw := "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n" +
		"POST /api/chat HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n" + body +
		"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
	got := sendRaw(t, addr, raw, 3)
	health := rawAnswer{Status: 200, ContentType: "application/json", Body: `{"status":"ok"}` + "\n"}
	closing := health
	closing.Close = true
	want := []rawAnswer{
		health,
		{Status: 200, ContentType: "application/json", Body: `{"reply":` + jsonString("answer to: "+large) + `,"sessionId":"s1"}` + "\n"},
		closing,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("answers (-want +got):\n%.2000s", diff)
	}
}

// TestHeaderTimeoutClosesSilently documents the one refusal that cannot be
// JSON: a request whose headers do not arrive within ReadHeaderTimeout gets
// no answer at all; net/http closes the connection.
func TestHeaderTimeoutClosesSilently(t *testing.T) {
	t.Parallel()
	addr := rawServer(t, newDoor(t, nil).handler, 0, 100*time.Millisecond)
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	io.WriteString(c, "GET /healthz HTTP/1.1\r\nHost: x\r\n") // and never the blank line
	rest, err := io.ReadAll(c)
	if err != nil || len(rest) != 0 {
		t.Errorf("after the header timeout: %q, %v; want the connection closed with no answer", rest, err)
	}
}

func jsonString(s string) string {
	b, err := json.Marshal(s)
	if err != nil {
		panic(err)
	}
	return string(b)
}
