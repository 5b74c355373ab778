package status

import (
	"bytes"
	"context"
	"embed"
	"html/template"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/wakeonchat/wakeonchat/host/clock"
	"github.com/wakeonchat/wakeonchat/host/events"
	"github.com/wakeonchat/wakeonchat/host/internal/jsonhttp"
	"github.com/wakeonchat/wakeonchat/host/supervisor"
	"github.com/wakeonchat/wakeonchat/machines"
)

// The page's paths: the page itself, and the prefix of its fragments and
// assets.
const (
	PagePath = "/"
	Prefix   = "/status/"
)

// IsPath reports whether a request for p is the status page's: exactly
// PagePath, or under Prefix. Nothing else is: an unknown path keeps the
// API's JSON 404.
func IsPath(p string) bool { return p == PagePath || strings.HasPrefix(p, Prefix) }

// DefaultRefresh is how often the page fetches each section again, in wall
// time, between pushed events.
const DefaultRefresh = 5 * time.Second

// ChartWakes is how many of a pod's last wakes the chart shows.
const ChartWakes = 20

// Pods tells the page where each pod is without asking the conductor;
// *events.Hub is one.
type Pods interface {
	Current(pod string) events.Update
}

// WakeLog is each pod's log of wakes, oldest first; *store.Store is one.
type WakeLog interface {
	Wakes(ctx context.Context, pod string) ([]machines.Wake, error)
}

// Plugin is one supervised plugin as the page lists it.
type Plugin struct {
	// For says what the plugin serves: "conductor", or "provider qwen".
	For string
	// Health is the plugin's snapshot; *supervisor.GPU and
	// *supervisor.Provider are ones.
	Health interface{ Health() supervisor.Health }
}

// Config wires a Server. Pods, Policy and Names are required.
type Config struct {
	Names  []string      // the configured pods, in the order the page shows them
	Pods   Pods          // each pod's record and last view
	Policy *machines.Pod // the machine: the preview of a turn, the estimate's ETA
	// Estimate is how long a wake of pod takes (wake.Coordinator.Estimate);
	// nil: expected_wake.
	Estimate func(pod string) machines.Estimate
	Wakes    WakeLog // nil: no chart
	Plugins  []Plugin
	// Clock is the host's clock; default clock.Real(). The page ticks its
	// elapsed times between fetches at clock.Rate(Clock).
	Clock  clock.Clock
	Logger *slog.Logger // default: discard
	// Refresh is how often the page fetches each section again; default
	// DefaultRefresh.
	Refresh time.Duration
}

// Server serves the status page.
type Server struct {
	cfg Config

	mu         sync.Mutex
	logFailing map[string]bool // pods whose wake log read failed last time
}

// New returns a Server for cfg.
func New(cfg Config) *Server {
	if cfg.Clock == nil {
		cfg.Clock = clock.Real()
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Refresh <= 0 {
		cfg.Refresh = DefaultRefresh
	}
	return &Server{cfg: cfg, logFailing: make(map[string]bool)}
}

//go:embed assets
var assets embed.FS

var templates = template.Must(template.New("").Funcs(template.FuncMap{
	"pct": func(f float64) string { return strconv.FormatFloat(f, 'f', 2, 64) },
}).ParseFS(assets, "assets/*.html"))

// static are the embedded assets the page loads, by name under
// Prefix+"static/", with their content types.
var static = map[string]string{
	"status.js":  "text/javascript; charset=utf-8",
	"status.css": "text/css; charset=utf-8",
}

// Handler serves PagePath and everything under Prefix; any other path is a
// JSON 404 (mount it on IsPath). Every answer but the page, its fragments
// and its assets is JSON, like the API's.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/{$}", s.handlePage)
	mux.HandleFunc(Prefix+"pods/{name}", s.handlePod)
	mux.HandleFunc(Prefix+"plugins", s.handlePlugins)
	mux.HandleFunc(Prefix+"static/{file}", s.handleStatic)
	return jsonhttp.Guard(mux, func(w http.ResponseWriter, r *http.Request) {
		jsonhttp.Error(w, http.StatusNotFound, jsonhttp.NoEndpoint(r, serves))
	})
}

// serves is what a 404 of the page's server says it serves.
const serves = "the status page is GET / with its parts under /status/"

func (s *Server) handlePage(w http.ResponseWriter, r *http.Request) {
	if !allowGet(w, r) {
		return
	}
	now := s.cfg.Clock.Now()
	p := page{
		Now:       clockTime(now, now),
		ClockRate: strconv.FormatFloat(clock.Rate(s.cfg.Clock), 'f', -1, 64),
		Refresh:   strconv.FormatInt(s.cfg.Refresh.Milliseconds(), 10),
		Plugins:   s.plugins(),
	}
	for _, name := range s.cfg.Names {
		p.Pods = append(p.Pods, s.pod(r.Context(), name, now))
	}
	s.render(w, "page", p)
}

func (s *Server) handlePod(w http.ResponseWriter, r *http.Request) {
	if !allowGet(w, r) {
		return
	}
	name := r.PathValue("name")
	if !s.configured(name) {
		jsonhttp.Error(w, http.StatusNotFound, "no such pod on this page")
		return
	}
	s.render(w, "pod", s.pod(r.Context(), name, s.cfg.Clock.Now()))
}

func (s *Server) handlePlugins(w http.ResponseWriter, r *http.Request) {
	if !allowGet(w, r) {
		return
	}
	s.render(w, "plugins", s.plugins())
}

func (s *Server) handleStatic(w http.ResponseWriter, r *http.Request) {
	if !allowGet(w, r) {
		return
	}
	name := r.PathValue("file")
	ctype, ok := static[name]
	if !ok {
		jsonhttp.Error(w, http.StatusNotFound, "no such asset")
		return
	}
	b, err := assets.ReadFile("assets/" + name)
	if err != nil {
		jsonhttp.Error(w, http.StatusInternalServerError, "the asset could not be read")
		return
	}
	h := w.Header()
	h.Set("Content-Type", ctype)
	h.Set("Content-Length", strconv.Itoa(len(b)))
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodHead {
		w.Write(b)
	}
}

func (s *Server) configured(name string) bool { return slices.Contains(s.cfg.Names, name) }

// render executes the template name with v into a buffer first, so a
// failure is a clean 500, never half a page.
func (s *Server) render(w http.ResponseWriter, name string, v any) {
	var b bytes.Buffer
	if err := templates.ExecuteTemplate(&b, name, v); err != nil {
		s.cfg.Logger.Error("status page: a template failed", "template", name, "err", err)
		jsonhttp.Error(w, http.StatusInternalServerError, "the status page could not be rendered")
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Content-Length", strconv.Itoa(b.Len()))
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	// Everything is the host's own: no inline script or style, nothing
	// from elsewhere.
	h.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'")
	w.WriteHeader(http.StatusOK)
	w.Write(b.Bytes())
}

// allowGet answers 405 unless r is a GET or a HEAD.
func allowGet(w http.ResponseWriter, r *http.Request) bool {
	if r.Method == http.MethodGet || r.Method == http.MethodHead {
		return true
	}
	w.Header().Set("Allow", "GET, HEAD")
	jsonhttp.Error(w, http.StatusMethodNotAllowed, "method "+r.Method+" not allowed; use GET")
	return false
}

// fragmentPath is pod's fragment.
func fragmentPath(pod string) string { return Prefix + "pods/" + url.PathEscape(pod) }
