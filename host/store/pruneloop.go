package store

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"
)

// Operator log lines of the background pruning (docs/operations.md, "Operator log
// lines").
const (
	LinePruned      = "store pruned"
	LinePruneFailed = "store prune failed"
)

// PruneLoop is a backend's background pruning: what StartPruning runs, the
// same for every backend. Its zero value is stopped and may be started.
type PruneLoop struct {
	mu     sync.Mutex
	stop   context.CancelFunc // nil while not running
	done   chan struct{}      // closed when the loop has returned
	closed bool               // Stop was called
}

// Start runs prune in the background with r: once at once, then every
// interval, as of now(), until Stop. A pass that did something logs
// LinePruned at INFO with its counts and then, when pruned is not nil,
// calls it with them; a pass that fails logs LinePruneFailed at ERROR, and
// the next one tries again. It fails when interval is not positive, when
// the loop already runs, and after Stop (ErrClosed). A nil log is
// slog.Default().
func (l *PruneLoop) Start(prune func(context.Context, time.Time, Retention) (Pruned, error), now func() time.Time,
	r Retention, interval time.Duration, log *slog.Logger, pruned func(Pruned)) error {
	if interval <= 0 {
		return fmt.Errorf("store: prune interval %v: must be positive", interval)
	}
	if log == nil {
		log = slog.Default()
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case l.closed:
		return ErrClosed
	case l.stop != nil:
		return errors.New("store: pruning already runs")
	}
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	l.stop, l.done = stop, done
	go func() {
		defer close(done)
		tick := time.NewTicker(interval)
		defer tick.Stop()
		for {
			pass(ctx, prune, now, r, log, pruned)
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	return nil
}

// pass is one Prune of the background pruning, logged, and reported to
// pruned when it did something.
func pass(ctx context.Context, prune func(context.Context, time.Time, Retention) (Pruned, error), now func() time.Time,
	r Retention, log *slog.Logger, pruned func(Pruned)) {
	start := time.Now()
	p, err := prune(ctx, now(), r)
	switch {
	case errors.Is(err, context.Canceled):
		// Stop ended it between two batches; the rest waits for the next
		// start.
	case err != nil:
		log.Error(LinePruneFailed, "err", err)
	case p != Pruned{}:
		log.Info(LinePruned, "sessions", p.Sessions, "pending", p.Pending, "stamped", p.Stamped,
			"took", time.Since(start).Round(time.Millisecond))
		if pruned != nil {
			pruned(p)
		}
	}
}

// Stop stops the loop and waits for a pass under way; later Starts fail.
// Stopping a stopped loop does nothing.
func (l *PruneLoop) Stop() {
	l.mu.Lock()
	stop, done := l.stop, l.done
	l.stop, l.closed = nil, true
	l.mu.Unlock()
	if stop != nil {
		stop()
		<-done
	}
}
