package app

import (
	"context"
	"net/http"
	"sync"
	"time"

	"github.com/wakeonchat/wakeonchat/host/chat"
	"github.com/wakeonchat/wakeonchat/host/config"
)

// cutWait bounds how long Shutdown waits, once the grace ran out and the
// turns were cut, for their handlers to answer: every call a turn makes
// honours its context, so they return at once.
const cutWait = 5 * time.Second

// graceMargin is what the default grace allows beyond a turn's completion:
// its two pod lookups (each capped at lookup_timeout + 1 s) and this much
// more for the reply and the store.
const graceMargin = 5 * time.Second

// ShutdownGrace is the default -shutdown-grace: long enough for a turn
// whose model takes the whole completion_timeout, with both of its pod
// lookups, to finish: completion_timeout + 2 × (lookup_timeout + 1 s) +
// 5 s, 133 s with the defaults. A turn that needs more has already failed
// a completion and is retrying it; the grace cuts it.
func (a *App) ShutdownGrace() time.Duration { return shutdownGrace(a.cfg) }

// shutdownGrace is ShutdownGrace for cfg; Check reports it too.
func shutdownGrace(cfg config.Config) time.Duration {
	lookup := cfg.Conductor.LookupTimeout.Duration + time.Second
	return cfg.Timings.CompletionTimeout.Duration + 2*lookup + graceMargin
}

// requests tracks the requests in flight and gives them a context that
// Shutdown cancels, with chat.ErrShutdown as the cause, when the grace ran
// out.
type requests struct {
	ctx context.Context
	cut context.CancelCauseFunc

	mu     sync.Mutex
	active int           // handlers running
	turns  int           // of which POST /api/chat
	idle   chan struct{} // closed when active drops to 0; nil while nobody waits
}

func newRequests() *requests {
	ctx, cut := context.WithCancelCause(context.Background())
	return &requests{ctx: ctx, cut: cut}
}

// base is the http.Server's BaseContext.
func (rq *requests) base() context.Context { return rq.ctx }

// wrap counts h's requests in and out.
func (rq *requests) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		turn := r.URL.Path == "/api/chat"
		rq.mu.Lock()
		rq.active++
		if turn {
			rq.turns++
		}
		rq.mu.Unlock()
		defer func() {
			rq.mu.Lock()
			rq.active--
			if turn {
				rq.turns--
			}
			if rq.active == 0 && rq.idle != nil {
				close(rq.idle)
				rq.idle = nil
			}
			rq.mu.Unlock()
		}()
		h.ServeHTTP(w, r)
	})
}

// turnsInFlight is how many POST /api/chat requests are being served.
func (rq *requests) turnsInFlight() int {
	rq.mu.Lock()
	defer rq.mu.Unlock()
	return rq.turns
}

// cutAll cancels every request's context, with chat.ErrShutdown as the
// cause, and waits (until ctx ends) for their handlers to return.
func (rq *requests) cutAll(ctx context.Context) {
	rq.mu.Lock()
	var idle chan struct{}
	if rq.active > 0 {
		if rq.idle == nil {
			rq.idle = make(chan struct{})
		}
		idle = rq.idle
	}
	rq.mu.Unlock()
	rq.cut(chat.ErrShutdown)
	if idle != nil {
		select {
		case <-idle:
		case <-ctx.Done():
		}
	}
}
