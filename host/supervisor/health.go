package supervisor

import "time"

// Health is a read-only snapshot of one supervised plugin, for whoever shows
// the host's state (the status page). It holds no error text: a launch's
// failure may name paths and is logged where it happens.
type Health struct {
	Name string // Spec.Name: the plugin's binary name
	Kind string // pluginapi.KindGPU or pluginapi.KindProvider
	// Running is Ready: the plugin is running and handshaken.
	Running bool
	// Up is how long the running process has run, in wall time; zero while
	// it is down.
	Up time.Duration
	// Restarts counts the relaunches that succeeded since the host started
	// (the first launch is none).
	Restarts uint64
	// FailedLaunches counts the launches and relaunches that failed.
	FailedLaunches uint64
	// LastLaunchFailed is true while the plugin is down and its last launch
	// failed.
	LastLaunchFailed bool
	// NextRelaunch is how long until the watch relaunches the plugin, in
	// wall time: while it is down and a relaunch is scheduled; else zero.
	NextRelaunch time.Duration
	// Closed is true once the host stopped the plugin.
	Closed bool
}

// Health returns a snapshot of the plugin. It never launches or waits for
// anything.
func (pl launcher) Health() Health { return pl.p.health() }

func (p *process) health() Health {
	p.mu.Lock()
	defer p.mu.Unlock()
	h := Health{Name: p.spec.Name, Kind: p.kind, FailedLaunches: p.failures, Closed: p.closed}
	if p.gen > 1 {
		h.Restarts = p.gen - 1
	}
	if !p.closed && p.cur != nil && !p.cur.hasExited() {
		h.Running = true
		h.Up = time.Since(p.cur.started)
		return h
	}
	h.LastLaunchFailed = p.lastErr != nil
	if !p.closed && !p.nextLaunch.IsZero() {
		h.NextRelaunch = max(0, time.Until(p.nextLaunch))
	}
	return h
}
