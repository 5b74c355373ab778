package supervisor

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// The relaunch schedule of a plugin that exited: the first relaunch comes
// firstRelaunchDelay after the exit, and each further attempt of a streak
// waits twice as long as the one before, up to maxRelaunchDelay. A streak
// ends when a launched plugin has run for stableAfter: its next exit is
// relaunched after firstRelaunchDelay again. A binary that keeps failing
// so costs a launch every 30 s, however much traffic there is.
const (
	firstRelaunchDelay = 100 * time.Millisecond
	maxRelaunchDelay   = 30 * time.Second
	stableAfter        = 10 * time.Second
)

// callWait is how far ahead a call that finds the plugin down waits for its
// relaunch; a relaunch due later (or after the call's deadline) fails the
// call at once.
const callWait = time.Second

// relaunchDelay is the wait before p's attempt-th relaunch of a streak
// (attempt >= 1), from firstRelaunchDelay, or Spec.firstRelaunch when a
// test set it.
func (p *process) relaunchDelay(attempt int) time.Duration {
	d := firstRelaunchDelay
	if p.spec.firstRelaunch > 0 {
		d = p.spec.firstRelaunch
	}
	for i := 1; i < attempt && d < maxRelaunchDelay; i++ {
		d *= 2
	}
	return min(d, maxRelaunchDelay)
}

// instance is one launched plugin process.
type instance struct {
	impl    any // what Dispense returned
	pid     string
	started time.Time
	exited  <-chan struct{} // closed once the process has exited, at the latest when kill returns
	kill    func()          // stops the process and waits for it; safe to call again
}

func (i *instance) hasExited() bool {
	select {
	case <-i.exited:
		return true
	default:
		return false
	}
}

// launchFunc launches and handshakes one plugin process.
type launchFunc func(ctx context.Context) (*instance, error)

// process is one plugin kind's subprocess and its supervision. After the
// first launch that succeeds, a goroutine watches the process: when it
// exits, for whatever reason and with or without traffic, the goroutine
// relaunches it on the relaunch schedule until one launch succeeds, then
// watches the new process. Before that first success (Start failed, or no
// call came yet), a call launches the plugin itself.
type process struct {
	spec   Spec
	kind   string // pluginapi.KindGPU or pluginapi.KindProvider
	log    *slog.Logger
	scrub  func(string) string
	launch launchFunc

	stopCtx context.Context // cancelled by close
	stop    context.CancelFunc
	wg      sync.WaitGroup // the watch and every launch in progress

	mu          sync.Mutex
	closed      bool
	cur         *instance     // the last launched process; nil while down
	gen         uint64        // counts launches; a call remembers the one it used
	launching   chan struct{} // non-nil while a launch runs; closed when it ends
	supervised  bool          // the watch runs (a launch has succeeded)
	attempt     int           // relaunches in the current streak
	nextLaunch  time.Time     // while the watch waits to relaunch: when it will
	lastErr     error         // the last launch's failure; nil after a success
	failures    uint64        // launches that failed
	stateChange chan struct{} // closed and replaced whenever the above change
}

func newProcess(spec Spec, kind string) *process {
	p := newSupervised(spec, kind, nil)
	p.launch = p.launchPlugin
	return p
}

// newSupervised is a process that launches with launch (tests give a fake).
func newSupervised(spec Spec, kind string, launch launchFunc) *process {
	log := spec.logger().With("plugin", spec.Name)
	ctx, stop := context.WithCancel(context.Background())
	return &process{
		spec: spec, kind: kind, log: log, scrub: scrubber(spec.Secrets), launch: launch,
		stopCtx: ctx, stop: stop, stateChange: make(chan struct{}),
	}
}

// changedLocked wakes every call waiting for the state to change.
func (p *process) changedLocked() {
	close(p.stateChange)
	p.stateChange = make(chan struct{})
}

// start launches the plugin now unless a live one is running.
func (p *process) start(ctx context.Context) error {
	_, _, err := p.get(ctx)
	return err
}

// get returns the live plugin and its generation. When it is down and the
// watch relaunches it within callWait (and before ctx's deadline), get
// waits for that launch, and for no other: when it fails, or when the
// relaunch is further off, get fails. Before the first successful launch,
// get launches the plugin itself; callers that arrive during a launch wait
// for it and share it.
func (p *process) get(ctx context.Context) (any, uint64, error) {
	p.mu.Lock()
	failures := p.failures
	p.mu.Unlock()
	for {
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			return nil, 0, ErrClosed
		}
		if p.cur != nil && !p.cur.hasExited() {
			impl, gen := p.cur.impl, p.gen
			p.mu.Unlock()
			return impl, gen, nil
		}
		var wait <-chan struct{}
		switch {
		case p.launching != nil:
			wait = p.launching
		case p.supervised:
			// Down: the watch relaunches it.
			if p.failures != failures || (!p.nextLaunch.IsZero() && !p.dueSoon(ctx)) {
				err := p.downErrorLocked()
				p.mu.Unlock()
				return nil, 0, err
			}
			wait = p.stateChange
		default:
			p.mu.Unlock()
			impl, gen, err := p.launchNow(ctx)
			if err != nil || impl != nil {
				return impl, gen, err
			}
			continue
		}
		p.mu.Unlock()
		select {
		case <-wait:
		case <-ctx.Done():
			return nil, 0, fmt.Errorf("plugin %s: waiting for its launch: %w", p.spec.Name, ctx.Err())
		}
	}
}

// dueSoon reports whether the watch's next launch starts within callWait
// and before ctx's deadline. Callers hold p.mu.
func (p *process) dueSoon(ctx context.Context) bool {
	due := time.Until(p.nextLaunch)
	if d, ok := ctx.Deadline(); ok && p.nextLaunch.After(d) {
		return false
	}
	return due <= callWait
}

// downErrorLocked is the error of a call that finds the plugin down with
// its relaunch further off.
func (p *process) downErrorLocked() error {
	msg := fmt.Sprintf("plugin %s is not running; relaunch %d in %v", p.spec.Name, p.attempt, time.Until(p.nextLaunch).Round(time.Millisecond))
	if p.lastErr != nil {
		return &scrubbedError{msg: p.scrub(msg + ": the last launch failed: " + p.lastErr.Error()), err: p.lastErr}
	}
	return &scrubbedError{msg: msg, err: ErrNotRunning}
}

// launchNow launches the plugin on a call's behalf (before the first
// successful launch), starts the watch once one succeeds, and returns the
// plugin. It returns nothing when another launch got there first: the
// caller looks again.
func (p *process) launchNow(ctx context.Context) (any, uint64, error) {
	p.mu.Lock()
	if p.closed || p.launching != nil || p.supervised {
		p.mu.Unlock()
		return nil, 0, nil
	}
	p.launching = make(chan struct{})
	p.wg.Add(1)
	p.mu.Unlock()
	defer p.wg.Done()

	inst, err := p.launch(ctx)

	p.mu.Lock()
	close(p.launching)
	p.launching = nil
	p.changedLocked()
	switch {
	case err != nil:
		p.lastErr = err
		p.failures++
		p.mu.Unlock()
		return nil, 0, err
	case p.closed:
		p.mu.Unlock()
		inst.kill()
		return nil, 0, ErrClosed
	}
	p.installLocked(inst)
	p.supervised = true
	p.wg.Add(1)
	go p.watch()
	gen := p.gen
	p.mu.Unlock()
	return inst.impl, gen, nil
}

// installLocked makes inst the live plugin.
func (p *process) installLocked(inst *instance) {
	p.cur = inst
	p.gen++
	p.lastErr = nil
	p.changedLocked()
	p.log.Debug("plugin started", "pid", inst.pid, "launch", p.gen)
}

// watch waits for the live plugin to exit and relaunches it, until close.
func (p *process) watch() {
	defer p.wg.Done()
	for {
		p.mu.Lock()
		inst := p.cur
		p.mu.Unlock()
		if inst == nil {
			return // closed
		}
		select {
		case <-inst.exited:
		case <-p.stopCtx.Done():
			return
		}
		ran := time.Since(inst.started)
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			return
		}
		p.cur = nil
		if ran >= stableAfter {
			p.attempt = 0
		}
		p.changedLocked()
		next := p.relaunchDelay(p.attempt + 1)
		p.mu.Unlock()
		inst.kill() // the process is gone; this releases go-plugin's side
		p.log.Warn("plugin not running; relaunching", "pid", inst.pid, "ran", ran.Round(time.Millisecond), "next_delay", next)
		if !p.relaunch() {
			return
		}
	}
}

// relaunch launches the plugin on the relaunch schedule until a launch
// succeeds (true) or close (false).
func (p *process) relaunch() bool {
	for {
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			return false
		}
		p.attempt++
		attempt, delay := p.attempt, p.relaunchDelay(p.attempt)
		p.nextLaunch = time.Now().Add(delay)
		p.changedLocked()
		p.mu.Unlock()

		timer := time.NewTimer(delay)
		select {
		case <-timer.C:
		case <-p.stopCtx.Done():
			timer.Stop()
			return false
		}

		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			return false
		}
		p.nextLaunch = time.Time{}
		p.launching = make(chan struct{})
		p.changedLocked()
		p.mu.Unlock()

		inst, err := p.launch(p.stopCtx)

		p.mu.Lock()
		close(p.launching)
		p.launching = nil
		p.changedLocked()
		switch {
		case err == nil && p.closed:
			p.mu.Unlock()
			inst.kill()
			return false
		case err == nil:
			p.installLocked(inst)
			p.mu.Unlock()
			p.spec.Metrics.PluginRelaunched(p.spec.Name)
			p.log.Info("plugin relaunched", "attempt", attempt, "pid", inst.pid)
			return true
		}
		p.lastErr = err
		p.failures++
		closed := p.closed
		p.mu.Unlock()
		if closed {
			return false
		}
		p.spec.Metrics.PluginRelaunchFailed(p.spec.Name)
		p.log.Error("plugin relaunch failed", "attempt", attempt, "next_delay", p.relaunchDelay(attempt+1), "error", p.scrub(err.Error()))
	}
}

// crashed records that a call on generation gen failed because the plugin
// died: it logs the crash and stops the process (if it is not gone
// already); the watch relaunches it. A later generation is left alone: it
// is already a new process.
func (p *process) crashed(gen uint64, err error) {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return
	}
	var inst *instance
	if p.gen == gen {
		inst = p.cur
	}
	p.mu.Unlock()
	p.log.Warn("plugin crashed during a call", "error", p.scrub(err.Error()))
	if inst != nil {
		inst.kill()
	}
}

// isCrash reports whether err from a call means the plugin died:
// gRPC Unavailable; Canceled while the caller's ctx is live (go-plugin
// closes the connection when it sees the process exit); or any other gRPC
// error while the process has exited. The caller's own cancellation is
// never a crash, and neither is data the plugin returned, nor a call cut
// by Close.
func (p *process) isCrash(ctx context.Context, gen uint64, err error) bool {
	if err == nil || ctx.Err() != nil || p.isClosed() {
		return false
	}
	st, ok := status.FromError(err)
	if !ok {
		return false
	}
	switch st.Code() {
	case codes.Unavailable, codes.Canceled:
		return true
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.gen == gen && p.cur != nil && p.cur.hasExited()
}

func (p *process) isClosed() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.closed
}

func (p *process) ready() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return !p.closed && p.cur != nil && !p.cur.hasExited()
}

// close stops the watch, waits for a launch in progress, and kills the
// plugin.
func (p *process) close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	inst := p.cur
	p.cur = nil
	p.changedLocked()
	p.mu.Unlock()
	p.stop()
	if inst != nil {
		inst.kill()
	}
	p.wg.Wait()
	return nil
}
