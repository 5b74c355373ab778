package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math"
	"math/rand/v2"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/wakeonchat/wakeonchat/engine"
	"github.com/wakeonchat/wakeonchat/host/app"
	"github.com/wakeonchat/wakeonchat/host/clock"
	"github.com/wakeonchat/wakeonchat/host/sim"
	"github.com/wakeonchat/wakeonchat/machines"
)

// Measurement 7: wake efficiency over a simulated working day. Users arrive
// at random (Poisson), often far enough apart that the pod idles out in
// between, each with a patience drawn from a range, and of one of three
// kinds. The host runs in this process on the simulator with a scaled clock,
// so a 9-minute boot takes a few real seconds; every figure is in simulated
// time, read from the simulator (which wakes served whom) and the users.

// userKind is how a user's client deals with a pod that is not ready.
type userKind int

const (
	// asker is the legacy client: it shows the reply and the user asks
	// again when the reply suggests ("in a few minutes", "shortly").
	asker userKind = iota
	// waiter sends wakeMode "wait", subscribes to the pod event stream it
	// names and resumes when the stream says ready.
	waiter
	// holder is an OpenAI client whose request the host holds (cold_start
	// "hold") until the model answers.
	holder
)

func (k userKind) String() string {
	return [...]string{"asker", "waiter", "holder"}[k]
}

// population is one run of the day: who the users are.
type population struct {
	name  string
	kinds []userKind // drawn uniformly
}

var populations = []population{
	{name: "all legacy", kinds: []userKind{asker}},
	{name: "all waiting", kinds: []userKind{waiter, holder}},
	{name: "mix", kinds: []userKind{asker, waiter, holder}},
}

// dayPlan is the simulated day every population lives through.
type dayPlan struct {
	length   time.Duration // arrivals happen within it
	meanGap  time.Duration // Poisson arrivals: the mean time between two
	patience [2]time.Duration
	scale    float64 // how much faster than real time the day runs
	seed     uint64
}

var (
	fullDay  = dayPlan{length: 8 * time.Hour, meanGap: 20 * time.Minute, patience: [2]time.Duration{4 * time.Minute, 20 * time.Minute}, scale: 120, seed: 7}
	quickDay = fullDay.lasting(2 * time.Hour)
)

// lasting is d with its arrivals within length instead.
func (d dayPlan) lasting(length time.Duration) dayPlan {
	d.length = length
	return d
}

// user is one person with one question and, once answered, a few
// follow-ups; its outcome is filled in as it goes, in simulated time.
type user struct {
	kind     userKind
	arrive   time.Time
	patience time.Duration
	// followUps are the pauses before each follow-up question, once
	// answered: 0 to 3 of them.
	followUps []time.Duration

	answered time.Time // the first question's answer; zero if never
	// answeredWall is the same moment on the wall clock: how long the
	// host took to deliver a pushed readiness is wall time, not scaled.
	answeredWall time.Time
	left         time.Time // gave up unanswered; zero if answered
	requests     int       // POSTs it sent (each may cost the host one conductor lookup)
}

// waitingAt reports whether u was waiting for its first answer at t: it had
// asked (or was about to ask again) and neither been answered nor left.
func (u *user) waitingAt(t time.Time) bool {
	if t.Before(u.arrive) {
		return false
	}
	end := u.answered
	if end.IsZero() {
		end = u.left
	}
	return end.IsZero() || t.Before(end)
}

// users draws a population's day: arrivals with exponential gaps, patience
// uniform in the range, 0 to 3 follow-ups, each 1 to 4 minutes after the
// answer before it. The same plan and population draw the same users, so
// the stop policies are compared on one day.
func (d dayPlan) users(p population, start time.Time) []*user {
	rng := rand.New(rand.NewPCG(d.seed, 1))
	pauses := rand.New(rand.NewPCG(d.seed, 2)) // apart, so the arrivals stay the same
	var out []*user
	for at := time.Duration(rng.ExpFloat64() * float64(d.meanGap)); at < d.length; at += time.Duration(rng.ExpFloat64() * float64(d.meanGap)) {
		u := &user{
			kind:     p.kinds[rng.IntN(len(p.kinds))],
			arrive:   start.Add(at),
			patience: d.patience[0] + time.Duration(rng.Int64N(int64(d.patience[1]-d.patience[0]))),
		}
		for range rng.IntN(4) {
			u.followUps = append(u.followUps, time.Minute+time.Duration(pauses.Int64N(int64(3*time.Minute))))
		}
		out = append(out, u)
	}
	return out
}

// dayResult is what one population's day measured.
type dayResult struct {
	users, answered int
	// leftBeforeReady: users who gave up before any model could have
	// answered them (no host can serve those); leftAfterReady: users who
	// gave up although a model was answering: the host's failure.
	leftBeforeReady, leftAfterReady int
	wakes, servedWakes              int
	idleReady                       time.Duration // ready time of wakes that served nobody
	// waitedWakes: wakes with a user waiting when the model first answered;
	// waitedServed: those that answered one of them.
	waitedWakes, waitedServed int
	lag                       map[userKind][]time.Duration // model first answering -> the user's answer
	conductorRequests         int
	// requestBound is what the day may cost the conductor: each wake's
	// start and its watch's reads (its boot over watch_poll), and one
	// lookup per request a user sent. Event streams and held requests
	// count nothing: they must not poll.
	requestBound int
}

// analyze derives a day's figures from the users and the simulator's wakes;
// end is when the run stopped (a wake still up is counted until then).
//
// A user's delay is measured from the moment its wake's model could first
// answer. For the clients the host pushes readiness to, it is the wait for
// the model's first answer to anybody (the watch's probe, every
// probe_interval, or a turn) on the simulated clock, plus the rest on the
// wall clock: from that answer to the user's (the probe's result reaching
// the machine, the pushed change, a resume or the held completion), which
// takes milliseconds that the scaled clock would multiply. An asker's
// delay is its own re-asking, all on the simulated clock.
func analyze(users []*user, wakes []sim.WakeReport, requests int, watchPoll time.Duration, end time.Time) dayResult {
	r := dayResult{users: len(users), wakes: len(wakes), lag: map[userKind][]time.Duration{}, conductorRequests: requests}
	for _, w := range wakes {
		if w.Answered > 0 {
			r.servedWakes++
		}
		ready, stopped := w.ReadyAt, w.EndedAt
		if stopped.IsZero() {
			stopped = end
		}
		if w.Answered == 0 && !ready.IsZero() && ready.Before(stopped) {
			r.idleReady += stopped.Sub(ready)
		}
		readyOrEnd := ready
		if readyOrEnd.IsZero() {
			readyOrEnd = stopped
		}
		r.requestBound += int(math.Ceil(float64(readyOrEnd.Sub(w.StartedAt))/float64(watchPoll))) + 1
		if ready.IsZero() {
			continue
		}
		waited, served := false, false
		for _, u := range users {
			if !u.waitingAt(ready) {
				continue
			}
			waited = true
			if !u.answered.IsZero() && !u.answered.Before(ready) && u.answered.Before(stopped) {
				served = true
				r.lag[u.kind] = append(r.lag[u.kind], delay(u, w))
			}
		}
		if waited {
			r.waitedWakes++
			if served {
				r.waitedServed++
			}
		}
	}
	for _, u := range users {
		r.requestBound += u.requests
		switch {
		case !u.answered.IsZero():
			r.answered++
		case readyBetween(wakes, u.arrive, u.left):
			r.leftAfterReady++
		default:
			r.leftBeforeReady++
		}
	}
	return r
}

// delay is how long after w's model could first answer u was answered, as
// analyze describes.
func delay(u *user, w sim.WakeReport) time.Duration {
	if u.kind == asker || w.FirstAnswerAt.IsZero() {
		return u.answered.Sub(w.ReadyAt)
	}
	return w.FirstAnswerAt.Sub(w.ReadyAt) + max(0, u.answeredWall.Sub(w.FirstAnswerWall))
}

// readyBetween reports whether some wake's model was answering at a moment
// in [from, to].
func readyBetween(wakes []sim.WakeReport, from, to time.Time) bool {
	for _, w := range wakes {
		if w.ReadyAt.IsZero() || w.ReadyAt.After(to) {
			continue
		}
		if w.EndedAt.IsZero() || w.EndedAt.After(from) {
			return true
		}
	}
	return false
}

// dayTail is how long a day goes on after its last possible arrival: the
// longest visit (20 min of patience, then three follow-ups of at most 4
// min) and a 15-minute idle stop after it fit in it, so each policy's pod
// is measured over the same span.
const dayTail = 50 * time.Minute

// dayRun is what one population's day under one stop policy left behind:
// its users, the simulator's wakes and what the conductor was asked, and
// when the day ended (a wake still up is counted until then).
type dayRun struct {
	users                  []*user
	wakes                  []sim.WakeReport
	lookups, starts, stops int
	end                    time.Time
}

// population runs one population's day under pol on a fresh in-process
// host and simulator, which share a scaled clock.
func (b *harness) population(ctx context.Context, d dayPlan, p population, pol stopPolicy) (dayRun, error) {
	dir, err := os.MkdirTemp(b.work, "population-")
	if err != nil {
		return dayRun{}, err
	}
	clk := clock.Scaled(d.scale)
	s := sim.New(sim.Config{Clock: clk, NoIdleStop: !pol.podStops})
	if err := s.Start(); err != nil {
		return dayRun{}, err
	}
	defer s.Close()
	cfgPath, err := writeConfig(dir, b.binDir, "127.0.0.1:0", hostSpec{conductorURL: s.URL(), stops: &pol.host, coldStartHold: true})
	if err != nil {
		return dayRun{}, err
	}
	a, err := app.New(ctx, app.Options{
		ConfigPath: cfgPath, Clock: clk, Logger: slog.New(slog.DiscardHandler),
		Getenv: func(k string) string {
			if k == keyEnv {
				return benchKey
			}
			return ""
		},
	})
	if err != nil {
		return dayRun{}, fmt.Errorf("starting the host: %w", err)
	}
	served := make(chan error, 1)
	go func() { served <- a.Serve() }()
	defer func() {
		sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = a.Shutdown(sctx)
		<-served
	}()
	base := "http://" + a.Addr()
	start := clk.Now()
	users := d.users(p, start)
	var wg sync.WaitGroup
	for i, u := range users {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := &client{base: base, clk: clk, session: fmt.Sprintf("user-%d", i), u: u}
			c.live(ctx)
		}()
	}
	wg.Wait()
	// The day ends dayTail after the arrivals (or when the last visit
	// did, if later): the last wake idles out, or is stopped, by then.
	end := later(start.Add(d.length+dayTail), clk.Now())
	select {
	case <-clk.After(end.Sub(clk.Now())):
	case <-ctx.Done():
	}
	if err := ctx.Err(); err != nil {
		return dayRun{}, err
	}
	return dayRun{
		users: users, wakes: s.Wakes(sim.DefaultPod), end: end,
		lookups: s.Lookups(sim.DefaultPod), starts: s.StartRequests(sim.DefaultPod), stops: s.StopRequests(sim.DefaultPod),
	}, nil
}

// later is the later of a and b.
func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// client is one user's chat client, on the scaled clock.
type client struct {
	base    string
	clk     clock.Clock
	session string
	u       *user // its user; only this client's goroutine writes it
}

// echoPrefix starts every answer of the simulator's model.
const echoPrefix = "echo: "

// live runs u's visit: the first question until it is answered or u's
// patience runs out, then the follow-ups.
func (c *client) live(ctx context.Context) {
	u := c.u
	if !c.after(ctx, u.arrive.Sub(c.clk.Now())) {
		return
	}
	patient, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		if c.after(patient, u.patience) {
			cancel()
		}
	}()
	var ok bool
	switch u.kind {
	case asker:
		ok = c.ask(patient)
	case waiter:
		ok = c.wait(patient)
	case holder:
		ok = c.hold(patient)
	}
	if !ok {
		u.left = c.clk.Now()
		return
	}
	u.answered, u.answeredWall = c.clk.Now(), time.Now()
	cancel()
	for _, pause := range u.followUps {
		if !c.after(ctx, pause) {
			return
		}
		c.chat(ctx, map[string]any{"message": "and then?", "sessionId": c.session})
	}
}

// chatAnswer is the part of an /api/chat answer the clients read.
type chatAnswer struct {
	Reply       string `json:"reply"`
	PendingWake *struct {
		Key    string `json:"key"`
		Events string `json:"events"`
	} `json:"pendingWake"`
}

// chat sends one /api/chat turn; a failure is an empty answer.
func (c *client) chat(ctx context.Context, body map[string]any) chatAnswer {
	var a chatAnswer
	b, _ := json.Marshal(body)
	if resp, err := c.post(ctx, "/api/chat", b); err == nil {
		_ = json.NewDecoder(resp.Body).Decode(&a)
		resp.Body.Close()
	}
	return a
}

func (c *client) post(ctx context.Context, path string, body []byte) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.base+path, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	c.u.requests++
	return http.DefaultClient.Do(req)
}

// after waits d on the scaled clock; false if ctx ended first.
func (c *client) after(ctx context.Context, d time.Duration) bool {
	select {
	case <-c.clk.After(d):
		return true
	case <-ctx.Done():
		return false
	}
}

// ask is the legacy user: ask, read the reply, ask again when it says to.
func (c *client) ask(ctx context.Context) bool {
	for ctx.Err() == nil {
		a := c.chat(ctx, map[string]any{"message": "hello", "sessionId": c.session})
		if strings.HasPrefix(a.Reply, echoPrefix) {
			return true
		}
		again := 3 * time.Minute // "ask me again in a few minutes", or no answer at all
		switch {
		case strings.Contains(a.Reply, "Someone needs to look at the pod"):
			return false // a person would not keep asking
		case strings.Contains(a.Reply, "shortly"):
			again = time.Minute
		}
		if !c.after(ctx, again) {
			return false
		}
	}
	return false
}

// wait is the foreground client: wait, follow the event stream, resume.
func (c *client) wait(ctx context.Context) bool {
	for ctx.Err() == nil {
		a := c.chat(ctx, map[string]any{"message": "hello", "sessionId": c.session, "wakeMode": "wait"})
		if strings.HasPrefix(a.Reply, echoPrefix) {
			return true
		}
		if a.PendingWake == nil || a.PendingWake.Events == "" {
			if !c.after(ctx, time.Minute) {
				return false
			}
			continue
		}
		// Follow the stream until it says ready, then resume; a resume that
		// finds the model not ready again keeps the marker: follow again.
		for c.readyOnStream(ctx, a.PendingWake.Events) {
			r := c.chat(ctx, map[string]any{"message": "hello", "sessionId": c.session, "wakeMode": "resume", "pendingWake": a.PendingWake.Key})
			if strings.HasPrefix(r.Reply, echoPrefix) {
				return true
			}
			if r.PendingWake == nil {
				break // the marker is gone: wait again
			}
		}
	}
	return false
}

// readyOnStream follows a pod event stream until an event says ready
// (true), or the pod is in a state nothing will get ready by waiting, or
// the stream or ctx ends (false).
func (c *client) readyOnStream(ctx context.Context, path string) bool {
	ready := false
	followStream(ctx, c.base+path, func(ev streamEvent) bool {
		switch {
		case ev.Reason != "":
			return false // the stream ends: lagged or shut down
		case ev.Ready:
			ready = true
			return false
		case atRest(ev.State):
			return false // nothing is waking it: wait again wakes it
		}
		return true
	})
	return ready
}

// atRest reports whether state is one of the pod's states that nothing
// wakes it out of by waiting.
func atRest(state string) bool {
	switch engine.State(state) {
	case machines.Asleep, machines.Stopped, machines.NeverReady, machines.Refused, machines.StartFailed:
		return true
	}
	return false
}

// streamEvent is the part of a pod event stream's event the bench reads.
type streamEvent struct {
	Ready  bool   `json:"ready"`
	State  string `json:"state"`
	Reason string `json:"reason"` // the end event: why the host ended the stream
}

// followStream reads the pod event stream at url, handing each event to
// fn until fn returns false, the stream ends or ctx does.
func followStream(ctx context.Context, url string, fn func(streamEvent) bool) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		var ev streamEvent
		if json.Unmarshal([]byte(data), &ev) != nil || !fn(ev) {
			return
		}
	}
}

// hold is the OpenAI client in hold mode: one completion, held by the host
// until the model answers; a status reply (past hold_max, or a pod that
// will not get ready by waiting) is read and the request sent again.
func (c *client) hold(ctx context.Context) bool {
	body := []byte(`{"model":"qwen","messages":[{"role":"user","content":"hello"}]}`)
	for ctx.Err() == nil {
		resp, err := c.post(ctx, "/v1/chat/completions", body)
		if err == nil {
			var cc struct {
				Choices []struct {
					Message struct {
						Content string `json:"content"`
					} `json:"message"`
				} `json:"choices"`
			}
			_ = json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&cc)
			resp.Body.Close()
			if len(cc.Choices) > 0 && strings.HasPrefix(cc.Choices[0].Message.Content, echoPrefix) {
				return true
			}
		}
		if !c.after(ctx, time.Minute) {
			return false
		}
	}
	return false
}

// days runs every population's day under every stop policy side by side,
// each on its own host and simulator, and renders measurement 7's two
// tables: today's policy's figures, then every policy's GPU cost.
func (b *harness) days(ctx context.Context, d dayPlan) (string, error) {
	runs := make([][]dayRun, len(populations)) // by population, then by stop policy
	errs := make([][]error, len(populations))
	var wg sync.WaitGroup
	for i, p := range populations {
		runs[i], errs[i] = make([]dayRun, len(stopPolicies)), make([]error, len(stopPolicies))
		for j, pol := range stopPolicies {
			wg.Add(1)
			go func() {
				defer wg.Done()
				runs[i][j], errs[i][j] = b.population(ctx, d, p, pol)
			}()
		}
	}
	wg.Wait()
	results := make([]dayResult, len(populations))
	costs := make([][]gpuCost, len(populations))
	for i := range populations {
		for j, err := range errs[i] {
			if err != nil {
				return "", fmt.Errorf("measurement 7 (%s, policy %s): %w", populations[i].name, stopPolicies[j].name, err)
			}
		}
		r := runs[i][todayPolicy]
		results[i] = analyze(r.users, r.wakes, r.lookups+r.starts, defaultWatchPoll, r.end)
		for _, r := range runs[i] {
			costs[i] = append(costs[i], cost(r.users, r.wakes, r.stops, r.end))
		}
	}
	return renderDays(d, results) + "\n" + renderCosts(d, costs), nil
}

// pushKinds are the clients the host tells of readiness: the targets on
// their delay apply to them.
var pushKinds = []userKind{waiter, holder}

// Targets of measurement 7.
const pushLagTarget = 2 * time.Second

// renderDays renders measurement 7: one column per population.
func renderDays(d dayPlan, rs []dayResult) string {
	var b strings.Builder
	fmt.Fprintf(&b, "7. Wake efficiency: a simulated %s day, Poisson arrivals (mean gap %s), patience %s to %s, clock ×%g, one run per population\n\n",
		d.length, d.meanGap, d.patience[0], d.patience[1], d.scale)
	b.WriteString("| measure |")
	for _, p := range populations {
		fmt.Fprintf(&b, " %s |", p.name)
	}
	b.WriteString(" target |\n|---|")
	for range populations {
		b.WriteString("---|")
	}
	b.WriteString("---|\n")
	line := func(measure, target string, cell func(dayResult) string) {
		fmt.Fprintf(&b, "| %s |", measure)
		for _, r := range rs {
			fmt.Fprintf(&b, " %s |", cell(r))
		}
		fmt.Fprintf(&b, " %s |\n", target)
	}
	line("users answered", noTarget, func(r dayResult) string { return fmt.Sprintf("%d of %d", r.answered, r.users) })
	line("users who left before any model could answer (no host can serve them)", noTarget,
		func(r dayResult) string { return fmt.Sprint(r.leftBeforeReady) })
	line("users who left although a model was answering", "0", func(r dayResult) string { return mark(fmt.Sprint(r.leftAfterReady), r.leftAfterReady == 0) })
	line("wakes started", noTarget, func(r dayResult) string { return fmt.Sprint(r.wakes) })
	line("wakes that served at least one answer", noTarget, func(r dayResult) string { return fmt.Sprint(r.servedWakes) })
	line("GPU-ready minutes that served nobody", noTarget, func(r dayResult) string { return fmt.Sprintf("%.0f", r.idleReady.Minutes()) })
	line("wakes whose user was still waiting when the model first answered: served that user", "100%",
		func(r dayResult) string {
			return mark(fmt.Sprintf("%d of %d", r.waitedServed, r.waitedWakes), r.waitedServed == r.waitedWakes)
		})
	for _, k := range []userKind{asker, waiter, holder} {
		target := noTarget
		if slices.Contains(pushKinds, k) {
			target = "p99 < " + pushLagTarget.String()
		}
		line(fmt.Sprintf("model's first answer → %s's answer, p50 / p99", k), target, func(r dayResult) string {
			lags := r.lag[k]
			if len(lags) == 0 {
				return noTarget
			}
			s := fmt.Sprintf("%s / %s (n=%d)", simSeconds(percentile(lags, 50)), simSeconds(percentile(lags, 99)), len(lags))
			if target == noTarget {
				return s
			}
			return mark(s, percentile(lags, 99) < pushLagTarget)
		})
	}
	line("conductor requests per wake (bound: each wake's start and boot over watch_poll, one per user request; streams and holds none)", "within the bound", func(r dayResult) string {
		if r.wakes == 0 {
			return noTarget
		}
		return mark(fmt.Sprintf("%.1f (bound %.1f)", float64(r.conductorRequests)/float64(r.wakes), float64(r.requestBound)/float64(r.wakes)),
			r.conductorRequests <= r.requestBound)
	})
	return b.String()
}

// mark appends whether a cell met its target.
func mark(s string, ok bool) string { return s + " (" + verdict(ok) + ")" }

// simSeconds formats a simulated duration in seconds with one decimal.
func simSeconds(d time.Duration) string { return fmt.Sprintf("%.1f s", d.Seconds()) }
