package status

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/wakeonchat/wakeonchat/host/events"
	"github.com/wakeonchat/wakeonchat/machines"
)

// page is the whole page.
type page struct {
	Now       string // the host's clock when rendered
	ClockRate string // for the script: how fast the host's clock runs
	Refresh   string // for the script: milliseconds between fetches
	Pods      []podView
	Plugins   pluginsView
}

// podView is one pod's section: what the fragment at Fragment renders.
type podView struct {
	Name     string
	Fragment string // the path of this section's fragment
	Events   string // the path of the pod's event stream
	State    string // the machine's state
	Words    string // the state in words
	Tone     string // ok, busy, idle, bad
	// Unconfirmed is true in ready when the view is not fresh: the host has
	// not heard from the conductor since it started, or could not read it.
	Unconfirmed bool
	Status      string // the conductor's last status ("" when none seen)
	Preview     machines.Preview
	PreviewErr  bool   // the reply could not be rendered
	Estimate    string // how long a wake of this pod takes, and where that comes from
	Wake        *wakeView
	Chart       chart
	Wakes       []wakeRow // newest first
	LogErr      bool      // the wake log could not be read
	Now         string
}

// pod is the view of pod at now: the machine's record and last view as the
// hub has them, the wake log and the plugins' health, asking the conductor
// nothing.
func (s *Server) pod(ctx context.Context, name string, now time.Time) podView {
	u := s.cfg.Pods.Current(name)
	state, ready := u.Report()
	rec := u.Record
	est := machines.Estimate{}
	if s.cfg.Estimate != nil {
		est = s.cfg.Estimate(name)
	}
	if est.Wakes == 0 {
		est.Wake = s.cfg.Policy.Timings().ExpectedWake
	}
	v := podView{
		Name: name, Fragment: fragmentPath(name), Events: events.Path(name),
		State: string(state), Words: words(state, rec), Tone: tone(state),
		Unconfirmed: state == machines.Ready && !ready,
		Status:      u.View.Status,
		Estimate:    estimateWords(est),
		Now:         clockTime(now, now),
	}
	var err error
	if v.Preview, err = s.cfg.Policy.Preview(rec, u.View, est, now); err != nil {
		// Every reply rendered against sample data at start-up: a bug.
		s.cfg.Logger.Error("status page: a reply could not be rendered", "pod", name, "err", err)
		v.PreviewErr = true
	}
	if u.InProgress() {
		v.Wake = s.wakeInProgress(rec, est, now)
	}
	if s.cfg.Wakes != nil {
		ws, err := s.cfg.Wakes.Wakes(ctx, name)
		s.noteLog(name, err)
		if err != nil {
			v.LogErr = true
		} else {
			ws = ws[max(0, len(ws)-ChartWakes):]
			v.Chart = drawChart(ws, est)
			for i := len(ws) - 1; i >= 0; i-- {
				v.Wakes = append(v.Wakes, row(ws[i], now))
			}
		}
	}
	return v
}

// noteLog logs a wake log that could not be read once when it starts
// failing and once when it reads again: a page fetched every few seconds
// must not flood the log.
func (s *Server) noteLog(pod string, err error) {
	s.mu.Lock()
	was := s.logFailing[pod]
	s.logFailing[pod] = err != nil
	s.mu.Unlock()
	switch {
	case err != nil && !was:
		s.cfg.Logger.LogAttrs(context.Background(), slog.LevelError,
			"status page: wake log unreadable for pod "+pod+"; the page shows no wakes", slog.String("pod", pod), slog.String("err", err.Error()))
	case err == nil && was:
		s.cfg.Logger.Info("status page: wake log readable again for pod "+pod, "pod", pod)
	}
}

// estimateWords says how long a wake takes and what says so.
func estimateWords(est machines.Estimate) string {
	switch est.Wakes {
	case 0:
		return duration(est.Wake) + " (the expected_wake setting: no wake measured yet)"
	case 1:
		return duration(est.Wake) + " (the one measured wake)"
	}
	return fmt.Sprintf("%s (the median of the last %d wakes)", duration(est.Wake), est.Wakes)
}

// wakeView is the wake in progress: its three steps, how long it has run
// and when it is expected ready.
type wakeView struct {
	Steps    []step
	Elapsed  string // since the request
	Seconds  int64  // the same, for the script's tick
	Eta      string // when it is expected ready, "" once overdue
	Late     bool   // past the estimate
	Timeline timeline
}

// step is one step of a wake: requested, running, answering.
type step struct {
	Name string
	At   string // when it happened, or when it is expected ("~")
	Note string // how long it took, or "not yet"
	Done bool
}

func (s *Server) wakeInProgress(rec machines.Record, est machines.Estimate, now time.Time) *wakeView {
	elapsed := max(0, now.Sub(rec.WakeRequestedAt))
	w := &wakeView{Elapsed: duration(elapsed), Seconds: int64(elapsed / time.Second)}
	w.Steps = append(w.Steps, step{Name: "requested", At: clockTime(rec.WakeRequestedAt, now), Done: true})
	running := step{Name: "running", Note: "not yet"}
	if !rec.RunningAt.IsZero() {
		running = step{Name: "running", At: clockTime(rec.RunningAt, now), Done: true,
			Note: "booted in " + duration(rec.RunningAt.Sub(rec.WakeRequestedAt))}
	}
	answering := step{Name: "answering", Note: "not yet"}
	if at, remaining, ok := s.cfg.Policy.Eta(rec, est, now); ok {
		if remaining > 0 {
			w.Eta = clockTime(at, now)
			answering.At = "~" + w.Eta
			answering.Note = "expected in " + duration(remaining)
		} else {
			w.Late = true
			answering.Note = "not yet; past the estimate"
		}
	}
	w.Steps = append(w.Steps, running, answering)
	w.Timeline = drawTimeline(rec, est.Wake, now)
	return w
}

// wakeRow is one logged wake in the table under the chart.
type wakeRow struct {
	Requested string
	Outcome   string
	Tone      string
	Booting   string // "" when never seen up
	Loading   string // "" when never ready
	Served    bool
	Stopped   string // "" unless the host stopped the pod after this wake
}

func row(w machines.Wake, now time.Time) wakeRow {
	r := wakeRow{Requested: clockTime(w.RequestedAt, now), Outcome: outcome(w.Outcome), Served: w.Served, Tone: "bad"}
	if w.Outcome == string(machines.Ready) {
		r.Tone = "ok"
	} else if w.Outcome == machines.WakeSuperseded {
		r.Tone = "idle"
	}
	if d, ok := w.Booting(); ok {
		r.Booting = duration(d)
	}
	if d, ok := w.Loading(); ok {
		r.Loading = duration(d)
	}
	if !w.StoppedAt.IsZero() {
		r.Stopped = "stopped by the host at " + clockTime(w.StoppedAt, now) + ", " + stopWords(w.Stop)
	}
	return r
}

// stopWords says why the host stopped a pod.
func stopWords(reason string) string {
	if reason == machines.StopUnserved {
		return "nobody served"
	}
	return "idle"
}

// pluginsView is the plugins' section.
type pluginsView struct {
	Fragment string
	Plugins  []pluginRow
}

type pluginRow struct {
	Name, For string
	Running   bool
	Health    string // "running" or why not
	Up        string // "" while down
	Restarts  uint64
	Failed    uint64
}

func (s *Server) plugins() pluginsView {
	v := pluginsView{Fragment: Prefix + "plugins"}
	for _, p := range s.cfg.Plugins {
		h := p.Health.Health()
		r := pluginRow{Name: h.Name, For: p.For, Running: h.Running, Restarts: h.Restarts, Failed: h.FailedLaunches}
		switch {
		case h.Running:
			r.Health, r.Up = "running", duration(h.Up)
		case h.Closed:
			r.Health = "stopped (the host is shutting down)"
		case h.NextRelaunch > 0 && h.LastLaunchFailed:
			r.Health = "down: the last launch failed; next relaunch in " + duration(h.NextRelaunch)
		case h.NextRelaunch > 0:
			r.Health = "down: relaunch in " + duration(h.NextRelaunch)
		case h.LastLaunchFailed:
			r.Health = "down: the last launch failed"
		default:
			r.Health = "down"
		}
		v.Plugins = append(v.Plugins, r)
	}
	return v
}
