package chat_test

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/wakeonchat/wakeonchat/host/chat"
	"github.com/wakeonchat/wakeonchat/host/clock"
	"github.com/wakeonchat/wakeonchat/host/events"
	"github.com/wakeonchat/wakeonchat/host/turn"
	"github.com/wakeonchat/wakeonchat/plugins/pluginapi/plugintest"
)

// newCappedEvents is a chat.Server serving pod qwen's events from hub with
// at most limit streams open, logging into logs. Build it inside the
// synctest bubble.
func newCappedEvents(hub *events.Hub, limit int, logs *bytes.Buffer) http.Handler {
	return chat.New(chat.Config{
		Pods:            map[string]turn.PodView{"qwen": &countingPod{}},
		Events:          hub,
		Clock:           clock.Real(),
		Logger:          slog.New(slog.NewTextHandler(logs, nil)),
		Wake:            nineMinutes{},
		MaxEventStreams: limit,
	}).Handler()
}

// Past server.max_event_streams a new stream is refused at once with a 503
// that names the cap, and a Retry-After; a HEAD opens no stream and is
// never refused, and other subscribers of the hub (held OpenAI requests)
// do not count.
func TestEventStreamCap(t *testing.T) {
	refused := func(limit string) string {
		return `{"error":"too many event streams open (the cap is ` + limit + `, server.max_event_streams); try again later"}` + "\n"
	}
	tests := []struct {
		name       string
		limit      int
		streams    int // event streams open before the request
		others     int // other subscriptions to the hub: held requests
		method     string
		status     int
		body       string // "" for a stream
		retryAfter string
	}{
		{name: "under the cap", limit: 2, streams: 1, method: http.MethodGet, status: 200},
		{name: "at the cap", limit: 2, streams: 2, method: http.MethodGet, status: 503, body: refused("2"), retryAfter: "30"},
		{name: "a cap of one", limit: 1, streams: 1, method: http.MethodGet, status: 503, body: refused("1"), retryAfter: "30"},
		{name: "HEAD at the cap", limit: 1, streams: 1, method: http.MethodHead, status: 200},
		{name: "held requests do not count", limit: 1, others: 3, method: http.MethodGet, status: 200},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) {
				hub := events.New(0)
				h := newCappedEvents(hub, tt.limit, &bytes.Buffer{})
				ctx, leave := context.WithCancel(context.Background())
				var open sync.WaitGroup
				for range tt.streams {
					open.Go(func() {
						h.ServeHTTP(newStreamWriter(), httptest.NewRequestWithContext(ctx, http.MethodGet, "/api/pods/qwen/events", nil))
					})
				}
				for range tt.others {
					_, sub := hub.Subscribe("qwen")
					defer sub.Close()
				}
				synctest.Wait()

				w := newStreamWriter()
				open.Go(func() {
					h.ServeHTTP(w, httptest.NewRequestWithContext(ctx, tt.method, "/api/pods/qwen/events", nil))
				})
				synctest.Wait()
				w.mu.Lock()
				status, body := w.status, w.body.String()
				w.mu.Unlock()
				leave()
				open.Wait()

				if tt.body == "" && strings.HasPrefix(body, "data: ") {
					body = "" // a stream, as wanted; TestEventStream reads it
				}
				type answer struct {
					Status           int
					Body, RetryAfter string
				}
				want := answer{tt.status, tt.body, tt.retryAfter}
				got := answer{status, body, w.Header().Get("Retry-After")}
				if diff := cmp.Diff(want, got); diff != "" {
					t.Errorf("answer (-want +got):\n%s", diff)
				}
			})
		})
	}
}

// A stream that ends frees its place under the cap; the refusals of a
// burst are logged once a minute at most, with how many there were.
func TestEventStreamCapFreedAndLoggedOnce(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		hub := events.New(0)
		logs := &bytes.Buffer{}
		h := newCappedEvents(hub, 1, logs)
		get := func(ctx context.Context) int {
			w := httptest.NewRecorder()
			h.ServeHTTP(w, httptest.NewRequestWithContext(ctx, http.MethodGet, "/api/pods/qwen/events", nil))
			return w.Code
		}
		ctx, leave := context.WithCancel(context.Background())
		first := make(chan int, 1)
		go func() { first <- get(ctx) }()
		synctest.Wait()

		refusedGet := func() int {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second) // a stream opened wrongly ends
			defer cancel()
			return get(ctx)
		}
		var got []int
		for range 3 {
			got = append(got, refusedGet())
		}
		warns := strings.Count(logs.String(), "event streams at their cap")
		time.Sleep(time.Minute)
		got = append(got, refusedGet())
		leave()
		got = append(got, <-first)

		gone, cancel := context.WithCancel(context.Background())
		cancel() // a client that has left at once: the stream opens and ends
		got = append(got, get(gone))

		if diff := cmp.Diff([]int{503, 503, 503, 503, 200, 200}, got); diff != "" {
			t.Errorf("answers (-want +got):\n%s", diff)
		}
		lines := strings.Split(strings.TrimSpace(logs.String()), "\n")
		if warns != 1 || len(lines) != 2 ||
			!strings.Contains(lines[0], `level=WARN msg="event streams at their cap; refusing new ones" cap=1 refused=1`) ||
			!strings.Contains(lines[1], `level=WARN msg="event streams at their cap; refusing new ones" cap=1 refused=3`) {
			t.Errorf("want one line for the first three refusals and one a minute later counting the rest, got:\n%s", logs)
		}
	})
}

// stalledStream is pod qwen's event stream served by a real http.Server,
// whose client read the head and the first event and then stops reading.
type stalledStream struct {
	hub    *events.Hub
	logs   *bytes.Buffer
	conn   net.Conn
	rest   *bufio.Reader // the rest of the body, unread
	closed chan struct{} // closed when the server closed the connection
	srv    *http.Server
}

// openStalled opens the stream; build it inside the synctest bubble and
// call stop before the bubble ends.
func openStalled(t *testing.T, hub *events.Hub) *stalledStream {
	t.Helper()
	s := &stalledStream{hub: hub, logs: &bytes.Buffer{}, closed: make(chan struct{})}
	l := plugintest.NewPipeListener()
	var once sync.Once
	s.srv = &http.Server{
		Handler: newCappedEvents(hub, 0, s.logs),
		ConnState: func(_ net.Conn, st http.ConnState) {
			if st == http.StateClosed {
				once.Do(func() { close(s.closed) })
			}
		},
	}
	go func() { _ = s.srv.Serve(l) }()
	s.conn = l.Dial()
	req := httptest.NewRequest(http.MethodGet, "/api/pods/qwen/events", nil)
	go func() { _ = req.Write(s.conn) }()
	resp, err := http.ReadResponse(bufio.NewReader(s.conn), req)
	if err != nil {
		t.Fatal(err)
	}
	s.rest = bufio.NewReader(resp.Body)
	for {
		line, err := s.rest.ReadString('\n')
		if err != nil {
			t.Fatalf("the first event: %v", err)
		}
		if line == "\n" {
			return s // the first event is read: the client reads no more
		}
	}
}

// isClosed reports whether the server has closed the connection, once
// everything in the bubble has settled.
func (s *stalledStream) isClosed() bool {
	synctest.Wait()
	select {
	case <-s.closed:
		return true
	default:
		return false
	}
}

// unread is what the client gets when it reads again: everything the
// server still wrote, up to the end of the body.
func (s *stalledStream) unread() string {
	b, _ := io.ReadAll(s.rest)
	return string(b)
}

func (s *stalledStream) stop() {
	s.srv.Close()
	s.conn.Close()
}

// A client that reads nothing (the write of a keepalive blocks) is closed
// once a write has waited 30 s, with no end event (its connection takes no
// more bytes), and its subscription is freed; the hub's other subscribers
// keep theirs. It is logged.
func TestEventStreamNotDrainedIsClosed(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		hub := events.New(0)
		_, held := hub.Subscribe("qwen") // another subscriber, such as a held request
		defer held.Close()
		s := openStalled(t, hub)
		defer s.stop()
		synctest.Wait()
		if n := hub.Subscribers("qwen"); n != 2 {
			t.Fatalf("%d subscribers with the stream open, want 2", n)
		}

		time.Sleep(15*time.Second + 30*time.Second - time.Millisecond) // the keepalive at 15 s blocks
		if s.isClosed() {
			t.Fatal("the stream was closed before its blocked write had waited 30 s")
		}
		time.Sleep(2 * time.Millisecond)
		if !s.isClosed() {
			t.Fatal("the stream is open 30 s after its write blocked")
		}
		if n := hub.Subscribers("qwen"); n != 1 {
			t.Errorf("%d subscribers after the stream was closed, want 1 (the other)", n)
		}
		if rest := s.unread(); rest != "" {
			t.Errorf("the client read %q after the close, want nothing", rest)
		}
		if !strings.Contains(s.logs.String(), `level=INFO msg="event stream not drained for pod qwen; closed" pod=qwen`) {
			t.Errorf("no line for the closed stream in the log:\n%s", s.logs)
		}
	})
}

// An end event (here at shutdown) waits 5 s for a client that reads
// nothing, not a normal write's 30 s: such a client does not hold the
// shutdown up.
func TestEventStreamEndDoesNotWaitLong(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		hub := events.New(0)
		s := openStalled(t, hub)
		defer s.stop()
		time.Sleep(10 * time.Second)
		hub.Close() // the end event's write blocks

		time.Sleep(5*time.Second - time.Millisecond)
		if s.isClosed() {
			t.Fatal("the stream was closed before its end event had waited 5 s")
		}
		time.Sleep(2 * time.Millisecond)
		if !s.isClosed() {
			t.Fatal("the stream is open 5 s after its end event blocked")
		}
	})
}
