package resolve

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/wakeonchat/wakeonchat/plugins/pluginapi"
	"golang.org/x/sync/singleflight"
)

// Resolution is where a provider's model is, as last learned.
type Resolution struct {
	Pod, Status, PodID string
	Lookup             pluginapi.Lookup
	IsRunning          bool
	// Endpoint is the pod's proxy URL joined with the provider's path; ""
	// when the pod is not ready. Never logged, never in a reply: it is left
	// out of JSON, String and LogValue.
	Endpoint   string    `json:"-"`
	ReadySince time.Time // zero when the conductor gave none
	// FromCache is true when this is the last known ready resolution, served
	// because the conductor could not be reached (D8). It is never fresh
	// evidence that the pod is up.
	FromCache bool
}

// ready reports whether the conductor said the pod is up and reachable: an
// endpoint is set only then.
func (r Resolution) ready() bool { return r.Endpoint != "" }

// LogValue lists everything but the endpoint.
func (r Resolution) LogValue() slog.Value {
	return slog.GroupValue(
		slog.String("pod", r.Pod),
		slog.String("status", r.Status),
		slog.String("podId", r.PodID),
		slog.String("lookup", string(r.Lookup)),
		slog.Bool("isRunning", r.IsRunning),
		slog.Time("readySince", r.ReadySince),
		slog.Bool("fromCache", r.FromCache),
	)
}

// String describes the resolution without its endpoint, so that %v never
// prints it.
func (r Resolution) String() string {
	return fmt.Sprintf("pod %s status %s lookup %s running=%t fromCache=%t",
		r.Pod, r.Status, r.Lookup, r.IsRunning, r.FromCache)
}

// Resolver tracks one pod for one provider path. It is safe for concurrent
// use. Every conductor answer updates what it holds:
//
//   - a ready answer (running, FOUND, with a proxy URL) becomes the held
//     resolution, reused by Current without asking, and the last known ready
//     one;
//   - any other answer, and a failed lookup, drops the held resolution but
//     keeps the last known ready one, which is served tagged FromCache while
//     the conductor cannot be reached (D8).
type Resolver struct {
	gpu      pluginapi.GPU
	pod      string
	path     string
	observer Observer // nil: nobody is told

	flight  singleflight.Group // one key: the pod's lookup
	timeout time.Duration      // cap on one shared lookup; see SetLookupTimeout

	mu        sync.Mutex
	held      Resolution // valid when hasHeld
	hasHeld   bool
	lastReady Resolution // valid when hasReady; never mutated once stored
	hasReady  bool
	lastView  Resolution // the last answer of any kind, for Lookup
	hasView   bool
}

// NewResolver returns a resolver for pod, whose model answers under path
// (such as "/v1") on the pod's proxy URL.
func NewResolver(gpu pluginapi.GPU, pod, path string) *Resolver {
	return &Resolver{gpu: gpu, pod: pod, path: path, timeout: DefaultLookupTimeout}
}

// Observer is told what the resolver learns about a pod, whoever asked: the
// wake coordinator feeds it to the pod lifecycle machine, so the machine
// hears every read of the pod (a turn's, a view's) and every answer of its
// model. Neither method may call back into the Resolver or its Models.
type Observer interface {
	// Observe is every answer the conductor gives.
	Observe(ctx context.Context, pod string, p pluginapi.Pod)
	// Answered is every turn the pod's model answered, with the
	// conductor's readySince of the resolution it answered on.
	Answered(ctx context.Context, pod string, readySince time.Time)
}

// SetObserver makes o hear every conductor answer and every answered turn.
// Call it before the resolver is used.
func (r *Resolver) SetObserver(o Observer) { r.observer = o }

// DefaultLookupTimeout caps one conductor lookup until SetLookupTimeout says
// otherwise.
const DefaultLookupTimeout = 10 * time.Second

// SetLookupTimeout caps every conductor lookup at d, whatever the callers'
// contexts allow: a GPU plugin that never answers must not hold a turn, its
// session or the lookups that share it. Call it before the resolver is used.
// The host sets lookup_timeout plus a second, so the plugin's own cap, which
// says what happened, fires first.
func (r *Resolver) SetLookupTimeout(d time.Duration) {
	if d > 0 {
		r.timeout = d
	}
}

// Current returns the held ready resolution without asking the conductor.
// While none is held it asks, like Refresh; concurrent callers share one
// lookup.
func (r *Resolver) Current(ctx context.Context) (Resolution, error) {
	r.mu.Lock()
	held, ok := r.held, r.hasHeld
	r.mu.Unlock()
	if ok {
		return held, nil
	}
	return r.Refresh(ctx)
}

// Refresh always asks the conductor; concurrent callers share one lookup.
//
//   - ready: the fresh resolution, now held;
//   - not ready (not running, RUNNING without a proxy URL, lookup
//     UNREADABLE or NOT_FOUND): a *NotReadyError, and nothing is held;
//   - the conductor could not be reached: a copy of the last known ready
//     resolution tagged FromCache, or a *ProviderError when there is none.
func (r *Resolver) Refresh(ctx context.Context) (Resolution, error) {
	res, err := r.ask(ctx)
	if err != nil {
		r.mu.Lock()
		last, ok := r.lastReady, r.hasReady
		r.mu.Unlock()
		if !ok {
			return Resolution{}, lookupError(r.pod, err)
		}
		last.FromCache = true // last is a copy; the stored value stays as it was
		return last, nil
	}
	if !res.ready() {
		return Resolution{}, NewNotReadyError(r.pod, res, false)
	}
	return res, nil
}

// Lookup asks the conductor for the pod's view, whatever its state (for
// GET /api/pods/{name}); it never returns a *NotReadyError. When the
// conductor cannot be reached it returns a copy of the last view tagged
// FromCache, or a *ProviderError when there is none. The view's Endpoint
// must not be shown.
func (r *Resolver) Lookup(ctx context.Context) (Resolution, error) {
	res, err := r.ask(ctx)
	if err != nil {
		r.mu.Lock()
		last, ok := r.lastView, r.hasView
		r.mu.Unlock()
		if !ok {
			return Resolution{}, lookupError(r.pod, err)
		}
		last.FromCache = true
		return last, nil
	}
	return res, nil
}

// errLookupPanicked is what callers sharing a lookup get when the GPU plugin
// panicked in it; the panic itself propagates in the caller that started it.
var errLookupPanicked = errors.New("pod lookup panicked")

// lookupPanic carries a panic out of the shared lookup's goroutine, where
// singleflight would make it unrecoverable, to the caller that started it.
type lookupPanic struct{ value any }

func (lookupPanic) Error() string { return errLookupPanicked.Error() }

// ask runs one shared conductor lookup and records its answer. Concurrent
// callers share it; each stops waiting when its own context ends, and the
// lookup goes on, bounded by the resolver's timeout.
func (r *Resolver) ask(ctx context.Context) (Resolution, error) {
	started := false // only this caller's fn runs if it started the lookup
	ch := r.flight.DoChan("lookup", func() (v any, err error) {
		started = true
		defer func() {
			if p := recover(); p != nil {
				err = lookupPanic{p}
			}
		}()
		return r.lookup(ctx)
	})
	select {
	case res := <-ch:
		if p, ok := res.Err.(lookupPanic); ok {
			if started { // written before ch was sent on
				panic(p.value)
			}
			return Resolution{}, errLookupPanicked
		}
		return res.Val.(Resolution), res.Err
	case <-ctx.Done():
		return Resolution{}, ctx.Err()
	}
}

// lookup asks the conductor and records its answer.
func (r *Resolver) lookup(ctx context.Context) (Resolution, error) {
	// The lookup is shared: it must not end because its first caller went
	// away, and it must end.
	lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), r.timeout)
	defer cancel()
	p, err := r.gpu.GetPod(lctx, r.pod)
	if err == nil && r.observer != nil {
		r.observer.Observe(lctx, r.pod, p)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if err != nil {
		r.held, r.hasHeld = Resolution{}, false
		return Resolution{}, err
	}
	res := r.resolution(p)
	r.lastView, r.hasView = res, true
	if res.ready() {
		r.held, r.hasHeld = res, true
		r.lastReady, r.hasReady = res, true
	} else {
		r.held, r.hasHeld = Resolution{}, false
	}
	return res, nil
}

// resolution turns a GPU plugin's report into a Resolution. An empty lookup
// means FOUND. The pod is ready when the plugin says it is running, the
// lookup is FOUND and there is a proxy URL; only then is Endpoint set.
func (r *Resolver) resolution(p pluginapi.Pod) Resolution {
	lookup := p.Lookup
	if lookup == "" {
		lookup = pluginapi.LookupFound
	}
	res := Resolution{
		Pod:        r.pod,
		Status:     p.Status,
		PodID:      p.PodID,
		Lookup:     lookup,
		IsRunning:  p.IsRunning,
		ReadySince: p.ReadySince,
	}
	if p.IsRunning && p.ProxyURL != "" && lookup == pluginapi.LookupFound {
		res.Endpoint = joinEndpoint(p.ProxyURL, r.path)
	}
	return res
}

// joinEndpoint appends path to a proxy URL with exactly one slash between.
func joinEndpoint(proxy, path string) string {
	if path == "" {
		return proxy
	}
	return strings.TrimSuffix(proxy, "/") + "/" + strings.TrimPrefix(path, "/")
}

// drop forgets the held resolution, so the next Current asks the conductor.
// The last known ready resolution is kept for D8.
func (r *Resolver) drop() {
	r.mu.Lock()
	r.held, r.hasHeld = Resolution{}, false
	r.mu.Unlock()
}
