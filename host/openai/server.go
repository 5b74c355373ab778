package openai

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"net/http"
	"time"

	"github.com/wakeonchat/wakeonchat/host/clock"
	"github.com/wakeonchat/wakeonchat/host/events"
	"github.com/wakeonchat/wakeonchat/host/internal/jsonhttp"
	"github.com/wakeonchat/wakeonchat/host/metrics"
	"github.com/wakeonchat/wakeonchat/host/resolve"
	"github.com/wakeonchat/wakeonchat/machines"
	"github.com/wakeonchat/wakeonchat/plugins/pluginapi"
)

// Model is one provider's model; *resolve.Model is one. Both calls send
// body as it is and return the model's 200 with its body still to read,
// or a *resolve.NotReadyError, *resolve.ProviderError or
// *resolve.ConfigError.
type Model interface {
	// Stream is a turn with resolve.Model.Complete's re-resolve and one
	// retry.
	Stream(ctx context.Context, body []byte) (*pluginapi.StreamResponse, error)
	// StreamOnce is exactly one attempt, never re-sent: the held request
	// run once the model is freshly ready.
	StreamOnce(ctx context.Context, body []byte) (*pluginapi.StreamResponse, error)
}

// Provider is one configured provider as the door serves it.
type Provider struct {
	Name      string // the model id clients send: [[providers]] name
	ModelName string // what the request's model becomes: [[providers]] model
	Pod       string // the conductor's pod; "" for a literal base_url
	Model     Model
}

// Coordinator runs the pod lifecycle machine; *wake.Coordinator is one.
// The door shares it with /api/chat, so a burst across both doors makes one
// wake.
type Coordinator interface {
	NotReady(ctx context.Context, pod, status, lookup string, modelLoading bool) (machines.Decision, error)
	Record(ctx context.Context, pod string) (machines.Record, error)
}

// PodView reports a pod as the conductor sees it; *resolve.Resolver is one.
type PodView interface {
	Lookup(ctx context.Context) (resolve.Resolution, error)
}

// Events pushes each pod's record changes; *events.Hub is one. Neither call
// asks the conductor anything.
type Events interface {
	Subscribe(pod string) (events.Update, *events.Subscription)
	Current(pod string) events.Update
}

// Config wires a Server. Providers and Wake are required; without Replies
// no message is taken out.
type Config struct {
	Providers []Provider         // in config order: /v1/models lists them so
	Wake      Coordinator        // the same coordinator /api/chat uses
	Pods      map[string]PodView // every configured pod, by name
	Replies   *Recognizer        // the host's own replies, to take out of forwarded messages
	Clock     clock.Clock        // default clock.Real()
	Logger    *slog.Logger       // default: discard
	MaxBody   int64              // the largest request body; default 1 MiB
	// Created is the models' "created" (the host's start); default the
	// clock's now at New.
	Created time.Time
	// Keys, when not empty, are the bearer keys the door takes; empty
	// takes any request, unless RequireKey is set.
	Keys []string
	// RequireKey wants one of Keys even when there is none, so that every
	// request is refused: a keys variable named but empty never leaves the
	// door open.
	RequireKey bool
	// CORSOrigins are the origins browsers may call the door from; "*"
	// for any. Empty answers no preflight.
	CORSOrigins []string
	// Hold holds a request that finds the model not ready while the pod
	// wakes, up to HoldMax, sending an SSE comment every Keepalive on a
	// stream. Without it the request is answered at once. Hold requires
	// Events: a held request learns readiness from the pod's changes, and
	// asks the conductor nothing.
	Hold      bool
	HoldMax   time.Duration
	Keepalive time.Duration
	Events    Events
	// WriteTimeout caps each write of a relayed answer (a stream may last
	// longer than the server's own write timeout); default 2m.
	WriteTimeout time.Duration
	NewID        func() string // completion ids of the door's own answers; nil = crypto/rand
	// Metrics counts and times every POST /v1/chat/completions by its
	// result, and the requests held; nil counts nothing.
	Metrics *metrics.Metrics
}

// Server serves the door. Create it with New.
type Server struct {
	cfg    Config
	byName map[string]*Provider
	auth   *auth
	cors   *cors
}

// New returns a Server for cfg. It panics when Hold is set without Events:
// that is a wiring mistake, not a runtime condition.
func New(cfg Config) *Server {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.Real()
	}
	if cfg.MaxBody <= 0 {
		cfg.MaxBody = 1 << 20
	}
	if cfg.Created.IsZero() {
		cfg.Created = cfg.Clock.Now()
	}
	if cfg.Hold && cfg.Events == nil {
		panic("openai: Config.Hold without Config.Events")
	}
	if cfg.Keepalive <= 0 {
		cfg.Keepalive = 15 * time.Second
	}
	if cfg.WriteTimeout <= 0 {
		cfg.WriteTimeout = 2 * time.Minute
	}
	if cfg.NewID == nil {
		cfg.NewID = randomID
	}
	s := &Server{cfg: cfg, byName: make(map[string]*Provider, len(cfg.Providers))}
	for i := range s.cfg.Providers {
		p := &s.cfg.Providers[i]
		s.byName[p.Name] = p
	}
	s.auth = newAuth(cfg.Keys, cfg.RequireKey)
	s.cors = newCORS(cfg.CORSOrigins)
	return s
}

// Handler returns the door's routes, all under /v1/. Every answer is JSON
// or an event stream; an unknown path under /v1/ is an OpenAI-shaped 404.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/v1/models", s.handleModels)
	mux.HandleFunc("/v1/models/{model}", s.handleModel)
	mux.HandleFunc("/v1/chat/completions", s.handleCompletions)
	clean := jsonhttp.Guard(mux, func(w http.ResponseWriter, r *http.Request) {
		writeError(w, &apiError{kind: kindNotFound, message: jsonhttp.NoEndpoint(r, serves)})
	})
	return s.cors.wrap(s.auth.wrap(clean))
}

// allow answers 405 unless r uses method (HEAD goes with GET).
func allow(w http.ResponseWriter, r *http.Request, method string) bool {
	if r.Method == method || (method == http.MethodGet && r.Method == http.MethodHead) {
		return true
	}
	w.Header().Set("Allow", method)
	writeError(w, &apiError{kind: kindMethod, message: "method " + r.Method + " not allowed; use " + method})
	return false
}

// serves is what the door's 404 says it serves.
const serves = "the door serves GET /v1/models and POST /v1/chat/completions"

// randomID is 24 hex digits from crypto/rand, which never fails.
func randomID() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
