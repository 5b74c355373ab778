package chat_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/wakeonchat/wakeonchat/engine"
	"github.com/wakeonchat/wakeonchat/host/internal/fakeclock"
	"github.com/wakeonchat/wakeonchat/host/store"
	"github.com/wakeonchat/wakeonchat/host/wake"
	"github.com/wakeonchat/wakeonchat/machines"
	"github.com/wakeonchat/wakeonchat/plugins/pluginapi"
)

// TestHostProperties is machines' TestProperties carried to the host: random
// sequences of steps through the real server (store, clock, policy, wake
// coordinator, resolver, model, agent), with fakes only at the plugin
// boundary. A step is one of:
//
//   - a single turn from a small pool of sessions: legacy, wakeMode "wait",
//     or wakeMode "resume" with the marker the session's last wait returned
//     (as the key or as the object), sometimes with a stale key;
//   - a burst of 5 to 20 concurrent turns from different sessions;
//   - a clock jump: seconds, minutes, the 15-minute window or 15 min + 1 ms
//     (to the very edge of the current wake's window when there is one),
//     the 20-minute loading ceiling, the 35-minute watch, hours;
//   - a change of the conductor's pod: EXITED, CREATED, RUNNING with a proxy
//     URL (no readySince, a fresh one, one of an earlier boot), RUNNING with
//     no proxy URL yet, lookup UNREADABLE, the conductor failing;
//   - a change of the provider while its pod serves: answers, 502, reset,
//     aborted, 500. A pod that is not up answers through its stale proxy
//     with a 404, a loading one with a 502 (D6, D7). Every failure's text
//     quotes the endpoint with the key "key-PROP-SECRET" in its query, as
//     Go's *url.Error would;
//   - a change of the start's outcome: in flight, accepted, refused 409 or
//     401, never sent (ECONNREFUSED), or lost (the plugin's call fails: in
//     flight, watched). The result's error field, or the plugin's error,
//     quotes the token "tok-PROP-SECRET" and two URLs;
//   - a client polling GET /api/pods/qwen.
//
// (Secret values quoted bare in a plugin's message are the supervisor's to
// scrub before the host sees them; these fakes stand after it, so they put
// the secrets only where the host itself must keep them out.)
//
// Each sequence runs in a synctest bubble, with its servers in memory.
// After every step the host is let settle (synctest.Wait: every goroutine
// of the host is blocked, so every wake's start has been sent and its
// result handled, and every wake watch waits on its timer), every session
// the step used takes one more turn, and these must hold:
//
//   - every response is JSON; a 200 is {reply, sessionId[, pendingWake]} with
//     a non-empty plain-text reply (machines.CheckPlain) carrying no error
//     text ("error", "failed", "status=", "tok-", "key-", "http"), and is
//     the model's answer or one of the wake policy's replies; a non-200 is
//     one of the contract's fixed {"error": ...} bodies or exactly the
//     generic 502;
//   - never more than one start request per wake window: a wake decided no
//     more than 15 minutes after the previous one read a record whose state
//     said what became of that wake (refused, start-failed, never-ready, or
//     ready, stopped or crashed with the pod not RUNNING); a new wake on record is always state waking; every start
//     request matches one wake on record and is sent while that wake is in
//     progress (waking, loading, stuck); every state written is what
//     happened (refused and start-failed are how that wake's start was
//     answered, a lost answer being in flight; ready is written while the
//     model answers, since a readySince of that wake or an answer;
//     never-ready comes after the 35-minute watch; crashed and stopped
//     come from ready, crashed while RUNNING, stopped while not, keeping
//     when it was ready);
//   - a resume never wakes and never runs the wake policy;
//   - neither secret, nor any URL, is ever in a log line or response body;
//   - a session's slot is always released: its next turn is never a 409;
//   - the host logs no internal fault (a panic, a reply that did not render,
//     a record that could not be read or written).
//
// A sequence that leaves a goroutine behind fails: synctest.Test waits for
// every goroutine of its bubble to end. Every failure names the seed and
// the step, with the steps that led there; replay one sequence with -run
// 'TestHostProperties/seed=N$'.
func TestHostProperties(t *testing.T) {
	t.Parallel()
	const sequences, steps = 30, 40
	for seed := uint64(1); seed <= sequences; seed++ {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) {
				newPropRun(t, seed).run(steps)
			})
		})
	}
}

// The secrets the fakes quote where a careless host could pass them on.
const (
	propTokenSecret = "tok-PROP-SECRET" // the wake token (RIG_WAKE_TOKEN)
	propKeySecret   = "key-PROP-SECRET" // the model's API key
	// propConductorStart is the conductor's start URL, quoted with the token.
	propConductorStart = "http://rig-conductor.rig.svc:8080/api/pods/qwen/start"
	propWindow         = 15 * time.Minute // the default wake_window
)

// propSessions is the session pool: single turns use the first
// propSingleSessions, bursts any of them.
var propSessions = func() []string {
	s := make([]string, 24)
	for i := range s {
		s[i] = fmt.Sprintf("s%d", i)
	}
	return s
}()

const propSingleSessions = 6

// propLeaks are what no response body and no log line may ever carry.
var propLeaks = []string{propTokenSecret, propKeySecret, "://", "www.", "runpod"}

// propReplyWords are what a 200's reply may not carry: error text, URLs,
// tokens and keys. Only the pod's name may come from an error.
var propReplyWords = []string{"error", "failed", "status=", "tok-", "key-", "http", "://", "www."}

// propPolicyReplies matches every default reply of the wake policy, with its
// numbers and clock times left open.
var propPolicyReplies = func() []*regexp.Regexp {
	clockTime := `(\d{4}-\d{2}-\d{2} )?\d{2}:\d{2} UTC`
	fields := map[string]string{
		"ElapsedMinutes": `\d+`, "ExpectedMinutes": `\d+`, "LoadingMinutes": `\d+`, "IdleMinutes": `\d+`,
		"EtaMinutes": `\d+`, "RemainingMinutes": `\d+`, "EtaAt": `(` + clockTime + `)?`,
		"Status": `\d{3}`, "ReadyAt": clockTime, "WakeRequestedAt": clockTime, "Backend": `[A-Za-z' ]+`,
	}
	// {{plural .EtaMinutes "minute" "minutes"}}, quoted: a number and either word.
	plural := regexp.MustCompile(`\\\{\\\{plural \\\.\w+ "([^"]*)" "([^"]*)"\\\}\\\}`)
	var out []*regexp.Regexp
	for _, key := range machines.ReplyKeys {
		pattern := plural.ReplaceAllString(regexp.QuoteMeta(machines.DefaultReplies()[key]), `\d+ (?:$1|$2)`)
		for name, re := range fields {
			pattern = strings.ReplaceAll(pattern, regexp.QuoteMeta("{{."+name+"}}"), re)
		}
		if strings.Contains(pattern, `\{\{`) {
			panic("property test: reply " + string(key) + " has a field the test does not know")
		}
		out = append(out, regexp.MustCompile("^"+pattern+"$"))
	}
	return out
}()

// propStart is what the fake conductor answers a start with.
type propStart int

const (
	propStartInFlight propStart = iota
	propStartAccepted
	propStartRefused409
	propStartRefused401
	propStartLost    // the plugin's call fails (its answer lost: in flight); its error quotes the token and URLs
	propStartNotSent // never sent: a result naming the class only
)

var propStartNames = [...]string{
	"in flight (client timed out)", "accepted 202", "refused 409", "refused 401",
	"lost: the plugin's call failed, its error quoting the token", "never sent: ECONNREFUSED",
}

// propStartNote quotes the wake token and two URLs in the error field of a
// start's result, which the host must never pass on.
var propStartNote = fmt.Sprintf("POST %s with X-Rig-Operator-Token: %s (pod proxy %s)", propConductorStart, propTokenSecret, proxyURL)

func (o propStart) result() (pluginapi.StartResult, error) {
	switch o {
	case propStartAccepted:
		return pluginapi.StartResult{Requested: true, Status: 202, Error: propStartNote}, nil
	case propStartRefused409:
		return pluginapi.StartResult{Status: 409, Error: propStartNote}, nil
	case propStartRefused401:
		return pluginapi.StartResult{Status: 401, Error: "invalid operator token " + propTokenSecret}, nil
	case propStartLost:
		return pluginapi.StartResult{}, fmt.Errorf("%s: dial tcp 10.43.0.7:8080: %w", propStartNote, syscall.ECONNREFUSED)
	case propStartNotSent:
		return pluginapi.StartResult{Error: "ECONNREFUSED"}, nil
	default:
		return pluginapi.StartResult{Requested: true, TimedOut: true, TimeoutMs: 3000, Error: propStartNote}, nil
	}
}

// propProvider is how the fake provider answers a completion on a pod that
// is serving.
type propProvider int

const (
	propProviderAnswers propProvider = iota
	propProviderGateway
	propProviderReset
	propProviderAborted
	propProviderInternal
)

var propProviderNames = [...]string{"answers", "502", "reset", "aborted", "500"}

// The provider's failures. Each message quotes the endpoint with the key in
// its query, as Go's *url.Error quotes the URL it failed on.
var (
	propCompletionGateway  = pluginapi.CompletionError{Status: 502, Message: "502 Bad Gateway <!DOCTYPE html>"}
	propCompletionReset    = pluginapi.CompletionError{TransportFailure: true, Message: "read: connection reset by peer (ECONNRESET)"}
	propCompletionAborted  = pluginapi.CompletionError{Aborted: true, Message: "context deadline exceeded"}
	propCompletionInternal = pluginapi.CompletionError{Status: 500, Message: "500 Internal Server Error"}
	propCompletionNotFound = pluginapi.CompletionError{Status: 404, Message: "404 Not Found"}
)

func propCompletionFailure(ce pluginapi.CompletionError, endpoint string) error {
	e := ce
	e.Message = fmt.Sprintf("Post %q: %s", endpoint+"/chat/completions?key="+propKeySecret, ce.Message)
	return &e
}

// complete is the fake provider: the scripted mode while the pod serves;
// the proxy's 502 while the model loads; and on a pod that is not up the
// stale proxy's 404 (D6).
func (p *propRun) complete(_ context.Context, endpoint string, req pluginapi.CompletionRequest) (string, error) {
	p.mu.Lock()
	mode, up := p.provider, p.serving
	p.mu.Unlock()
	switch {
	case up == propServingNo:
		return "", propCompletionFailure(propCompletionNotFound, endpoint)
	case up == propServingLoading:
		return "", propCompletionFailure(propCompletionGateway, endpoint)
	}
	switch mode {
	case propProviderGateway:
		return "", propCompletionFailure(propCompletionGateway, endpoint)
	case propProviderReset:
		return "", propCompletionFailure(propCompletionReset, endpoint)
	case propProviderAborted:
		return "", propCompletionFailure(propCompletionAborted, endpoint)
	case propProviderInternal:
		return "", propCompletionFailure(propCompletionInternal, endpoint)
	}
	return answerTo(req.Messages[len(req.Messages)-1].Content), nil
}

// propServing is whether the model behind the pod's proxy answers.
type propServing int

const (
	propServingNo      propServing = iota // the pod is not up: its old proxy answers 404
	propServingLoading                    // RUNNING, the model still loading: 502
	propServingYes                        // the model answers as the provider mode says
)

// propPod is what the fake conductor reports.
type propPod int

const (
	propPodExited propPod = iota
	propPodCreated
	propPodLoading      // RUNNING, proxy URL, no readySince
	propPodReadyNow     // RUNNING, proxy URL, readySince now
	propPodReadyEarlier // RUNNING, proxy URL, readySince of an earlier boot
	propPodNoProxy      // RUNNING, no proxy URL yet
	propPodUnreadable
	propPodConductorDown
)

var propPodNames = [...]string{
	"EXITED", "CREATED", "RUNNING, model loading (no readySince)", "RUNNING, readySince now",
	"RUNNING, readySince 3 h ago", "RUNNING, no proxy URL yet", "lookup UNREADABLE", "the conductor failing",
}

// serving is whether the model answers in s; the conductor failing says
// nothing about the pod, which goes on as it was.
func (s propPod) serving(was propServing) propServing {
	switch s {
	case propPodReadyNow, propPodReadyEarlier:
		return propServingYes
	case propPodLoading:
		return propServingLoading
	case propPodConductorDown:
		return was
	default:
		return propServingNo
	}
}

// proxy reports whether the conductor gives the pod's proxy URL in s.
func (s propPod) proxy() bool {
	return s == propPodLoading || s == propPodReadyNow || s == propPodReadyEarlier
}

// status is the conductor's word for the pod in s.
func (s propPod) status() string {
	switch s {
	case propPodExited:
		return "EXITED"
	case propPodCreated:
		return "CREATED"
	case propPodUnreadable:
		return ""
	case propPodConductorDown:
		return "(conductor down)"
	default:
		return pluginapi.StatusRunning
	}
}

// propRecords is the real store, with every record written kept in
// order, with the fake clock, the scripted pod status and whether the model
// answers at the time. The
// coordinator writes only under the pod's lock, so the write before a wake
// is the record that wake was decided on.
type propRecords struct {
	*store.Store
	clock *fakeclock.Clock
	pod   func() (string, bool, propServing) // the conductor's status, whether it gives a proxy URL, whether the model answers

	mu   sync.Mutex
	puts []propPut
}

var _ wake.Records = (*propRecords)(nil)

type propPut struct {
	rec     machines.Record
	at      time.Time
	status  string
	proxy   bool
	serving propServing
}

func (r *propRecords) PutRecord(ctx context.Context, rec machines.Record) error {
	if err := r.Store.PutRecord(ctx, rec); err != nil {
		return err
	}
	r.keep(rec)
	return nil
}

// keep notes a written record with the clock and the scripted pod.
func (r *propRecords) keep(rec machines.Record) {
	put := propPut{rec: rec, at: r.clock.Now()}
	put.status, put.proxy, put.serving = r.pod()
	r.mu.Lock()
	r.puts = append(r.puts, put)
	r.mu.Unlock()
}

// UpdateRecord is the store's, with a change kept like PutRecord's.
func (r *propRecords) UpdateRecord(ctx context.Context, pod string, fn func(machines.Record) (machines.Record, *machines.Wake, error)) (before, after machines.Record, err error) {
	before, after, err = r.Store.UpdateRecord(ctx, pod, fn)
	if err != nil || after.Equal(before) {
		return before, after, err
	}
	r.keep(after)
	return before, after, nil
}

func (r *propRecords) snapshot() []propPut {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.puts)
}

// propStartCall is one StartPod, with the fake clock and the stored record when
// it was sent.
type propStartCall struct {
	at      time.Time
	rec     machines.Record
	err     error
	outcome propStart
}

// propRun is one sequence.
type propRun struct {
	t     *testing.T
	h     *harness
	recs  *propRecords
	r     *rand.Rand
	seed  uint64
	step  int
	desc  string   // the current step
	trace []string // every step so far

	mu       sync.Mutex // guards what the fakes' hooks read and write
	start    propStart
	pod      propPod
	serving  propServing
	provider propProvider
	calls    []propStartCall

	markers map[string]string // session -> the key its last wait returned

	// What the log said so far.
	logOff        int
	decisionLines int // "provider not ready … → wake|wait"
	wakeDecisions int // … → wake
	results       int // a start's result line

	stats map[string]int // what the sequence exercised, for -v

	putsChecked  int
	callsChecked int
	wakes        int // wakes on record (checked so far)
	violations   []string
}

// newPropRun builds the harness with a coordinator over propRecords and
// the fake conductor's start answering the scripted outcome. Call it
// inside the sequence's synctest bubble.
func newPropRun(t *testing.T, seed uint64) *propRun {
	h := newBubbleHarness(t)
	p := &propRun{t: t, h: h, seed: seed, r: rand.New(rand.NewPCG(seed, seed*7919)), markers: map[string]string{}, stats: map[string]int{}}
	// The harness's own coordinator has done nothing yet; this one is the
	// same, over the same store, with its writes recorded. The harness's
	// cleanup closes h.coord, so it closes this one.
	h.closeCoordinator(t)
	p.recs = &propRecords{Store: h.store, clock: h.clock, pod: func() (string, bool, propServing) {
		p.mu.Lock()
		defer p.mu.Unlock()
		return p.pod.status(), p.pod.proxy(), p.serving
	}}
	coord := wake.New(wake.Config{
		Pod: h.policy, Records: p.recs, GPU: h.gpu, Clock: h.clock, Logger: h.logger,
		WatchPoll: 60 * time.Second, StartTimeout: 3 * time.Second,
	})
	h.coord = coord
	h.resolver.SetObserver(coord)
	h.api = h.serve(t, []string{"a"}, nil)
	h.provA.set(p.complete)
	h.gpu.onStart(func(ctx context.Context, name string) (pluginapi.StartResult, error) {
		now := h.clock.Now()
		rec, err := coord.Record(ctx, name)
		p.mu.Lock()
		outcome := p.start
		p.calls = append(p.calls, propStartCall{at: now, rec: rec, err: err, outcome: outcome})
		p.mu.Unlock()
		return outcome.result()
	})
	return p
}

func (p *propRun) run(steps int) {
	for p.step = 1; p.step <= steps; p.step++ {
		desc, do := p.next()
		p.desc = desc
		p.trace = append(p.trace, fmt.Sprintf("  %2d. %s", p.step, desc))
		do()
		p.checkRecords()
		p.checkStarts()
		p.flush()
	}
	keys := slices.Sorted(maps.Keys(p.stats))
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s=%d", k, p.stats[k])
	}
	p.t.Logf("seed %d: %d steps, %d wakes; %s", p.seed, steps, p.wakes, strings.Join(parts, " "))
}

// violate notes a broken invariant of the current step.
func (p *propRun) violate(format string, args ...any) {
	p.violations = append(p.violations, fmt.Sprintf(format, args...))
}

// flush fails the sequence when the step broke an invariant.
func (p *propRun) flush() {
	p.t.Helper()
	if len(p.violations) == 0 {
		return
	}
	p.t.Fatalf("seed %d, step %d: %s\n  %s\nthe steps so far (replay: go test -race -run 'TestHostProperties/seed=%d$' ./host/chat/):\n%s",
		p.seed, p.step, p.desc, strings.Join(p.violations, "\n  "),
		p.seed, strings.Join(p.trace, "\n"))
}

// next draws the next step: its description and what it does.
func (p *propRun) next() (string, func()) {
	switch n := p.r.IntN(100); {
	case n < 30:
		return p.turnStep()
	case n < 40:
		return p.burstStep()
	case n < 60:
		return p.clockStep()
	case n < 80:
		return p.podStep()
	case n < 88:
		return p.providerStep()
	case n < 96:
		return p.startStep()
	default:
		return "a client polls GET /api/pods/qwen", func() {
			p.podReport()
			p.settle("the pod report")
		}
	}
}

// turnStep is one turn of one session.
func (p *propRun) turnStep() (string, func()) {
	// As many draws whatever the markers, so the sequence of steps depends
	// on the seed alone.
	session := propSessions[p.r.IntN(propSingleSessions)]
	mode, pick, stale, asObject := p.r.IntN(10), p.r.IntN(1<<30), p.r.IntN(5) == 0, p.r.IntN(3) == 0
	req := chatReq{SessionID: session}
	switch {
	case mode < 5:
	case mode < 7:
		req.WakeMode = "wait"
	default:
		req.WakeMode = "resume"
		key := "tok-999999" // a key no wait returned
		if held := p.markerSessions(); len(held) > 0 && !stale {
			req.SessionID = held[pick%len(held)]
			key = p.markers[req.SessionID]
		}
		req.PendingWake = key
		if asObject {
			req.PendingWake = map[string]string{"key": key}
		}
	}
	req.Message = fmt.Sprintf("question %d of %s", p.step, req.SessionID)
	desc := fmt.Sprintf("%s turn of session %s", propModeName(req.WakeMode), req.SessionID)
	if req.WakeMode == "resume" {
		desc += fmt.Sprintf(" with pendingWake %s", propJSON(req.PendingWake))
	}
	return desc, func() {
		starts, decisions := p.h.gpu.startCount(), p.decisionLines
		p.check(p.send(req))
		p.settle("the turn")
		if req.WakeMode == "resume" {
			if got := p.h.gpu.startCount() - starts; got != 0 {
				p.violate("a resume woke the pod: %d start request(s) during it", got)
			}
			if got := p.decisionLines - decisions; got != 0 {
				p.violate("a resume ran the wake policy: %d decision line(s) during it", got)
			}
		}
		p.slotCheck([]string{req.SessionID})
	}
}

// burstStep is 5 to 20 concurrent turns from different sessions.
func (p *propRun) burstStep() (string, func()) {
	n := 5 + p.r.IntN(16)
	perm := p.r.Perm(len(propSessions))[:n]
	reqs := make([]chatReq, n)
	sessions := make([]string, n)
	waits := 0
	for i, idx := range perm {
		s := propSessions[idx]
		sessions[i] = s
		reqs[i] = chatReq{Message: fmt.Sprintf("question %d of %s", p.step, s), SessionID: s}
		if p.r.IntN(5) == 0 {
			reqs[i].WakeMode = "wait"
			waits++
		}
	}
	return fmt.Sprintf("a burst of %d concurrent turns (%d of them wait) from sessions %s", n, waits, strings.Join(sessions, " ")), func() {
		for _, ex := range p.sendAll(reqs) {
			p.check(ex)
		}
		p.settle("the burst")
		p.slotCheck(sessions)
	}
}

func (p *propRun) clockStep() (string, func()) {
	var d time.Duration
	edge := ""
	switch p.r.IntN(9) {
	case 0:
		d = time.Duration(1+p.r.IntN(59)) * time.Second
	case 1, 2:
		d = time.Duration(1+p.r.IntN(14)) * time.Minute
	case 3, 4:
		// Exactly to the edge of the current wake's window, or just past
		// it: the window, or the window + 1 ms, when no wake is on record or
		// its edge is behind.
		d = propWindow
		if p.r.IntN(2) == 1 {
			d += time.Millisecond
		}
		if rec, err := p.h.coord.Record(context.Background(), "qwen"); err == nil && !rec.WakeRequestedAt.IsZero() {
			if to := rec.WakeRequestedAt.Add(d).Sub(p.h.clock.Now()); to > 0 {
				d, edge = to, fmt.Sprintf(" (to the wake of %s + %v)", propTime(rec.WakeRequestedAt), d)
			}
		}
	case 5:
		d = time.Duration(1+p.r.IntN(48)) * time.Hour
	case 6:
		d = []time.Duration{20 * time.Minute, 35 * time.Minute}[p.r.IntN(2)]
	default:
		d = time.Duration(p.r.IntN(40*60)+1) * time.Second
	}
	return fmt.Sprintf("the clock jumps %v%s", d, edge), func() {
		p.h.clock.Advance(d)
		p.settle("the clock jump")
	}
}

func (p *propRun) podStep() (string, func()) {
	weights := []propPod{propPodExited, propPodExited, propPodExited, propPodCreated, propPodCreated, propPodLoading, propPodLoading,
		propPodReadyNow, propPodReadyNow, propPodReadyNow, propPodReadyEarlier, propPodNoProxy, propPodUnreadable, propPodConductorDown}
	s := weights[p.r.IntN(len(weights))]
	return "the conductor reports: " + propPodNames[s], func() {
		now := p.h.clock.Now()
		switch s {
		case propPodExited:
			p.h.gpu.set(asleepPod())
		case propPodCreated:
			p.h.gpu.set(creatingPod())
		case propPodLoading:
			p.h.gpu.set(loadingPod())
		case propPodReadyNow:
			p.h.gpu.set(readyPod(rfc3339(now)))
		case propPodReadyEarlier:
			p.h.gpu.set(readyPod(rfc3339(now.Add(-3 * time.Hour))))
		case propPodNoProxy:
			pod := loadingPod()
			pod.ProxyURL = ""
			p.h.gpu.set(pod)
		case propPodUnreadable:
			p.h.gpu.set(unreadablePod())
		case propPodConductorDown:
			p.h.gpu.setDown()
		}
		p.mu.Lock()
		p.pod, p.serving = s, s.serving(p.serving)
		p.mu.Unlock()
	}
}

func (p *propRun) providerStep() (string, func()) {
	weights := []propProvider{propProviderAnswers, propProviderAnswers, propProviderAnswers, propProviderGateway, propProviderGateway,
		propProviderReset, propProviderAborted, propProviderInternal}
	m := weights[p.r.IntN(len(weights))]
	return "the provider, on a serving pod: " + propProviderNames[m], func() {
		p.mu.Lock()
		p.provider = m
		p.mu.Unlock()
	}
}

func (p *propRun) startStep() (string, func()) {
	o := propStart(p.r.IntN(len(propStartNames)))
	return "the conductor's start: " + propStartNames[o], func() {
		p.mu.Lock()
		p.start = o
		p.mu.Unlock()
	}
}

// slotCheck sends one more turn on each session, all at once: none of them
// runs beside another turn of its session, so none may be a 409.
func (p *propRun) slotCheck(sessions []string) {
	reqs := make([]chatReq, len(sessions))
	for i, s := range sessions {
		reqs[i] = chatReq{Message: "are you still there, " + s, SessionID: s}
	}
	for _, ex := range p.sendAll(reqs) {
		p.check(ex)
	}
	p.settle("the slot checks")
}

// propExchange is one POST /api/chat and its answer.
type propExchange struct {
	req    chatReq
	status int
	ctype  string
	body   string
	err    error
}

// send posts req. It never touches the test's T, so it may run on any
// goroutine.
func (p *propRun) send(req chatReq) propExchange {
	ex := propExchange{req: req}
	b, err := json.Marshal(req)
	if err != nil {
		ex.err = err
		return ex
	}
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, p.h.api.url+"/api/chat", bytes.NewReader(b))
	if err != nil {
		ex.err = err
		return ex
	}
	hreq.Header.Set("Content-Type", "application/json")
	res, err := p.h.api.client.Do(hreq)
	if err != nil {
		ex.err = err
		return ex
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	ex.status, ex.ctype, ex.body, ex.err = res.StatusCode, res.Header.Get("Content-Type"), string(body), err
	return ex
}

// sendAll posts every request at once and returns the answers in order.
func (p *propRun) sendAll(reqs []chatReq) []propExchange {
	out := make([]propExchange, len(reqs))
	if len(reqs) == 1 {
		out[0] = p.send(reqs[0])
		return out
	}
	var wg sync.WaitGroup
	ready := make(chan struct{})
	for i, req := range reqs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-ready
			out[i] = p.send(req)
		}()
	}
	close(ready)
	wg.Wait()
	return out
}

// check applies the response invariants to one turn and keeps the
// session's marker up to date.
func (p *propRun) check(ex propExchange) {
	req := ex.req
	who := fmt.Sprintf("%s turn of session %s", propModeName(req.WakeMode), req.SessionID)
	if ex.err != nil {
		p.violate("%s: %v", who, ex.err)
		return
	}
	if !json.Valid([]byte(ex.body)) {
		p.violate("%s: status %d with a body that is not JSON: %q", who, ex.status, ex.body)
	}
	if ex.ctype != "application/json" {
		p.violate("%s: Content-Type %q, want application/json", who, ex.ctype)
	}
	for _, leak := range propLeaks {
		if strings.Contains(ex.body, leak) {
			p.violate("%s: the response body carries %q: %s", who, leak, ex.body)
		}
	}
	p.stats[fmt.Sprintf("%s:%d", propModeName(req.WakeMode), ex.status)]++
	key := propSentKey(req)
	forget := func() { // the marker was consumed (or never was ours)
		if req.WakeMode == "resume" && p.markers[req.SessionID] == key {
			delete(p.markers, req.SessionID)
		}
	}
	switch ex.status {
	case http.StatusOK:
		var got chatReply
		if err := propDecode(ex.body, &got); err != nil {
			p.violate("%s: a 200 that is not {reply, sessionId[, pendingWake]}: %v: %s", who, err, ex.body)
			return
		}
		if got.SessionID != req.SessionID {
			p.violate("%s: answered as session %q", who, got.SessionID)
		}
		p.stats["reply:"+propReplyKind(req.Message, got.Reply)]++
		if err := propReplyProblem(req.Message, got.Reply); err != nil {
			p.violate("%s: reply %q: %v", who, got.Reply, err)
		}
		pw := got.PendingWake
		switch {
		case req.WakeMode == "" && pw != nil:
			p.violate("%s: a legacy turn got a pendingWake: %s", who, ex.body)
		case req.WakeMode != "" && pw == nil && got.Reply != answerTo(req.Message):
			p.violate("%s: neither ran the prompt nor kept a pendingWake: %s", who, ex.body)
		case pw != nil && (pw.Key == "" || pw.Pod != "qwen" || pw.Provider != "a" || pw.State == ""):
			p.violate("%s: a malformed pendingWake: %s", who, ex.body)
		case req.WakeMode == "resume" && pw != nil && pw.Key != key:
			p.violate("%s: a resume with key %q kept another pendingWake: %s", who, key, ex.body)
		}
		switch {
		case pw != nil:
			p.markers[req.SessionID] = pw.Key
		default:
			forget()
		}
	case http.StatusConflict:
		var e struct {
			Error string `json:"error"`
		}
		if err := propDecode(ex.body, &e); err != nil {
			p.violate("%s: a 409 that is not {\"error\": ...}: %v: %s", who, err, ex.body)
			return
		}
		switch e.Error {
		case "a turn is already in flight for this session":
			p.violate("%s: 409 %q, but no other turn of the session was running: its slot was not released", who, e.Error)
		case "no pending wake for this session", "pendingWake does not match this session's pending wake":
			if req.WakeMode != "resume" {
				p.violate("%s: 409 %q for a turn that is not a resume", who, e.Error)
			} else if p.markers[req.SessionID] == key {
				p.violate("%s: 409 %q for the key the session's last wait returned (%s)", who, e.Error, key)
			}
		default:
			p.violate("%s: 409 %q is not one of the contract's messages", who, e.Error)
		}
		forget()
	case http.StatusBadGateway:
		if ex.body != providerFailed {
			p.violate("%s: 502 %q, want exactly %q", who, ex.body, providerFailed)
		}
		forget()
	default:
		p.violate("%s: status %d (%s) is not in the contract for a valid request", who, ex.status, ex.body)
	}
}

// podReport reads GET /api/pods/qwen as a polling client does.
func (p *propRun) podReport() {
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	hreq, err := http.NewRequestWithContext(ctx, http.MethodGet, p.h.api.url+"/api/pods/qwen", nil)
	if err != nil {
		p.violate("GET /api/pods/qwen: %v", err)
		return
	}
	res, err := p.h.api.client.Do(hreq)
	if err != nil {
		p.violate("GET /api/pods/qwen: %v", err)
		return
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	body := string(b)
	switch {
	case err != nil:
		p.violate("GET /api/pods/qwen: reading the body: %v", err)
	case res.StatusCode != http.StatusOK:
		p.violate("GET /api/pods/qwen: status %d: %s", res.StatusCode, body)
	case !json.Valid(b):
		p.violate("GET /api/pods/qwen: not JSON: %q", body)
	}
	for _, leak := range propLeaks {
		if strings.Contains(body, leak) {
			p.violate("GET /api/pods/qwen carries %q: %s", leak, body)
		}
	}
}

// settle waits until the host is quiet (synctest.Wait: every goroutine of
// the bubble but the test's is blocked), reads the log, and checks that
// every wake decision has sent its start and had its result logged: a
// start still to be sent or answered once the host is quiet is stuck.
func (p *propRun) settle(after string) {
	synctest.Wait()
	starts := p.h.gpu.startCount()
	p.readLog()
	if starts != p.wakeDecisions || p.results != starts {
		p.violate("the host is quiet after %s with %d wake decisions, %d start requests and %d start results logged",
			after, p.wakeDecisions, starts, p.results)
		p.flush()
	}
	for len(p.h.gpu.started) > 0 {
		<-p.h.gpu.started
	}
}

// readLog reads the log lines written since the last call: it checks them
// for leaks and internal faults and counts decisions and start results.
func (p *propRun) readLog() {
	text := p.h.logs.String()
	if len(text) <= p.logOff {
		return
	}
	chunk := text[p.logOff:]
	p.logOff = len(text)
	for _, raw := range strings.Split(strings.TrimSuffix(chunk, "\n"), "\n") {
		for _, leak := range propLeaks {
			if strings.Contains(raw, leak) {
				p.violate("a log line carries %q: %s", leak, raw)
			}
		}
		var line struct {
			Msg string `json:"msg"`
		}
		if err := json.Unmarshal([]byte(raw), &line); err != nil {
			p.violate("a log line is not JSON: %q", raw)
			continue
		}
		msg := line.Msg
		switch {
		case strings.HasPrefix(msg, "provider not ready for pod "):
			p.decisionLines++
			if strings.Contains(msg, ") → wake") {
				p.wakeDecisions++
			}
		case strings.HasPrefix(msg, "wake requested for pod "), strings.HasPrefix(msg, "wake refused for pod "),
			strings.HasPrefix(msg, "wake failed for pod "):
			p.results++
		case msg == "turn panicked", msg == "rendering a reply", msg == "the turn was answered but not stored",
			strings.HasPrefix(msg, "wake: "), strings.HasPrefix(msg, "resume: pinned"):
			p.violate("the host logged an internal fault: %s", raw)
		}
	}
}

// checkRecords checks every record written since the last call against the
// one before it: a wake (a new wake on record, or a wake from a state in
// which the last one had ended) inside the window of the previous wake comes
// only after that wake's outcome; every state that says what became of a
// wake, or of the pod, is what happened (checkOutcome).
func (p *propRun) checkRecords() {
	puts := p.recs.snapshot()
	prev := machines.NewRecord("qwen")
	if p.putsChecked > 0 {
		prev = puts[p.putsChecked-1].rec
	}
	for _, put := range puts[p.putsChecked:] {
		rec := put.rec
		newWake := !rec.WakeRequestedAt.Equal(prev.WakeRequestedAt)
		if newWake && rec.State != machines.Waking {
			p.violate("the wake on record moved from %s to %s without a wake: the record %s, after %s",
				propTime(prev.WakeRequestedAt), propTime(rec.WakeRequestedAt), propRecord(rec), propRecord(prev))
		}
		// A wake in the same instant as the last one has the same stamp; it is
		// a wake because the last one had ended.
		isWake := rec.State == machines.Waking && (newWake || !propInProgress(prev.State))
		if rec.State != prev.State || newWake || !rec.ReadyAt.Equal(prev.ReadyAt) {
			p.stats["record:"+string(rec.State)]++
			p.checkOutcome(prev, put)
		}
		if isWake {
			p.wakes++
			if !rec.WakeRequestedAt.Equal(put.at) {
				p.violate("wake #%d was stamped %s at %s", p.wakes, propTime(rec.WakeRequestedAt), propTime(put.at))
			}
			if gap := rec.WakeRequestedAt.Sub(prev.WakeRequestedAt); !prev.WakeRequestedAt.IsZero() && gap <= propWindow {
				switch prev.State {
				case machines.Refused, machines.StartFailed, machines.NeverReady:
					p.stats["rewake-in-window:"+string(prev.State)]++
				case machines.Ready, machines.Stopped, machines.Crashed:
					p.stats["rewake-in-window:"+string(prev.State)]++
					// A pod the conductor says is RUNNING, with or without a
					// proxy URL, is never woken again after it was ready.
					if put.status == pluginapi.StatusRunning {
						p.stats["rewake-in-window:"+string(prev.State)+"-running"]++
						p.violate("wake #%d at %s, %v after the wake of %s, which was %s, while the conductor says RUNNING (record: %s)",
							p.wakes, propTime(rec.WakeRequestedAt), gap, propTime(prev.WakeRequestedAt), prev.State, propRecord(prev))
					}
				default:
					p.violate("a second start request inside one wake window: wake #%d at %s, %v after the wake of %s, "+
						"which had no outcome on record (the record it was decided on: %s)",
						p.wakes, propTime(rec.WakeRequestedAt), gap, propTime(prev.WakeRequestedAt), propRecord(prev))
				}
			}
		}
		prev = rec
	}
	p.putsChecked = len(puts)
}

// propInProgress reports whether s is a state of a wake whose outcome is not
// known yet.
func propInProgress(s engine.State) bool {
	return s == machines.Waking || s == machines.Loading || s == machines.Stuck
}

// checkOutcome checks a record that moved from prev against what happened:
// refused and start-failed are how that wake's start request was answered;
// ready is a readySince of this wake (D12: no earlier than the wake minus
// ready_slack) or an answer, while the model answers; never-ready comes only
// after the 35-minute watch; crashed comes from ready, while the conductor
// says RUNNING; stopped comes from ready, while the conductor says the pod
// does not run, keeping the time it was ready.
func (p *propRun) checkOutcome(prev machines.Record, put propPut) {
	rec := put.rec
	p.mu.Lock()
	var answers []propStart
	for _, c := range p.calls {
		if c.at.Equal(rec.WakeRequestedAt) {
			answers = append(answers, c.outcome)
		}
	}
	p.mu.Unlock()
	var want []propStart
	switch rec.State {
	case machines.Refused:
		want = map[int][]propStart{409: {propStartRefused409}, 401: {propStartRefused401}}[rec.RefusedStatus]
	case machines.StartFailed:
		// A plugin's error is a start whose answer was lost: in flight.
		want = []propStart{propStartNotSent}
	case machines.Ready:
		if put.serving != propServingYes {
			p.violate("the pod was recorded ready while its model does not answer and the conductor says %q (record: %s)",
				put.status, propRecord(rec))
		}
		if !rec.WakeRequestedAt.IsZero() && (rec.ReadyAt.Before(rec.WakeRequestedAt.Add(-time.Minute)) || rec.ReadyAt.After(put.at)) {
			p.violate("the wake of %s was recorded ready since %s, which is neither a readySince of that wake nor an answer (record: %s)",
				propTime(rec.WakeRequestedAt), propTime(rec.ReadyAt), propRecord(rec))
		}
		if rec.ReadyAt.After(put.at) {
			p.violate("the pod was recorded ready since %s, after %s (record: %s)", propTime(rec.ReadyAt), propTime(put.at), propRecord(rec))
		}
		return
	case machines.NeverReady:
		if age := put.at.Sub(rec.WakeRequestedAt); age < 35*time.Minute {
			p.violate("the wake of %s was recorded never-ready %v after it, before the 35-minute watch ended (record: %s)",
				propTime(rec.WakeRequestedAt), age, propRecord(rec))
		}
		return
	case machines.Crashed:
		if prev.State != machines.Ready && prev.State != machines.Crashed {
			p.violate("the pod was recorded crashed from %s, not from ready (record: %s)", prev.State, propRecord(rec))
		}
		if put.status != pluginapi.StatusRunning || put.serving == propServingNo {
			p.violate("the pod was recorded crashed while the conductor says %q (record: %s)", put.status, propRecord(rec))
		}
		return
	case machines.Stopped:
		if prev.State != machines.Ready && prev.State != machines.Stopped {
			p.violate("the pod was recorded stopped from %s, not from ready (record: %s)", prev.State, propRecord(rec))
		}
		if put.status == pluginapi.StatusRunning || !rec.ReadyAt.Equal(prev.ReadyAt) {
			p.violate("the pod was recorded stopped while the conductor says %q, ready at %s before (record: %s)",
				put.status, propTime(prev.ReadyAt), propRecord(rec))
		}
		return
	default:
		return
	}
	for _, a := range answers {
		if slices.Contains(want, a) {
			return
		}
	}
	names := make([]string, len(answers))
	for i, a := range answers {
		names[i] = propStartNames[a]
	}
	p.violate("the wake of %s was recorded %s, but its start request was answered %v (record: %s)",
		propTime(rec.WakeRequestedAt), rec.State, names, propRecord(rec))
}

// checkStarts checks that every start request matches one wake on record and
// was sent for the wake on record.
func (p *propRun) checkStarts() {
	p.mu.Lock()
	calls := slices.Clone(p.calls)
	p.mu.Unlock()
	if n := p.h.gpu.startCount(); n != len(calls) {
		p.violate("the conductor saw %d start requests, the start hook %d", n, len(calls))
	}
	if len(calls) != p.wakes || p.wakeDecisions != p.wakes {
		p.violate("%d start requests and %d wake decisions logged for %d wakes on record", len(calls), p.wakeDecisions, p.wakes)
	}
	for i, c := range calls[p.callsChecked:] {
		if c.err != nil || !c.rec.WakeRequestedAt.Equal(c.at) || !propInProgress(c.rec.State) {
			p.violate("start request #%d at %s was sent while the stored record was %s (read error: %v)",
				p.callsChecked+i+1, propTime(c.at), propRecord(c.rec), c.err)
		}
	}
	p.callsChecked = len(calls)
}

// markerSessions lists the sessions with a marker, in order.
func (p *propRun) markerSessions() []string {
	var out []string
	for s := range p.markers {
		out = append(out, s)
	}
	slices.Sort(out)
	return out
}

// propReplyProblem says what is wrong with a 200's reply, or nil.
func propReplyProblem(message, reply string) error {
	if strings.TrimSpace(reply) == "" {
		return errors.New("empty")
	}
	if err := machines.CheckPlain(reply); err != nil {
		return err
	}
	for _, w := range propReplyWords {
		if strings.Contains(reply, w) {
			return fmt.Errorf("carries %q", w)
		}
	}
	if reply == answerTo(message) {
		return nil
	}
	for _, re := range propPolicyReplies {
		if re.MatchString(reply) {
			return nil
		}
	}
	return errors.New("neither the model's answer to the message nor one of the wake policy's replies")
}

// propSentKey is the pendingWake key a request carries, "" when none.
func propSentKey(req chatReq) string {
	switch v := req.PendingWake.(type) {
	case string:
		return v
	case map[string]string:
		return v["key"]
	}
	return ""
}

func propDecode(body string, v any) error {
	dec := json.NewDecoder(strings.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		return errors.New("trailing data")
	}
	return nil
}

func propModeName(mode string) string {
	if mode == "" {
		return "legacy"
	}
	return mode
}

func propJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

func propTime(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format("2006-01-02 15:04:05.000")
}

func propRecord(r machines.Record) string {
	return fmt.Sprintf("{state %s, wake %s, outcome %q, loading since %s, ready at %s, refused %d}",
		r.State, propTime(r.WakeRequestedAt), r.Outcome(), propTime(r.ModelLoadingSince), propTime(r.ReadyAt), r.RefusedStatus)
}

func propReplyKind(message, reply string) string {
	if reply == answerTo(message) {
		return "answer"
	}
	for i, re := range propPolicyReplies {
		if re.MatchString(reply) {
			return string(machines.ReplyKeys[i])
		}
	}
	return "?"
}
