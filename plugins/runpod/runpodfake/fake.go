// Package runpodfake is a fake of the part of RunPod's REST API v2 that
// the RunPod GPU plugin uses, built from RunPod's published OpenAPI schema
// (runpod/docs, api-reference-v2/openapi.json): GET /v2/pods/{id} and
// POST /v2/pods/{id}/action with {"action":"start"} or {"action":"stop"}.
//
// A Server is an http.Handler: serve it with httptest.NewServer and point
// the plugin's WAKE_RUNPOD_URL at the server's URL + "/v2". It checks the
// bearer key, keeps each pod's status and moves it as RunPod does (a start
// from EXITED or ERROR is STARTING, then RUNNING after BootTime; a stop is
// EXITED; an action the status does not allow is 409), and answers the
// errors RunPod documents as RFC 9457 problems. Fail queues a canned
// answer for the next request of one kind on one pod, for the errors that
// cannot be provoked: 403, 429, 5xx, a machine with no free GPU, a request
// held until the client leaves, a connection cut.
//
// It is for tests, the plugin's and the host's end-to-end ones, and imports
// only the standard library.
package runpodfake

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// The statuses of a pod (PodStatus in the schema).
const (
	Provisioning = "PROVISIONING"
	Starting     = "STARTING"
	Running      = "RUNNING"
	Exited       = "EXITED"
	Error        = "ERROR"
	Terminated   = "TERMINATED"
)

// Op is the kind of request a Fail answers.
type Op string

// The requests the fake serves.
const (
	Get   Op = "get"
	Start Op = "start"
	Stop  Op = "stop"
)

// Answer is a canned answer.
type Answer struct {
	Status int
	Header http.Header
	Body   string
	// Hang holds the request until the client goes away; nothing is
	// answered.
	Hang bool
	// Cut closes the connection once the request was read whole, without
	// an answer.
	Cut bool
}

// Problem is an RFC 9457 problem answer, RunPod's v2 error body.
func Problem(status int, detail string) Answer {
	b, _ := json.Marshal(map[string]any{"title": http.StatusText(status), "status": status, "detail": detail})
	return Answer{Status: status, Header: http.Header{"Content-Type": {"application/problem+json"}}, Body: string(b)}
}

// NoFreeGPU is RunPod's refusal to start a stopped pod whose machine has
// no free GPU. The API reference does not list it; this is its wording as
// seen on live starts (a 400 from v2, reported as 500 from v1).
func NoFreeGPU() Answer {
	return Problem(http.StatusBadRequest, "There are not enough free GPUs on the host machine to start this pod.")
}

// RateLimited is RunPod's 429, with the seconds to wait in Retry-After.
func RateLimited(retryAfter int) Answer {
	a := Problem(http.StatusTooManyRequests, "rate limit exceeded for the minute window")
	a.Header.Set("Retry-After", strconv.Itoa(retryAfter))
	return a
}

// Request is one request the fake saw.
type Request struct {
	Method        string
	Path          string
	Authorization string
	ContentType   string
	Body          string
}

type pod struct {
	status    string
	startedAt time.Time
}

// Server is the fake. Set its fields before serving; its methods are safe
// for concurrent use.
type Server struct {
	// Key is the API key it accepts as "Authorization: Bearer Key".
	Key string
	// BootTime is how long a started pod is STARTING before it is
	// RUNNING; zero means RUNNING at once.
	BootTime time.Duration

	mu     sync.Mutex
	pods   map[string]*pod
	faults map[string][]Answer
	reqs   []Request
}

// New returns a Server that accepts key and knows no pod.
func New(key string) *Server {
	return &Server{Key: key, pods: map[string]*pod{}, faults: map[string][]Answer{}}
}

// AddPod adds a pod, or sets its status.
func (s *Server) AddPod(id, status string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := &pod{status: status}
	if status == Starting || status == Running {
		p.startedAt = time.Now()
	}
	s.pods[id] = p
}

// Status is the pod's status as a GET would answer it now; empty when
// there is no such pod.
func (s *Server) Status(id string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if p := s.pods[id]; p != nil {
		return s.status(p)
	}
	return ""
}

// Fail makes the next request of op on pod id get a instead of the fake's
// own answer; several calls queue answers in order.
func (s *Server) Fail(op Op, id string, a Answer) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults[string(op)+" "+id] = append(s.faults[string(op)+" "+id], a)
}

// Requests returns every request seen so far.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.reqs...)
}

func (s *Server) status(p *pod) string {
	if p.status == Starting && time.Since(p.startedAt) >= s.BootTime {
		p.status = Running
	}
	return p.status
}

// ServeHTTP serves GET /v2/pods/{id} and POST /v2/pods/{id}/action.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	s.mu.Lock()
	s.reqs = append(s.reqs, Request{
		Method: r.Method, Path: r.URL.EscapedPath(), Authorization: r.Header.Get("Authorization"),
		ContentType: r.Header.Get("Content-Type"), Body: string(body),
	})
	s.mu.Unlock()

	rest, ok := strings.CutPrefix(r.URL.Path, "/v2/pods/")
	id, action, _ := strings.Cut(rest, "/")
	var op Op
	switch {
	case !ok || id == "" || (action != "" && action != "action"):
		write(w, Problem(http.StatusNotFound, "no such path"))
		return
	case r.Method == http.MethodGet && action == "":
		op = Get
	case r.Method == http.MethodPost && action == "action":
		var in struct {
			Action string `json:"action"`
		}
		if err := json.Unmarshal(body, &in); err != nil {
			write(w, Problem(http.StatusBadRequest, "request body is not JSON"))
			return
		}
		switch in.Action {
		case "start":
			op = Start
		case "stop":
			op = Stop
		default:
			write(w, Problem(http.StatusUnprocessableEntity, "Request validation failed."))
			return
		}
	default:
		w.Header().Set("Allow", "GET, POST")
		write(w, Problem(http.StatusMethodNotAllowed, "The requested method is not allowed for this path."))
		return
	}

	auth := r.Header.Get("Authorization")
	switch {
	case auth == "":
		write(w, Problem(http.StatusUnauthorized, "missing bearer token"))
		return
	case auth != "Bearer "+s.Key:
		write(w, Problem(http.StatusUnauthorized, "invalid bearer token"))
		return
	}

	s.mu.Lock()
	key := string(op) + " " + id
	if q := s.faults[key]; len(q) > 0 {
		a := q[0]
		s.faults[key] = q[1:]
		s.mu.Unlock()
		s.fail(w, r, a)
		return
	}
	defer s.mu.Unlock()
	p := s.pods[id]
	if p == nil {
		write(w, Problem(http.StatusNotFound, "resource not found"))
		return
	}
	status := s.status(p)
	switch {
	case op == Start && (status == Exited || status == Error):
		p.status, p.startedAt = Starting, time.Now()
	case op == Stop && (status == Running || status == Provisioning || status == Starting):
		p.status = Exited
	case op != Get:
		write(w, Problem(http.StatusConflict, fmt.Sprintf("action %s is not valid for pod status %s", op, status)))
		return
	}
	write(w, Answer{Status: http.StatusOK, Header: http.Header{"Content-Type": {"application/json"}}, Body: podBody(id, s.status(p), p.startedAt)})
}

// fail writes a canned answer.
func (s *Server) fail(w http.ResponseWriter, r *http.Request, a Answer) {
	switch {
	case a.Hang:
		<-r.Context().Done()
	case a.Cut:
		if h, ok := w.(http.Hijacker); ok {
			if conn, _, err := h.Hijack(); err == nil {
				_ = conn.Close()
				return
			}
		}
		panic(http.ErrAbortHandler)
	default:
		write(w, a)
	}
}

func write(w http.ResponseWriter, a Answer) {
	for k, v := range a.Header {
		w.Header()[k] = v
	}
	w.WriteHeader(a.Status)
	_, _ = io.WriteString(w, a.Body)
}

// podBody is a v2 Pod object with every field the schema requires, as
// RunPod's example shows it.
func podBody(id, status string, startedAt time.Time) string {
	actions := map[string][]string{
		Running: {"stop", "restart", "terminate"}, Exited: {"start", "terminate"}, Error: {"start", "terminate"},
		Provisioning: {"stop", "terminate"}, Starting: {"stop", "terminate"},
	}[status]
	if actions == nil {
		actions = []string{}
	}
	p := map[string]any{
		"id": id, "name": "wake-" + id, "status": status, "actions": actions,
		"image": "vllm/vllm-openai:latest", "args": "", "disk": 50,
		"mounts": map[string]any{"persistent": map[string]any{"size": 20, "path": "/workspace"}},
		"ports":  []string{"8000/http", "22/tcp"},
		"env":    map[string]string{}, "registry": nil,
		"gpu":   map[string]any{"id": "NVIDIA GeForce RTX 4090", "count": 1},
		"cloud": "SECURE", "dataCenterId": "US-KS-2", "cudaVersion": "12.8",
		"ssh":      map[string]any{},
		"template": nil, "cost": 0.0, "locked": false,
		"globalNetworking": map[string]any{"enabled": false},
		"runtime":          nil,
		"createdAt":        "2026-06-01T12:00:00Z", "startedAt": nil,
	}
	if status == Running {
		p["cost"] = 0.44
		p["runtime"] = map[string]any{"uptime": int(time.Since(startedAt).Seconds()), "ports": []any{}}
	}
	if !startedAt.IsZero() {
		p["startedAt"] = startedAt.UTC().Format(time.RFC3339)
	}
	b, _ := json.Marshal(p)
	return string(b)
}
