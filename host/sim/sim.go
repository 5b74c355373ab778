package sim

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"time"
)

// holdPoll is how often, in real time, a held start re-reads the clock.
const holdPoll = 10 * time.Millisecond

// shutdownGrace bounds how long Close waits for handlers to finish.
const shutdownGrace = 2 * time.Second

// Sim is a simulated conductor and model. Create it with New; it is safe for
// concurrent use.
type Sim struct {
	clock Clock
	tm    timing
	hold  bool
	mux   *http.ServeMux
	// onAnswer is Config.OnAnswer; nil when untraced.
	onAnswer func(AnswerTimes)

	closed    chan struct{} // closed by Close: unblocks held starts
	closeOnce sync.Once
	closeErr  error

	mu          sync.Mutex
	pods        map[string]*pod // by name
	byID        map[string]*pod // by every pod id ever issued
	seq         int             // pod ids issued
	completions int             // completions answered, for response ids
	turnedAway  map[gate]int    // completions the proxy answered for a pod not ready, by gate
	stream      streamState
	srv         *http.Server
	url         string
}

// pod is one named pod and its test controls.
type pod struct {
	name       string
	cur        *wake   // the latest wake; nil before the first start
	past       []*wake // every wake before cur, oldest first
	lookups    int     // GET /api/pods/{name} requests
	lastPodID  string  // the last pod that came to exist, shown while a new one is created
	starts     int
	stops      int // POST /api/pods/{name}/stop requests
	forceStart int
	neverReady bool
}

// New returns a Sim for cfg. It does not listen: call Start, or serve Handler.
func New(cfg Config) *Sim {
	s := &Sim{
		clock:      cfg.Clock,
		tm:         cfg.timing(),
		hold:       !cfg.NoStartHold,
		onAnswer:   cfg.OnAnswer,
		closed:     make(chan struct{}),
		pods:       make(map[string]*pod),
		turnedAway: make(map[gate]int),
		byID:       make(map[string]*pod),
	}
	if s.clock == nil {
		s.clock = realClock{}
	}
	names := cfg.Pods
	if len(names) == 0 {
		names = []string{DefaultPod}
	}
	for _, n := range names {
		if s.pods[n] == nil {
			s.pods[n] = &pod{name: n}
		}
	}
	s.mux = http.NewServeMux()
	s.mux.HandleFunc("GET /api/pods/{name}", s.handleGet)
	s.mux.HandleFunc("POST /api/pods/{name}/start", s.handleStart)
	s.mux.HandleFunc("POST /api/pods/{name}/stop", s.handleStop)
	s.mux.HandleFunc("POST /proxy/{podId}/v1/chat/completions", s.handleCompletion)
	s.mux.HandleFunc("GET /proxy/{podId}/v1/models", s.handleModels)
	s.mux.HandleFunc("GET /proxy/{podId}/health", s.handleHealth)
	s.mux.HandleFunc("/proxy/{podId}/{rest...}", s.handleProxyOther)
	return s
}

// Start listens on 127.0.0.1:0 and serves in the background. It fails if the
// Sim was already started or closed.
func (s *Sim) Start() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	select {
	case <-s.closed:
		return errors.New("sim: start after close")
	default:
	}
	if s.srv != nil {
		return errors.New("sim: already started")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return fmt.Errorf("sim: listen: %w", err)
	}
	srv := &http.Server{Handler: s.mux, ReadHeaderTimeout: 10 * time.Second}
	s.srv = srv
	s.url = "http://" + ln.Addr().String()
	// Serve returns ErrServerClosed after Close; there is no one else to tell.
	go func() { _ = srv.Serve(ln) }()
	return nil
}

// URL is the base URL of the conductor, e.g. http://127.0.0.1:PORT, or ""
// before Start. Proxy URLs live under it.
func (s *Sim) URL() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.url
}

// Handler serves the Sim's endpoints, for tests that bring their own server.
// Without Start, proxy URLs are built from each request's Host.
func (s *Sim) Handler() http.Handler { return s.mux }

// Close unblocks held starts, then shuts the server down.
// It is safe to call more than once; later calls return the first result.
func (s *Sim) Close() error {
	s.closeOnce.Do(func() {
		close(s.closed)
		s.mu.Lock()
		srv := s.srv
		s.mu.Unlock()
		if srv == nil {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
		defer cancel()
		if err := srv.Shutdown(ctx); err != nil {
			srv.Close()
			s.closeErr = fmt.Errorf("sim: shutdown: %w", err)
		}
	})
	return s.closeErr
}

// StartRequests is how many start requests pod has received, forced refusals
// included. 0 for a pod the Sim does not serve.
func (s *Sim) StartRequests(name string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if p := s.pods[name]; p != nil {
		return p.starts
	}
	return 0
}

// StopRequests is how many stop requests pod has received, those that
// found it asleep included. 0 for a pod the Sim does not serve.
func (s *Sim) StopRequests(name string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if p := s.pods[name]; p != nil {
		return p.stops
	}
	return 0
}

// Lookups is how many GET /api/pods/{name} requests pod has received. 0 for
// a pod the Sim does not serve.
func (s *Sim) Lookups(name string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if p := s.pods[name]; p != nil {
		return p.lookups
	}
	return 0
}

// WakeReport is one wake of a pod as the Sim ran it.
type WakeReport struct {
	PodID     string
	StartedAt time.Time // the start request that began it
	// ReadyAt is when the model could first answer; zero if it never could.
	ReadyAt time.Time
	// EndedAt is when the pod stopped (idle stop or an explicit stop); zero
	// while it is still up.
	EndedAt time.Time
	// Stopped says a stop request ended the wake (at EndedAt), not the
	// pod's own idle stop.
	Stopped bool
	// Answered is how many completions the model answered on this wake;
	// LastAnswerAt is when it answered the last of them (zero if none).
	Answered     int
	LastAnswerAt time.Time
	// FirstAnswerAt is when the model first answered anything on this wake
	// (a completion, or a probe of its model list or health); FirstAnswerWall
	// is the same moment on the wall clock. Zero until then.
	FirstAnswerAt, FirstAnswerWall time.Time
}

// Wakes lists every wake of pod so far, oldest first. nil for a pod the Sim
// does not serve.
func (s *Sim) Wakes(name string) []WakeReport {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.pods[name]
	if p == nil {
		return nil
	}
	now := s.clock.Now()
	var out []WakeReport
	for _, w := range append(slices.Clip(p.past), p.cur) {
		if w == nil {
			continue
		}
		r := WakeReport{
			PodID: w.podID, StartedAt: w.startedAt, ReadyAt: w.readyAt, Answered: w.answered,
			LastAnswerAt:  w.lastActivity,
			FirstAnswerAt: w.firstAnswer, FirstAnswerWall: w.firstAnswerWall,
		}
		if end := w.end(s.tm); !end.IsZero() && !now.Before(end) {
			r.EndedAt, r.Stopped = end, end.Equal(w.stoppedAt)
		}
		out = append(out, r)
	}
	return out
}

// CompletionsTurnedAway is how many completion requests the proxy answered
// with status (404 for a pod that is not running, 502 while its model
// loads) instead of passing them to a model.
func (s *Sim) CompletionsTurnedAway(status int) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch status {
	case http.StatusNotFound:
		return s.turnedAway[gateNotFound]
	case http.StatusBadGateway:
		return s.turnedAway[gateLoading]
	}
	return 0
}

// Completions is how many completion requests the model took up and
// answered, streamed or not (a stream counts once it begins).
func (s *Sim) Completions() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.completions
}

// ForceStartStatus makes start on pod answer status (e.g. 401, 409, 503) and
// start nothing; the request is still counted. 0 restores normal starts.
// It panics on an unknown pod or a status outside 200-599.
func (s *Sim) ForceStartStatus(name string, status int) {
	if status != 0 && (status < 200 || status > 599) {
		panic(fmt.Sprintf("sim: ForceStartStatus: status %d out of range", status))
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.mustPod("ForceStartStatus", name).forceStart = status
}

// NeverReady with on set makes pod's model never answer: a wake reaches
// RUNNING and the proxy answers 502 forever, and the pod never idles out. It
// applies to the current wake unless its model already answers, and to every
// later wake. Turning it off lets the model answer from now on (or when it
// would have anyway, if that is later).
func (s *Sim) NeverReady(name string, on bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.mustPod("NeverReady", name)
	p.neverReady = on
	if p.cur == nil {
		return
	}
	now := s.clock.Now()
	st := p.cur.at(now, s.tm)
	if st.phase == phaseAsleep || !st.readySince.IsZero() {
		return
	}
	switch {
	case on:
		p.cur.readyAt = time.Time{}
	case p.cur.readyAt.IsZero():
		p.cur.readyAt = later(now, p.cur.startedAt.Add(s.tm.ready))
	}
}

// Snapshot is what GET /api/pods/{name} would answer now. Proxy URLs use URL(),
// so they are relative paths before Start. For a pod the Sim does not serve it
// returns only the name and lookup "NOT_FOUND".
func (s *Sim) Snapshot(name string) PodView {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.pods[name]
	if p == nil {
		return PodView{Name: name, Lookup: LookupNotFound}
	}
	return s.view(p, s.clock.Now(), s.url)
}

// mustPod returns the named pod or panics. Callers hold s.mu.
func (s *Sim) mustPod(control, name string) *pod {
	p := s.pods[name]
	if p == nil {
		panic(fmt.Sprintf("sim: %s: unknown pod %q", control, name))
	}
	return p
}

// begin joins the wake in flight at now, or starts a new one if the pod is
// asleep. Callers hold s.mu.
func (s *Sim) begin(p *pod, now time.Time) *wake {
	if p.cur != nil {
		st := p.cur.at(now, s.tm)
		if st.phase != phaseAsleep {
			return p.cur
		}
		if st.created {
			p.lastPodID = p.cur.podID
		}
	}
	if p.cur != nil {
		p.past = append(p.past, p.cur)
	}
	s.seq++
	id := "pod-" + strconv.Itoa(s.seq)
	p.cur = newWake(id, now, s.tm, p.neverReady)
	s.byID[id] = p
	return p.cur
}

// later returns the later of a and b.
func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
