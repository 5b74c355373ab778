package faulttest

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// The routes the scripted servers answer.
const (
	routeGetPod   = "GET /api/pods/qwen"
	routeStart    = "POST /api/pods/qwen/start"
	routeComplete = "POST /v1/chat/completions"
)

// handler is one scripted answer. done is closed when the server is torn
// down, so that a hanging handler always returns.
type handler func(w http.ResponseWriter, r *http.Request, done <-chan struct{})

// message is one chat message of a completion request.
type message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// request is what a scripted server received.
type request struct {
	Route    string
	Token    string // X-Rig-Operator-Token
	Auth     string // Authorization
	Messages []message
}

// server is an httptest server whose answers a row scripts per route: each
// request takes the next queued handler of its route, and the last one
// answers every request after it. It records every request.
type server struct {
	t    *testing.T
	srv  *httptest.Server
	url  string
	done chan struct{}

	mu     sync.Mutex
	routes map[string][]handler
	got    []request
	isDown bool // down, until up
	closed bool
}

func newServer(t *testing.T) *server {
	t.Helper()
	s := &server{t: t, done: make(chan struct{}), routes: map[string][]handler{}}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	s.url = s.srv.URL
	t.Cleanup(s.close)
	return s
}

// on scripts route: the handlers answer its next requests in order, the last
// one all later requests.
func (s *server) on(route string, hs ...handler) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.routes[route] = hs
}

func (s *server) serve(w http.ResponseWriter, r *http.Request) {
	route := r.Method + " " + r.URL.Path
	rec := request{Route: route, Token: r.Header.Get("X-Rig-Operator-Token"), Auth: r.Header.Get("Authorization")}
	if route == routeComplete {
		msgs, err := decodeMessages(r)
		if err != nil {
			s.t.Errorf("%s: undecodable completion request: %v", route, err)
		}
		rec.Messages = msgs
	}
	s.mu.Lock()
	s.got = append(s.got, rec)
	hs := s.routes[route]
	var h handler
	switch len(hs) {
	case 0:
	case 1:
		h = hs[0]
	default:
		h, s.routes[route] = hs[0], hs[1:]
	}
	s.mu.Unlock()
	if h == nil {
		http.Error(w, "no such route in this row's script", http.StatusNotFound)
		return
	}
	h(w, r, s.done)
}

// count is how many requests route has received.
func (s *server) count(route string) int { return len(s.requests(route)) }

// requests are route's requests so far, oldest first; "" for every route.
func (s *server) requests(route string) []request {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []request
	for _, r := range s.got {
		if route == "" || r.Route == route {
			out = append(out, r)
		}
	}
	return out
}

// down closes the server's port, as a conductor that is not running; up
// opens it again on the same address.
func (s *server) down() {
	s.mu.Lock()
	srv := s.srv
	s.isDown = true
	s.mu.Unlock()
	srv.Close()
}

func (s *server) up() {
	s.mu.Lock()
	old, reopen := s.srv, s.isDown && !s.closed
	s.mu.Unlock()
	if !reopen {
		return
	}
	old.Close() // after downAfter, the old server still has its connections to close
	ln, err := net.Listen("tcp", strings.TrimPrefix(s.url, "http://"))
	if err != nil {
		s.t.Fatalf("reopening %s: %v", s.url, err)
	}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(s.serve))
	srv.Listener.Close()
	srv.Listener = ln
	srv.Start()
	s.mu.Lock()
	s.srv, s.isDown = srv, false
	s.mu.Unlock()
}

// downAfter answers with h on a connection it closes after the answer, and
// closes the server's port before the answer leaves: the client's next
// request finds nothing listening.
func (s *server) downAfter(h handler) handler {
	return func(w http.ResponseWriter, r *http.Request, done <-chan struct{}) {
		w.Header().Set("Connection", "close")
		h(w, r, done)
		s.mu.Lock()
		ln := s.srv.Listener
		s.isDown = true
		s.mu.Unlock()
		ln.Close()
	}
}

// close releases hanging handlers and stops the server for good. It may be
// called more than once.
func (s *server) close() {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	s.closed = true
	close(s.done)
	srv := s.srv
	s.mu.Unlock()
	srv.Close()
}

// --- conductor answers ---

// podView is the conductor's GET /api/pods/{name} body.
type podView struct {
	Name       string `json:"name"`
	Status     string `json:"status"`
	IsRunning  bool   `json:"isRunning"`
	ProxyURL   string `json:"proxyUrl"`
	PodID      string `json:"podId"`
	ReadySince string `json:"readySince,omitempty"`
	Lookup     string `json:"lookup"`
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

// running answers that the pod is RUNNING behind model, ready since since.
func running(model *server, since time.Time) handler {
	return func(w http.ResponseWriter, _ *http.Request, _ <-chan struct{}) {
		writeJSON(w, http.StatusOK, podView{
			Name: "qwen", Status: "RUNNING", IsRunning: true, ProxyURL: model.url, PodID: "pod-1",
			ReadySince: since.UTC().Format(time.RFC3339), Lookup: "FOUND",
		})
	}
}

// booting answers that the pod is RUNNING behind model with no readySince:
// its model has not answered yet.
func booting(model *server) handler {
	return func(w http.ResponseWriter, _ *http.Request, _ <-chan struct{}) {
		writeJSON(w, http.StatusOK, podView{
			Name: "qwen", Status: "RUNNING", IsRunning: true, ProxyURL: model.url, PodID: "pod-1", Lookup: "FOUND",
		})
	}
}

// exited answers that the pod is EXITED (asleep).
func exited() handler {
	return func(w http.ResponseWriter, _ *http.Request, _ <-chan struct{}) {
		writeJSON(w, http.StatusOK, podView{Name: "qwen", Status: "EXITED", PodID: "pod-1", Lookup: "FOUND"})
	}
}

// unreadable answers that the conductor cannot read the pod's state.
func unreadable() handler {
	return func(w http.ResponseWriter, _ *http.Request, _ <-chan struct{}) {
		writeJSON(w, http.StatusOK, podView{Name: "qwen", Status: "UNKNOWN", Lookup: "UNREADABLE"})
	}
}

// status answers code with body as contentType.
func status(code int, contentType, body string) handler {
	return func(w http.ResponseWriter, _ *http.Request, _ <-chan struct{}) {
		w.Header().Set("Content-Type", contentType)
		w.WriteHeader(code)
		io.WriteString(w, body)
	}
}

// hang never answers: it holds the request until the client gives up or
// the server is torn down.
func hang() handler {
	return func(_ http.ResponseWriter, r *http.Request, done <-chan struct{}) {
		select {
		case <-r.Context().Done():
		case <-done:
		}
	}
}

// fault adds the X-Fault header that makes testdata/faultplugin crash or
// hang once it has received the answer of h.
func fault(kind string, h handler) handler {
	return func(w http.ResponseWriter, r *http.Request, done <-chan struct{}) {
		w.Header().Set("X-Fault", kind)
		h(w, r, done)
	}
}

// --- model answers ---

// completion is an OpenAI chat completion body whose answer is content.
func completion(content string) string {
	b, _ := json.Marshal(map[string]any{
		"object":  "chat.completion",
		"choices": []any{map[string]any{"index": 0, "message": map[string]string{"role": "assistant", "content": content}}},
	})
	return string(b)
}

// echo is the model's reply to message.
func echo(message string) string { return "echo: " + message }

// answer is a working model: it answers "echo: " and the last message.
func answer() handler {
	return func(w http.ResponseWriter, r *http.Request, _ <-chan struct{}) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, completion(echo(lastUserMessage(r))))
	}
}

// lastUserMessage is the content of r's last message.
func lastUserMessage(r *http.Request) string {
	msgs, _ := decodeMessages(r)
	if len(msgs) == 0 {
		return ""
	}
	return msgs[len(msgs)-1].Content
}

// decodeMessages reads a completion request's messages and leaves r's body
// readable again.
func decodeMessages(r *http.Request) ([]message, error) {
	b, err := io.ReadAll(r.Body)
	r.Body = io.NopCloser(bytes.NewReader(b))
	if err != nil {
		return nil, err
	}
	var body struct {
		Messages []message `json:"messages"`
	}
	if err := json.Unmarshal(b, &body); err != nil {
		return nil, err
	}
	return body.Messages, nil
}

// hijack takes over r's connection; the handler then speaks raw HTTP/1.1.
func hijack(w http.ResponseWriter) (net.Conn, *bufio.ReadWriter) {
	conn, rw, err := http.NewResponseController(w).Hijack()
	if err != nil {
		panic(fmt.Sprintf("hijack: %v", err))
	}
	return conn, rw
}

// reset closes the connection with a TCP RST before any response: the
// client sees ECONNRESET, like a proxy with nothing behind it.
func reset() handler {
	return func(w http.ResponseWriter, _ *http.Request, _ <-chan struct{}) {
		conn, _ := hijack(w)
		if tc, ok := conn.(*net.TCPConn); ok {
			tc.SetLinger(0)
		}
		conn.Close()
	}
}

// truncated answers 200 with a Content-Length larger than what it writes:
// half a completion, slowly, then the connection closes. The model has
// processed the payload; its answer dies on the way.
func truncated() handler {
	return func(w http.ResponseWriter, _ *http.Request, done <-chan struct{}) {
		body := completion("this answer never arrives whole")
		conn, rw := hijack(w)
		defer conn.Close()
		fmt.Fprintf(rw, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", len(body))
		rw.WriteString(body[:len(body)/2])
		rw.Flush()
		select {
		case <-time.After(20 * time.Millisecond): // slow: the body trickles, then stops
		case <-done:
		}
	}
}
