package metrics

import (
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/wakeonchat/wakeonchat/engine"
	"github.com/wakeonchat/wakeonchat/machines"
)

// namespace prefixes every metric of the host's own.
const namespace = "wakeonchat"

// The doors a turn comes through: the door label of the turn metrics.
const (
	DoorAPIChat = "api_chat" // POST /api/chat
	DoorOpenAI  = "openai"   // POST /v1/chat/completions
)

// The results of a turn beside the reply keys of the wake policy (a turn
// that found the model not ready is counted under the key of the reply it
// got, such as "waking" or "still_waking"): the result label of
// wakeonchat_turns_total. Each door uses the ones that apply to it.
const (
	ResultAnswered             = "answered"               // a model answered (the whole answer was relayed)
	ResultBadRequest           = "bad_request"            // the request was malformed (400)
	ResultMethodNotAllowed     = "method_not_allowed"     // 405
	ResultUnsupportedMediaType = "unsupported_media_type" // not JSON (415)
	ResultTooLarge             = "too_large"              // the body or the message is too large (413)
	ResultConflict             = "conflict"               // /api/chat: a turn in flight for the session, or no such pending wake (409)
	ResultModelNotFound        = "model_not_found"        // the door: model is no provider's name (404)
	ResultProviderFailed       = "provider_failed"        // the generic 502 of D5: a provider or config-class failure
	ResultModelError           = "model_error"            // the door: the model's own 4xx, relayed
	ResultBrokeOff             = "broke_off"              // the door: the model's 200 failed while it was relayed (D10)
	ResultClientLeft           = "client_left"            // the door: the client left before its answer
	ResultShutdown             = "shutdown"               // /api/chat: cut by the host's shutdown (503)
	ResultInternalError        = "internal_error"         // a bug: the turn panicked (500, or /api/chat's 502)
)

// The kinds of a request to the conductor, through the GPU plugin: the kind
// label of wakeonchat_conductor_requests_total.
const (
	KindGet   = "get"   // GetPod: a read of the pod
	KindStart = "start" // StartPod: a wake
	KindStop  = "stop"  // StopPod: the host stops a pod it idled (stop_after_idle, stop_unserved_after)
)

// The results of a request to the conductor: the result label of
// wakeonchat_conductor_requests_total.
const (
	// A read.
	ConductorFound        = "found"         // the conductor knows the pod (any status)
	ConductorNotFound     = "not_found"     // lookup NOT_FOUND
	ConductorUnreadable   = "unreadable"    // lookup UNREADABLE: the conductor could not tell
	ConductorLookupFailed = "lookup_failed" // no usable answer: unreachable, a non-200, a malformed body

	// A start (or stop).
	ConductorAccepted = "accepted"  // 200 or 202
	ConductorInFlight = "in_flight" // sent, and the client's cap fired: the conductor goes on (#684)
	ConductorRefused  = "refused"   // any other HTTP status
	ConductorNotSent  = "not_sent"  // it never got through (ECONNREFUSED, ...) or was cut before it was written whole
	ConductorLost     = "lost"      // its answer was lost: its connection was cut after it was written whole, the plugin died with it, or the host stopped waiting

	// Either.
	ConductorPluginError = "plugin_error" // the GPU plugin could not be reached or broke its contract
	ConductorCanceled    = "canceled"     // a read whose caller gave up first
)

// The phases of a wake: the phase label of wakeonchat_wake_phase_seconds.
const (
	PhaseRequestedToRunning = "requested_to_running" // the start was requested → the pod was first seen up (Record.RunningAt)
	PhaseRunningToAnswering = "running_to_answering" // seen up → the model was ready (Record.ReadyAt)
)

// Options say what a Metrics reports on.
type Options struct {
	// Pods are the configured pods: their series exist, at zero, from the
	// start, so that an alert on increase() sees the first event.
	Pods []string
	// States are the pod lifecycle's states (machines.Pod.Table().States):
	// wakeonchat_pod_state has one series per pod and state.
	States []engine.State
}

// Metrics holds the host's metrics and their registry. A nil *Metrics
// counts nothing: every method is a no-op on it. Create it with New.
type Metrics struct {
	reg *prometheus.Registry

	wakes          *prometheus.CounterVec
	stops          *prometheus.CounterVec
	phases         *prometheus.HistogramVec
	podState       *podState
	turns          *prometheus.CounterVec
	turnSeconds    *prometheus.HistogramVec
	restarts       *prometheus.CounterVec
	relaunchFailed *prometheus.CounterVec
	pluginUp       *pluginUp
	conductor      *prometheus.CounterVec
	held           prometheus.Gauge
	pruned         *prometheus.CounterVec

	subscribersOnce sync.Once
	subscribers     atomic.Pointer[func() int]
}

// The buckets of the histograms, in seconds. A wake takes minutes (about 9,
// up to wake_watch, 35); a turn milliseconds when the pod is asleep, seconds
// when a model answers, up to a completion timeout (120 s), or a hold
// (hold_max, 9m30s).
var (
	phaseBuckets = []float64{15, 30, 60, 120, 180, 240, 300, 360, 420, 480, 540, 600, 720, 900, 1200, 1800, 2400}
	turnBuckets  = []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600}
)

// New returns the host's metrics on a fresh registry, with the Go and
// process collectors.
func New(o Options) *Metrics {
	m := &Metrics{
		reg: prometheus.NewRegistry(),
		wakes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Name: "wakes_total",
			Help: "Wakes whose outcome became known, by pod and outcome (ready, refused, start-failed, never-ready).",
		}, []string{"pod", "outcome"}),
		stops: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Name: "pod_stops_total",
			Help: "Pods the host stopped itself, by pod and reason (idle: stop_after_idle; unserved: stop_unserved_after).",
		}, []string{"pod", "reason"}),
		phases: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: namespace, Name: "wake_phase_seconds",
			Help:    "How long each phase of a wake took, as the host saw it: requested_to_running, running_to_answering.",
			Buckets: phaseBuckets,
		}, []string{"pod", "phase"}),
		podState: newPodState(prometheus.BuildFQName(namespace, "", "pod_state"),
			"The pod lifecycle state of each pod: 1 for its current state, 0 for the others.", o.States),
		turns: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Name: "turns_total",
			Help: "Turns answered, by door (api_chat, openai) and result (answered, a reply key, or an error class).",
		}, []string{"door", "result"}),
		turnSeconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: namespace, Name: "turn_seconds",
			Help:    "How long a turn took, from its request to its answer's end (a held request includes its hold).",
			Buckets: turnBuckets,
		}, []string{"door"}),
		restarts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Name: "plugin_restarts_total",
			Help: "Plugin processes relaunched after they exited.",
		}, []string{"plugin"}),
		relaunchFailed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Name: "plugin_relaunch_failures_total",
			Help: "Relaunches of an exited plugin that failed; the next one waits twice as long, up to 30 s.",
		}, []string{"plugin"}),
		pluginUp: newPluginUp(prometheus.BuildFQName(namespace, "", "plugin_up"),
			"Whether each plugin's processes are running and handshaken (1) or not (0)."),
		conductor: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Name: "conductor_requests_total",
			Help: "Requests to the conductor through the GPU plugin, by kind (get, start, stop) and result.",
		}, []string{"kind", "result"}),
		held: prometheus.NewGauge(prometheus.GaugeOpts{
			Namespace: namespace, Name: "held_requests",
			Help: "OpenAI door requests being held while their pod wakes (cold_start = \"hold\").",
		}),
		pruned: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Name: "store_pruned_total",
			Help: "What the store's background pruning did, by what: sessions and pending (expired pending wakes) deleted, stamped (sessions of an older host given a last turn).",
		}, []string{"what"}),
	}
	m.reg.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		m.wakes, m.stops, m.phases, m.podState, m.turns, m.turnSeconds,
		m.restarts, m.relaunchFailed, m.pluginUp, m.conductor, m.held, m.pruned,
	)
	for _, what := range prunedWhat {
		m.pruned.WithLabelValues(what)
	}
	for _, pod := range o.Pods {
		for _, outcome := range outcomes {
			m.wakes.WithLabelValues(pod, outcome)
		}
		for _, reason := range []string{machines.StopIdle, machines.StopUnserved} {
			m.stops.WithLabelValues(pod, reason)
		}
		m.podState.set(pod, machines.Asleep)
	}
	return m
}

// outcomes are the values machines.Record.Outcome names.
var outcomes = machines.Outcomes()

// prunedWhat are the what labels of wakeonchat_store_pruned_total, in
// StorePruned's order.
var prunedWhat = []string{"sessions", "pending", "stamped"}

// Registry is where the metrics are registered (tests gather from it).
func (m *Metrics) Registry() *prometheus.Registry {
	if m == nil {
		return nil
	}
	return m.reg
}

// Handler serves the metrics in the Prometheus exposition formats. A
// collector that fails leaves its metrics out and the rest are served.
// Unlike the hooks, it needs a Metrics from New.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError})
}

// Turn counts one turn through door, with its result and how long it took.
func (m *Metrics) Turn(door, result string, took time.Duration) {
	if m == nil {
		return
	}
	m.turns.WithLabelValues(door, result).Inc()
	m.turnSeconds.WithLabelValues(door).Observe(took.Seconds())
}

// ConductorRequest counts one request of kind to the conductor, with its
// result.
func (m *Metrics) ConductorRequest(kind, result string) {
	if m == nil {
		return
	}
	m.conductor.WithLabelValues(kind, result).Inc()
}

// StorePruned counts what one pass of the store's background pruning did,
// the counts of its "store pruned" line: sessions and pending wakes
// deleted, sessions stamped.
func (m *Metrics) StorePruned(sessions, pending, stamped int) {
	if m == nil {
		return
	}
	for i, n := range []int{sessions, pending, stamped} {
		m.pruned.WithLabelValues(prunedWhat[i]).Add(float64(n))
	}
}

// Hold counts a held request in; the func it returns counts it out.
func (m *Metrics) Hold() (done func()) {
	if m == nil {
		return func() {}
	}
	m.held.Inc()
	var once sync.Once
	return func() { once.Do(m.held.Dec) }
}

// WatchPlugin makes plugin's series exist, at zero, and reports up (the
// supervisor's Ready) as wakeonchat_plugin_up. Plugins that share a name
// (two providers on one binary) share their series: up is 1 only while
// every one of them is.
func (m *Metrics) WatchPlugin(plugin string, up func() bool) {
	if m == nil {
		return
	}
	m.restarts.WithLabelValues(plugin)
	m.relaunchFailed.WithLabelValues(plugin)
	m.pluginUp.add(plugin, up)
}

// PluginRelaunched counts a relaunch of an exited plugin that worked
// ("plugin relaunched").
func (m *Metrics) PluginRelaunched(plugin string) {
	if m == nil {
		return
	}
	m.restarts.WithLabelValues(plugin).Inc()
}

// PluginRelaunchFailed counts a relaunch that failed ("plugin relaunch
// failed").
func (m *Metrics) PluginRelaunchFailed(plugin string) {
	if m == nil {
		return
	}
	m.relaunchFailed.WithLabelValues(plugin).Inc()
}

// EventSubscribers reports count, the number of live subscriptions to the
// pods' pushed changes (events.Hub.AllSubscribers: one per client of the pod
// event stream, one per held OpenAI request), as
// wakeonchat_event_subscribers. The metric exists from the first call on; a
// later call replaces count.
func (m *Metrics) EventSubscribers(count func() int) {
	if m == nil {
		return
	}
	m.subscribers.Store(&count)
	m.subscribersOnce.Do(func() {
		m.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Namespace: namespace, Name: "event_subscribers",
			Help: "Live subscriptions to the pods' pushed changes: one per pod event stream client, one per held OpenAI request (also in wakeonchat_held_requests).",
		}, func() float64 { return float64((*m.subscribers.Load())()) }))
	})
}

// pluginUp is wakeonchat_plugin_up: read from the supervisors at each
// scrape.
type pluginUp struct {
	desc *prometheus.Desc

	mu    sync.Mutex
	names []string
	ups   map[string][]func() bool
}

func newPluginUp(name, help string) *pluginUp {
	return &pluginUp{desc: prometheus.NewDesc(name, help, []string{"plugin"}, nil), ups: make(map[string][]func() bool)}
}

func (p *pluginUp) add(plugin string, up func() bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, ok := p.ups[plugin]; !ok {
		p.names = append(p.names, plugin)
	}
	p.ups[plugin] = append(p.ups[plugin], up)
}

func (p *pluginUp) Describe(ch chan<- *prometheus.Desc) { ch <- p.desc }

func (p *pluginUp) Collect(ch chan<- prometheus.Metric) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, name := range p.names {
		v := 1.0
		for _, up := range p.ups[name] {
			if !up() {
				v = 0
			}
		}
		ch <- prometheus.MustNewConstMetric(p.desc, prometheus.GaugeValue, v, name)
	}
}
