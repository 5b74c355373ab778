package chat

import (
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"math"
	"net/http"
	"time"

	"github.com/wakeonchat/wakeonchat/host/agent"
	"github.com/wakeonchat/wakeonchat/host/clock"
	"github.com/wakeonchat/wakeonchat/host/internal/jsonhttp"
	"github.com/wakeonchat/wakeonchat/host/metrics"
	"github.com/wakeonchat/wakeonchat/host/store"
	"github.com/wakeonchat/wakeonchat/host/turn"
	"github.com/wakeonchat/wakeonchat/machines"
)

// Config wires a Server.
type Config struct {
	Agent *agent.Agent
	// Service runs every turn: the model's answer, the wake policy's
	// reply, a pending wake and its resume.
	Service *turn.Service
	// Wake, Policy and Pods are the pods' views for GET /api/pods/{name}
	// and its event stream.
	Wake   turn.Coordinator
	Policy *machines.Pod
	Pods   map[string]turn.PodView // every configured pod, by name
	// Turns, when set, holds the one turn per session across the hosts
	// sharing the store (store.Turns); nil: the process's slots alone.
	Turns    store.Turns
	Clock    clock.Clock
	Logger   *slog.Logger
	MaxBody  int64
	Ready    func() error  // nil error when the host is ready (for /readyz)
	NewToken func() string // session ids; nil = crypto/rand
	// Events pushes each pod's record changes to GET
	// /api/pods/{name}/events; without it the stream answers 503.
	Events Events
	// EventsKeepalive is how often an open event stream gets an SSE
	// comment, in wall time ([server] events_keepalive); default
	// DefaultEventsKeepalive (15s).
	EventsKeepalive time.Duration
	// MaxEventStreams is how many event streams may be open at once ([server]
	// max_event_streams); one more is refused with a 503. Only the streams
	// this Server serves count, not other subscribers of Events (held OpenAI
	// requests). Default DefaultMaxEventStreams (1000).
	MaxEventStreams int
	// Metrics counts and times every POST /api/chat by its result; nil
	// counts nothing.
	Metrics *metrics.Metrics
}

// Server serves wake-on-chat's HTTP API.
type Server struct {
	cfg        Config
	turns      turns   // Config.Service's turns
	slots      slots   // the single in-flight turn per session
	streams    streams // the open event streams, under their cap
	maxMessage int     // the longest message a completion request can carry
}

// New returns a Server for cfg.
func New(cfg Config) *Server {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.Real()
	}
	if cfg.NewToken == nil {
		cfg.NewToken = randomToken
	}
	if cfg.MaxBody <= 0 {
		cfg.MaxBody = 1 << 20
	}
	if cfg.EventsKeepalive <= 0 {
		cfg.EventsKeepalive = DefaultEventsKeepalive
	}
	if cfg.MaxEventStreams <= 0 {
		cfg.MaxEventStreams = DefaultMaxEventStreams
	}
	s := &Server{cfg: cfg, turns: serviceTurns{cfg.Service}, maxMessage: math.MaxInt}
	s.streams.limit = int64(cfg.MaxEventStreams)
	if cfg.Agent != nil {
		s.maxMessage = cfg.Agent.MaxMessageBytes()
	}
	return s
}

// Handler returns the HTTP routes.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/api/chat", s.handleChat)
	mux.HandleFunc("/api/pods/{name}", s.handlePod)
	mux.HandleFunc("/api/pods/{name}/events", s.handleEvents)
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, r *http.Request) {
		if !jsonhttp.Allow(w, r, http.MethodGet) {
			return
		}
		jsonhttp.Write(w, http.StatusOK, map[string]string{"status": "ok"})
	})
	mux.HandleFunc("/readyz", s.handleReady)
	return jsonhttp.Guard(mux, func(w http.ResponseWriter, r *http.Request) {
		jsonhttp.Error(w, http.StatusNotFound, jsonhttp.NoEndpoint(r, serves))
	})
}

// serves is what a 404 of the API says it serves.
const serves = "the API is POST /api/chat, GET /api/pods/{name}, GET /api/pods/{name}/events, GET /healthz and GET /readyz"

func (s *Server) handleReady(w http.ResponseWriter, r *http.Request) {
	if !jsonhttp.Allow(w, r, http.MethodGet) {
		return
	}
	if s.cfg.Ready != nil {
		if err := s.cfg.Ready(); err != nil {
			jsonhttp.Write(w, http.StatusServiceUnavailable, map[string]string{"status": "not ready", "reason": err.Error()})
			return
		}
	}
	jsonhttp.Write(w, http.StatusOK, map[string]string{"status": "ready"})
}

func randomToken() string {
	var b [16]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
