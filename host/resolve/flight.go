package resolve

import (
	"context"
	"errors"
	"sync"
)

// errLookupPanicked is what callers sharing a lookup get when the GPU plugin
// panicked in it; the panic itself propagates in the caller that ran it.
var errLookupPanicked = errors.New("pod lookup panicked")

// flight lets concurrent callers share one conductor lookup: the first caller
// runs it, the others wait for its answer. It is the one-key core of
// golang.org/x/sync/singleflight. The first caller runs the lookup (the
// resolver gives it its own bounded context); a waiter whose own context
// ends stops waiting and gets its context's error.
type flight struct {
	mu   sync.Mutex
	call *flightCall

	// onJoin, when set, is called each time a caller joins a lookup already
	// in flight. Tests use it to know every caller has arrived.
	onJoin func()
}

type flightCall struct {
	done chan struct{}
	res  Resolution
	err  error
}

func (f *flight) do(ctx context.Context, fn func() (Resolution, error)) (Resolution, error) {
	f.mu.Lock()
	if c := f.call; c != nil {
		join := f.onJoin
		f.mu.Unlock()
		if join != nil {
			join()
		}
		select {
		case <-c.done:
			return c.res, c.err
		case <-ctx.Done():
			return Resolution{}, ctx.Err()
		}
	}
	c := &flightCall{done: make(chan struct{}), err: errLookupPanicked}
	f.call = c
	f.mu.Unlock()

	defer func() {
		f.mu.Lock()
		f.call = nil
		f.mu.Unlock()
		close(c.done)
	}()
	c.res, c.err = fn()
	return c.res, c.err
}
