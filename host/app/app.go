// Package app wires wake-on-chat together: config, store, plugins,
// resolvers, the agent, the wake coordinator and the HTTP server. It is the
// one place that knows every other package; main only parses flags and
// handles signals.
//
// Lifecycle: New (load config, open the store, launch and handshake the
// plugins, resume the watches of wakes that were in flight), Serve, then
// Shutdown (end the pod event streams, stop accepting, let in-flight turns
// finish within the grace, stop the watches, stop the plugins, close the
// store).
package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/wakeonchat/wakeonchat/host/agent"
	"github.com/wakeonchat/wakeonchat/host/chat"
	"github.com/wakeonchat/wakeonchat/host/clock"
	"github.com/wakeonchat/wakeonchat/host/config"
	"github.com/wakeonchat/wakeonchat/host/events"
	"github.com/wakeonchat/wakeonchat/host/metrics"
	"github.com/wakeonchat/wakeonchat/host/openai"
	"github.com/wakeonchat/wakeonchat/host/sim"
	"github.com/wakeonchat/wakeonchat/host/store"
	"github.com/wakeonchat/wakeonchat/host/store/postgres"
	"github.com/wakeonchat/wakeonchat/host/supervisor"
	"github.com/wakeonchat/wakeonchat/host/turn"
	"github.com/wakeonchat/wakeonchat/host/wake"
	"github.com/wakeonchat/wakeonchat/machines"
	"github.com/wakeonchat/wakeonchat/plugins/pluginapi"
)

// Options are what main (or a test) decides beyond wake.toml.
type Options struct {
	ConfigPath string
	Listen     string // overrides [server] listen when set: wakehost's -listen, as its errors say
	// Simulate starts the built-in simulator and points the host at it: a
	// conductor and a model on loopback, a fresh temporary data dir, and a
	// clock running Scale times faster than the wall clock.
	Simulate bool
	Scale    float64
	Logger   *slog.Logger
	Getenv   func(string) string // nil = os.Getenv
	// LookupEnv tells a variable set to "" from one not set (nil:
	// os.LookupEnv when Getenv is nil, else a variable is set when Getenv
	// gives it a value). Only the store's dsn_env is looked up with it.
	LookupEnv func(string) (string, bool)
	// Clock overrides the clock (tests). With Simulate it is shared with
	// the simulator.
	Clock clock.Clock
	// PluginDir overrides [plugins] dir (tests).
	PluginDir string
	// Executable is the host's own executable, which serves the built-in
	// plugins (`Executable plugin NAME`, see PluginMode) that have no file
	// in plugins.dir; wakehost sets it from os.Executable. "" offers none:
	// every plugin must be a file in plugins.dir.
	Executable string
	// StatusRefresh overrides how often the status page fetches each of
	// its parts again between pushed events (tests); 0 keeps
	// status.DefaultRefresh.
	StatusRefresh time.Duration
}

// App is a running host.
type App struct {
	cfg   config.Config
	log   *slog.Logger
	clock clock.Clock
	store store.Backend
	// backends are the GPU backends (config.GPUBackends) and gpus their
	// plugins, in the same order, the [conductor] backend's first; gpu
	// routes each pod's calls to its backend's plugin.
	backends []config.Backend
	gpus     []*supervisor.GPU
	gpu      pluginapi.GPU
	provs    []*supervisor.Provider
	coord    *wake.Coordinator
	hub      *events.Hub
	server   *chat.Server
	door     *openai.Server
	http     *http.Server
	reqs     *requests
	ln       net.Listener
	sim      *sim.Sim
	tempDir  string

	metrics *metrics.Metrics
	// onChange are called, in order, with every stored change of a pod's
	// record (wake.Config.Changed, through changed): the metrics, and
	// whatever else follows the pods. New appends to it before Resume, the
	// first thing that can change a record.
	onChange []func(wake.Change)
	// admin serves the operators' surface on [server] admin_listen; nil
	// when the main listener serves it.
	admin   *http.Server
	adminLn net.Listener
	// page is the status page (host/status), on the operators' surface.
	page http.Handler
}

// environment fills Getenv and LookupEnv: the process's environment when
// neither is set, else LookupEnv from Getenv (a variable is set when it is
// not empty).
func (o *Options) environment() {
	if o.LookupEnv == nil && o.Getenv == nil {
		o.LookupEnv = os.LookupEnv
	}
	if o.Getenv == nil {
		o.Getenv = os.Getenv
	}
	if o.LookupEnv == nil {
		getenv := o.Getenv
		o.LookupEnv = func(k string) (string, bool) { v := getenv(k); return v, v != "" }
	}
}

// New builds the host and starts everything but the HTTP server. On error
// everything started so far is stopped again.
func New(ctx context.Context, o Options) (a *App, err error) {
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	o.environment()
	cfg, err := config.Load(o.ConfigPath)
	if err != nil {
		return nil, err
	}
	if o.Listen != "" {
		cfg.Server.Listen = o.Listen
	}
	if o.PluginDir != "" {
		cfg.Plugins.Dir = o.PluginDir
	}
	built := &App{cfg: cfg, log: o.Logger, clock: o.Clock}
	a = built
	defer func() {
		if err != nil {
			// Whatever was started is stopped again: plugin processes, the
			// store, the simulator and its temporary data dir.
			built.close(context.Background(), false)
			a = nil
		}
	}()
	dataDir := cfg.DataDir()
	if o.Simulate {
		if err := a.startSimulator(o); err != nil {
			return nil, err
		}
		dataDir = a.tempDir
	}
	if a.clock == nil {
		a.clock = clock.Real()
	}

	if a.store, err = a.openStore(ctx, dataDir, o.LookupEnv); err != nil {
		return nil, err
	}
	policy, err := cfg.MachinePolicy()
	if err != nil {
		return nil, err
	}
	pod, err := machines.NewPod(policy)
	if err != nil {
		return nil, err
	}
	a.startMetrics(pod)
	// The store prunes in the background until it is closed; the metrics
	// count what each pass deleted.
	retention := store.Retention{HistoryMaxAge: cfg.Store.HistoryMaxAge.Duration, HistoryMaxSessions: cfg.Store.HistoryMaxSessions}
	pruned := func(p store.Pruned) { a.metrics.StorePruned(p.Sessions, p.Pending, p.Stamped) }
	if err := a.store.Retainer.StartPruning(retention, cfg.Store.PruneInterval.Duration, a.log, pruned); err != nil {
		return nil, err
	}
	if err := a.startPlugins(ctx, o.Getenv, o.Simulate, o.Executable); err != nil {
		return nil, err
	}
	// Every stored change of a pod's record is pushed to whoever waits on
	// the pod (the event streams, the door's held requests), who ask the
	// conductor nothing.
	a.hub = events.New(0)
	a.onChange = append(a.onChange, a.hub.Publish)
	a.metrics.EventSubscribers(a.hub.AllSubscribers)
	// On a shared store each wake's watch holds a lease, and a host whose
	// watch died is taken over within about a lease.
	var takeover time.Duration
	if cfg.Store.Backend == config.BackendPostgres {
		takeover = cfg.Store.Lease.Duration / 2
	}
	stops, credentials := a.podPolicies()
	a.coord = wake.New(wake.Config{
		Pod: pod, Records: a.store.Records, Wakes: a.store.WakeLog, GPU: a.gpu, Clock: a.clock, Logger: a.log,
		WatchPoll: cfg.Timings.WatchPoll.Duration, StartTimeout: startCap(a.backends),
		Stops: stops, Credentials: credentials,
		Changed: a.changed, Following: following(a.store.Changes),
		Probe: a.probers(), ProbeInterval: cfg.Timings.ProbeInterval.Duration,
		Leases: a.store.Leases, Takeover: takeover,
		Subscribers: a.hub,
	})
	// The other hosts' changes come from the store (before the records
	// are read, so that none falls between); then the hub and the metrics
	// start from the stored records.
	if err := a.followElsewhere(ctx); err != nil {
		return nil, err
	}
	recs, err := a.store.Records.Records(ctx)
	if err != nil {
		return nil, fmt.Errorf("reading the wake records: %w", err)
	}
	a.hub.Seed(recs)
	a.seedMetrics(recs)
	// Every resolver tells the machine what the conductor says and which
	// turns were answered.
	models, pods, err := a.models(o.Getenv, o.Simulate, a.coord)
	if err != nil {
		return nil, err
	}
	// A wake in flight when the host stopped is watched again, from the
	// store alone. A pod no longer configured is left alone.
	if err := a.coord.Resume(func(p string) bool {
		_, ok := pods[p]
		return ok
	}); err != nil {
		return nil, fmt.Errorf("resuming wake watches: %w", err)
	}

	var chain, others []agent.Provider
	for _, name := range cfg.Agent.Providers {
		chain = append(chain, agent.Provider{Name: name, Model: models[name]})
	}
	for _, p := range cfg.Providers {
		if !slices.Contains(cfg.Agent.Providers, p.Name) {
			others = append(others, agent.Provider{Name: p.Name, Model: models[p.Name]})
		}
	}
	views := make(map[string]turn.PodView, len(pods))
	for name, r := range pods {
		views[name] = r
	}
	// One turn service for both doors: a burst across them makes one wake.
	turns := turn.New(turn.Config{
		Wake: a.coord, Policy: pod, Pods: views, Pending: a.store.Pendings, Events: a.hub, Clock: a.clock, Logger: a.log,
		Activity: a.coord,
	})
	a.server = chat.New(chat.Config{
		Agent: agent.New(agent.Config{
			Chain: chain, Others: others, History: a.store.History,
			SystemPrompt: cfg.Agent.SystemPrompt, HistoryMessages: cfg.Agent.HistoryMessages, HistoryBytes: cfg.Agent.HistoryBytes,
			RequestBytes: pluginapi.MaxMessageBytes,
		}),
		Service: turns, Wake: a.coord, Policy: pod, Pods: views, Turns: a.store.Turns, Clock: a.clock, Logger: a.log,
		MaxBody:         cfg.Server.MaxBodyBytes,
		Ready:           a.ready,
		Events:          a.hub,
		EventsKeepalive: cfg.Server.EventsKeepalive.Duration,
		MaxEventStreams: cfg.Server.MaxEventStreams,
		Metrics:         a.metrics,
	})
	if a.door, err = a.openAIDoor(o.Getenv, models, turns); err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", cfg.Server.Listen)
	if err != nil {
		key := "server.listen"
		if o.Listen != "" {
			key = "-listen" // the flag that overrides it
		}
		return nil, fmt.Errorf("%s: %w", key, err)
	}
	a.ln = chat.Listener(ln, 0) // net/http's own refusals answer JSON too
	a.page = a.statusPage(pod, o.StatusRefresh)
	if err := a.listenAdmin(); err != nil {
		return nil, err
	}
	var admin http.Handler // on the main listener, unless admin_listen has it
	if a.admin == nil {
		admin = a.adminRoutes()
	}
	grace := cfg.Timings.CompletionTimeout.Duration + 30*time.Second
	a.reqs = newRequests()
	a.http = &http.Server{
		Handler:           a.reqs.wrap(routes(a.door.Handler(), a.server.Handler(), admin)),
		BaseContext:       func(net.Listener) context.Context { return a.reqs.base() },
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      grace, // a completion may take completion_timeout
		IdleTimeout:       90 * time.Second,
		// OPTIONS * goes to the handler, which answers JSON, not net/http's
		// empty 200.
		DisableGeneralOptionsHandler: true,
		ErrorLog:                     slog.NewLogLogger(a.log.Handler(), slog.LevelWarn),
	}
	return a, nil
}

// openStore opens the store [store] backend names: the bbolt file wake.db
// in dataDir, or the PostgreSQL database whose connection string is in the
// variable [store] dsn_env names (never quoted in an error). A pending
// wake lives as long as its wake's watch (wake_watch).
func (a *App) openStore(ctx context.Context, dataDir string, lookupEnv func(string) (string, bool)) (store.Backend, error) {
	cfg := a.cfg
	ttl := cfg.Timings.WakeWatch.Duration
	if cfg.Store.Backend != config.BackendPostgres {
		s, err := store.Options{Now: a.clock.Now, PendingTTL: ttl, SessionHistoryBytes: cfg.Store.SessionHistoryBytes}.Open(filepath.Join(dataDir, "wake.db"))
		if err != nil {
			return store.Backend{}, err
		}
		return s.Backend(), nil
	}
	dsn, err := postgresDSN(cfg, lookupEnv)
	if err != nil {
		return store.Backend{}, err
	}
	s, err := postgres.Open(ctx, dsn, postgres.Options{
		Now: a.clock.Now, PendingTTL: ttl, SessionHistoryBytes: cfg.Store.SessionHistoryBytes,
		Lease: cfg.Store.Lease.Duration, DSNEnv: cfg.Store.DSNEnv, Logger: a.log,
	})
	if err != nil {
		return store.Backend{}, err
	}
	return s.Backend(), nil
}

// Addr is the address the HTTP server listens on.
func (a *App) Addr() string { return a.ln.Addr().String() }

// Simulator is the built-in simulator, or nil.
func (a *App) Simulator() *sim.Sim { return a.sim }

// Serve serves HTTP until Shutdown: the main listener and, with [server]
// admin_listen, the admin listener. It returns nil once Shutdown stopped
// both, or the error of the first that failed (the caller then shuts the
// host down).
func (a *App) Serve() error {
	attrs := []any{"addr", a.Addr(), "simulate", a.sim != nil}
	if a.admin != nil {
		attrs = append(attrs, "admin_addr", a.AdminAddr())
	}
	a.log.Info("wakehost serving", attrs...)
	served := make(chan error, 2)
	serve := func(s *http.Server, ln net.Listener) {
		if err := s.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
			served <- err
			return
		}
		served <- nil
	}
	n := 1
	go serve(a.http, a.ln)
	if a.admin != nil {
		n++
		go serve(a.admin, a.adminLn)
	}
	for range n {
		if err := <-served; err != nil {
			return err
		}
	}
	return nil
}

// Shutdown stops accepting, lets in-flight turns finish until ctx ends, then
// stops the watches, the plugins, the store and the simulator. When ctx
// ends first (the grace ran out), it logs "shutdown grace ran out" with the
// number of turns in flight, cuts them (each answers 503 and logs "turn cut
// by shutdown"), abandons the wake starts still running, and stops the
// rest: that is a clean shutdown, not an error.
func (a *App) Shutdown(ctx context.Context) error {
	var errs []error
	graceRanOut := false
	if a.hub != nil {
		// An event stream or a held request lasts as long as its client
		// waits: end them now (each with a last word), or the shutdown
		// would wait for them until the grace ran out.
		a.hub.Close()
	}
	if a.http != nil {
		if err := a.http.Shutdown(ctx); err != nil {
			graceRanOut = ctx.Err() != nil
			if !graceRanOut {
				errs = append(errs, fmt.Errorf("http: %w", err))
			}
		}
	}
	if graceRanOut {
		a.log.Warn("shutdown grace ran out", "turns_cut", a.reqs.turnsInFlight())
		cctx, cancel := context.WithTimeout(context.Background(), cutWait)
		a.reqs.cutAll(cctx)
		cancel()
		// A cut handler has returned, but net/http finishes its answer
		// (the last chunk, the flush) only after that: let the connections
		// go idle before closing them, or the client reads EOF instead of
		// its 503.
		sctx, cancel := context.WithTimeout(context.Background(), time.Second)
		a.http.Shutdown(sctx)
		cancel()
		a.http.Close()
	}
	if err := a.shutdownAdmin(ctx); err != nil {
		errs = append(errs, err)
	}
	if err := a.close(ctx, graceRanOut); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// close stops everything but the HTTP server. With graceRanOut, the wake
// starts still running are abandoned without an error (Shutdown logged that
// the grace ran out).
func (a *App) close(ctx context.Context, graceRanOut bool) error {
	var errs []error
	if a.coord != nil {
		if err := a.coord.Close(ctx); err != nil && !(graceRanOut && ctx.Err() != nil) {
			errs = append(errs, fmt.Errorf("watches: %w", err))
		}
	}
	if a.ln != nil {
		a.ln.Close() // Shutdown closed it if Serve ran; this covers New failing or Serve never called
	}
	if a.adminLn != nil {
		a.adminLn.Close()
	}
	for _, p := range a.provs {
		p.Close()
	}
	for _, g := range a.gpus {
		g.Close()
	}
	if a.server != nil {
		a.server.Drain(ctx) // an answered turn is stored after its handler returns
	}
	if a.store.Close != nil {
		if err := a.store.Close(); err != nil {
			errs = append(errs, fmt.Errorf("store: %w", err))
		}
	}
	if a.sim != nil {
		a.sim.Close()
	}
	if a.tempDir != "" {
		os.RemoveAll(a.tempDir)
	}
	return errors.Join(errs...)
}

// ready is /readyz: config loaded (it is, or New failed), store open, every
// plugin handshaken: each backend's GPU plugin and each provider's.
func (a *App) ready() error {
	for i, g := range a.gpus {
		switch {
		case g.Ready():
		case i == 0:
			return errors.New("conductor plugin not running")
		default:
			return fmt.Errorf("GPU plugin of backend %s not running", a.backends[i].Name)
		}
	}
	for _, p := range a.provs {
		if !p.Ready() {
			return errors.New("provider plugin not running")
		}
	}
	return nil
}
