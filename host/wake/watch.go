package wake

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/wakeonchat/wakeonchat/machines"
	"github.com/wakeonchat/wakeonchat/plugins/pluginapi"
)

// Prober asks whether a pod's model answers: the provider plugin serving
// the pod (host/app wires it).
type Prober interface {
	// Probe asks the model of pod once whether it answers, behind the pod's
	// proxy URL as the conductor gave it (the Prober adds its provider's
	// path). A result that is not answered says why in its Message; an
	// error means the probe learned nothing about the model (no provider
	// serves the pod, the plugin crashed, ...). The watch logs the message
	// and the error's text: neither may carry a URL or a secret.
	Probe(ctx context.Context, pod, proxyURL string) (pluginapi.ProbeResult, error)
}

// Resume watches again, after a restart, every stored wake whose outcome is
// unknown (waking, loading, stuck) and whose pod configured says is still
// configured. Each watch keeps its wake's clock: it reads the pod at once,
// then every WatchPoll, probes its model while it is up, and gives up
// WakeWatch after the original request. A wake already past WakeWatch gets
// that one read, and one probe if the read finds the pod up: what they say
// is fed to the machine, and a wake still not ready is left as it is
// (nobody watched the deadline, so never-ready would be a guess). Resume
// does not wait for the watches. It also starts the host's own stops of
// the pods in Config.Stops (idle.go).
func (c *Coordinator) Resume(configured func(pod string) bool) error {
	if !c.enter() {
		return ErrClosed
	}
	defer c.wg.Done()
	recs, err := c.records.Records(c.stopping)
	if err != nil {
		return fmt.Errorf("wake: resume: list records: %w", err)
	}
	for _, r := range recs {
		if r.WakeRequestedAt.IsZero() || !machines.InProgress(r.State) || !configured(r.Pod) {
			continue
		}
		c.wg.Add(1) // under Resume's own count
		go func() {
			defer c.wg.Done()
			c.watch(r.Pod, r.WakeRequestedAt, true)
		}()
	}
	if c.takeover > 0 {
		c.wg.Add(1)
		go c.takeOver(configured)
	}
	c.startStops(recs, configured)
	return nil
}

// watch follows the wake of pod requested at wake while its outcome is
// unknown (D12). It reads the pod every WatchPoll and feeds what the
// conductor says to the machine; while the last read found the pod RUNNING
// with a proxy URL it also probes the model every ProbeInterval, at once
// when the pod is first found up, and feeds the first answer to the
// machine as an answered turn (with the read's readySince). It stops when
// the machine leaves the wake's states (ready, or any other outcome), the
// wake is superseded, or Close stops it; or at wake + WakeWatch, after a
// last read (and a last probe when the pod is up), when the wake is
// recorded never-ready. A resumed watch reads the pod at once. At most one
// watch runs per (pod, wake). Nothing is read or probed for a pod with no
// wake on the clock.
func (c *Coordinator) watch(pod string, wake time.Time, resumed bool) {
	if c.watched != nil {
		defer c.watched(pod, wake) // last: after the release below
	}
	key := watchKey{pod: pod, wake: wake.UnixNano()}
	if ok, dup := c.claim(key); ok && !c.takeLease(key) {
		c.unclaim(key)
		return
	} else if !ok {
		if dup {
			c.log.LogAttrs(context.Background(), slog.LevelDebug,
				fmt.Sprintf("wake watch for pod %s: the wake requested at %s is already watched", pod, machines.FormatClock(wake, c.now())),
				slog.String("pod", pod), slog.Time("wakeRequestedAt", wake))
		}
		return
	}
	defer c.release(key)
	if resumed {
		c.log.LogAttrs(context.Background(), slog.LevelInfo,
			fmt.Sprintf("wake watch resumed for pod %s: wake requested at %s", pod, machines.FormatClock(wake, c.now())),
			slog.String("pod", pod), slog.Time("wakeRequestedAt", wake))
	}
	deadline := wake.Add(c.wakeWatch)
	began := c.now()
	// late: resumed after the deadline, so the host never watched it pass.
	late := resumed && !began.Before(deadline)
	nextRead := began.Add(c.watchPoll)
	if resumed {
		nextRead = began
	}
	var up upPod // what the probes aim at; zero while the pod is not up
	var nextProbe time.Time
	for {
		due := earliest(nextRead, deadline)
		if up.probing() {
			due = earliest(due, nextProbe)
		}
		if wait := due.Sub(c.now()); wait > 0 {
			select {
			case <-c.clock.After(wait):
			case <-c.stopping.Done():
				return
			}
		}
		if !c.still(pod, wake) {
			return
		}
		final := !c.now().Before(deadline)
		if final || !c.now().Before(nextRead) {
			p, ok := c.read(pod, wake)
			nextRead = c.now().Add(c.watchPoll)
			if !c.still(pod, wake) {
				return
			}
			if ok && c.prober != nil && c.startsProbing(&up, p) {
				nextProbe = c.now()
				c.log.LogAttrs(context.Background(), slog.LevelInfo,
					fmt.Sprintf("wake watch for pod %s: the pod is RUNNING; probing its model every %s", pod, c.probeEvery),
					slog.String("pod", pod), slog.Time("wakeRequestedAt", wake))
			}
		}
		if up.probing() && (final || !c.now().Before(nextProbe)) {
			c.probe(pod, wake, &up)
			nextProbe = c.now().Add(c.probeEvery)
			if !c.still(pod, wake) {
				return
			}
		}
		if !final {
			continue
		}
		now := c.now()
		if late {
			c.log.LogAttrs(context.Background(), slog.LevelInfo,
				fmt.Sprintf("wake watch for pod %s: outcome unknown (resumed after the %s watch of the request at %s)",
					pod, minutes(c.wakeWatch), machines.FormatClock(wake, now)),
				slog.String("pod", pod), slog.Time("wakeRequestedAt", wake))
			return
		}
		recorded, err := c.feed(c.stopping, pod, wake, machines.Event{Trigger: machines.NeverReadySeen})
		switch {
		case err != nil:
			c.log.LogAttrs(context.Background(), slog.LevelError, err.Error(), slog.String("pod", pod))
		case recorded:
			c.log.LogAttrs(context.Background(), slog.LevelError,
				fmt.Sprintf("wake never-ready for pod %s: not ready %s after the request at %s",
					pod, minutes(now.Sub(wake)), machines.FormatClock(wake, now)),
				slog.String("pod", pod), slog.Time("wakeRequestedAt", wake))
		}
		return
	}
}

// earliest is the earlier of a and b.
func earliest(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

// still reports whether the watch of the wake requested at wake goes on:
// the Coordinator is not closing and the wake is still followed.
func (c *Coordinator) still(pod string, wake time.Time) bool {
	return c.stopping.Err() == nil && c.following(pod, wake)
}

// read reads the pod once, capped at WatchPoll, and feeds what the
// conductor says to the machine. A failed read is logged and changes
// nothing (false).
func (c *Coordinator) read(pod string, wake time.Time) (pluginapi.Pod, bool) {
	ctx, cancel := context.WithTimeout(c.stopping, c.watchPoll)
	defer cancel()
	p, err := c.getPod(ctx, pod)
	if err != nil {
		if c.stopping.Err() == nil {
			c.log.LogAttrs(context.Background(), slog.LevelWarn,
				fmt.Sprintf("wake watch for pod %s: pod read failed: %s", pod, errorText(err)),
				slog.String("pod", pod), slog.Time("wakeRequestedAt", wake))
		}
		return pluginapi.Pod{}, false
	}
	c.Observe(c.stopping, pod, p)
	return p, true
}

// upPod is where a watch probes: the proxy URL and readySince of the last
// read that found the pod RUNNING, FOUND, with a proxy URL, and the last
// probe failure logged at warn level.
type upPod struct {
	proxyURL   string // "" while the pod is not up: no probing
	readySince time.Time
	problem    string
	// answered is when a probe first got the model's answer, zero before:
	// the time the answer is fed with, again and again while the store
	// fails to record it, so that a wake that became ready during an
	// outage is recorded ready when the host saw it, not when the store
	// came back.
	answered time.Time
}

func (u upPod) probing() bool { return u.proxyURL != "" }

// startsProbing updates up from a read of the pod and reports whether
// probing starts with it. A read the conductor could not make
// (UNREADABLE) changes nothing; any other read that does not find the pod
// RUNNING, FOUND, with a proxy URL stops the probing.
func (c *Coordinator) startsProbing(up *upPod, p pluginapi.Pod) bool {
	lookup := orFound(p.Lookup)
	if lookup == pluginapi.LookupUnreadable {
		return false
	}
	was := up.probing()
	if !p.IsRunning || p.ProxyURL == "" || lookup != pluginapi.LookupFound {
		*up = upPod{}
		return false
	}
	up.proxyURL, up.readySince = p.ProxyURL, p.ReadySince
	return !was
}

// probe asks the pod's model once, capped at ProbeInterval, and feeds an
// answer to the machine as an answered turn, with the readySince of the
// read that found the pod up: ready since then when it is this boot's, else
// since now. A model that does not answer yet, or a probe within the cap
// that got no answer, is logged at debug level; a probe that failed
// otherwise (the plugin crashed, none serves the pod, ...) at warn level,
// once for a run of the same failure. Neither changes anything.
func (c *Coordinator) probe(pod string, wake time.Time, up *upPod) {
	ctx, cancel := context.WithTimeout(c.stopping, c.probeEvery)
	defer cancel()
	res, err := c.callProbe(ctx, pod, up.proxyURL)
	if c.stopping.Err() != nil {
		return
	}
	attrs := []slog.Attr{slog.String("pod", pod), slog.Time("wakeRequestedAt", wake)}
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		up.problem = ""
		c.log.LogAttrs(context.Background(), slog.LevelDebug,
			fmt.Sprintf("wake watch for pod %s: model not answering yet: no answer within %s", pod, c.probeEvery), attrs...)
	case err != nil:
		text, level := err.Error(), slog.LevelWarn
		if errors.Is(err, errProbePanicked) {
			text = errProbePanicked.Error()
		}
		if text == up.problem {
			level = slog.LevelDebug
		}
		up.problem = text
		c.log.LogAttrs(context.Background(), level,
			fmt.Sprintf("wake watch for pod %s: probe failed: %s", pod, text), attrs...)
	case !res.Answered:
		up.problem = ""
		c.log.LogAttrs(context.Background(), slog.LevelDebug,
			fmt.Sprintf("wake watch for pod %s: model not answering yet: %s", pod, cmp.Or(res.Message, "no answer")), attrs...)
	default:
		if up.answered.IsZero() {
			up.answered = c.now()
		}
		c.event(c.stopping, pod, machines.Event{Trigger: machines.Answered, ReadySince: up.readySince, Probe: true, At: up.answered})
	}
}

// errProbePanicked is a probe that panicked.
var errProbePanicked = errors.New("probe panicked")

// callProbe calls the Prober; a panic is an error.
func (c *Coordinator) callProbe(ctx context.Context, pod, proxyURL string) (r pluginapi.ProbeResult, err error) {
	defer func() {
		if recover() != nil {
			r, err = pluginapi.ProbeResult{}, errProbePanicked
		}
	}()
	return c.prober.Probe(ctx, pod, proxyURL)
}

// following reports whether this host still holds the watch's lease (when
// the store has leases) and pod's record is still on the wake requested at
// wake with its outcome unknown. A superseded wake is logged at debug level:
// the newer wake has its own watch. A record that cannot be read counts as
// followed: the next write decides; its failure is logged once until the
// store answers again (storeFailed).
func (c *Coordinator) following(pod string, wake time.Time) bool {
	if !c.leaseHeld(watchKey{pod: pod, wake: wake.UnixNano()}) {
		return false
	}
	r, err := c.records.Record(c.stopping, pod)
	if err != nil {
		if c.stopping.Err() == nil {
			c.storeFailed(context.Background(), pod, fmt.Sprintf("wake: record of pod %s: %v", pod, err))
		}
		return true
	}
	c.storeAnswered(context.Background())
	if !r.WakeRequestedAt.Equal(wake) {
		c.superseded(pod, wake)
		return false
	}
	return machines.InProgress(r.State)
}

// superseded logs, at debug level, that a watch stopped because a newer wake
// is on record. It wrote nothing; the newer wake has its own watch.
func (c *Coordinator) superseded(pod string, wake time.Time) {
	c.log.LogAttrs(context.Background(), slog.LevelDebug,
		fmt.Sprintf("wake watch for pod %s stopped: the wake requested at %s is superseded", pod, machines.FormatClock(wake, c.now())),
		slog.String("pod", pod), slog.Time("wakeRequestedAt", wake))
}

// errPanicked is a pod read that panicked.
var errPanicked = errors.New("pod read panicked")

// getPod calls the GPU plugin's GetPod; a panic is an error.
func (c *Coordinator) getPod(ctx context.Context, pod string) (p pluginapi.Pod, err error) {
	defer func() {
		if recover() != nil {
			p, err = pluginapi.Pod{}, errPanicked
		}
	}()
	return c.gpu.GetPod(ctx, pod)
}

// errorText describes a pod read's failure without anything that could hold
// a URL: a plugin's LookupError says it in URL-free words; anything else is
// reduced to its class.
func errorText(err error) string {
	var le *pluginapi.LookupError
	switch {
	case errors.As(err, &le):
		return le.Error()
	case errors.Is(err, errPanicked):
		return err.Error()
	default:
		return pluginapi.ErrorClass(err)
	}
}

// minutes is d in whole minutes, for a log line: "35 min".
func minutes(d time.Duration) string { return fmt.Sprintf("%d min", int(d/time.Minute)) }

// claim registers the watch of key. It fails when the Coordinator is closed,
// or when a watch of key runs already (dup).
func (c *Coordinator) claim(key watchKey) (ok, dup bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case c.closed:
		return false, false
	case c.watching[key]:
		return false, true
	}
	c.watching[key] = true
	return true, false
}

// release gives up a watch that ended: its lease, then its claim.
func (c *Coordinator) release(key watchKey) {
	c.releaseLease(key)
	c.unclaim(key)
}
