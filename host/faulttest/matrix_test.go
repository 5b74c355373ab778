package faulttest

import (
	"context"
	"flag"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
	"go.uber.org/goleak"

	"github.com/wakeonchat/wakeonchat/host/internal/e2e"
	"github.com/wakeonchat/wakeonchat/host/store"
)

// The wake policy's replies with the default wording and timings, beyond
// the e2e.Reply* ones host/app asserts too.
const (
	replyLoading    = "The GPU is up and the model is still loading — that takes a few more minutes. Ask again shortly."
	replyWakeFailed = "The last wake request may not have reached the conductor. Trying again — about 9 minutes."
	replyUnreadable = "I can't tell right now whether the GPU brain is awake: its status is unreadable, so I have not woken it. Ask again in a few minutes."
	// The history turn was answered at 12:26 on the boot the conductor says
	// was ready since then: when the pod is found down, that boot stopped.
	replyStopped = "The GPU woke and was ready at 12:26 UTC, then stopped — it shuts down after 15 idle minutes. Waking it again — about 9 minutes."
	// ... and when it is RUNNING and the model stops answering, it crashed.
	replyCrashed = "The model server answered at 12:26 UTC but has stopped answering — it may have crashed. Someone needs to look at the pod."
)

// The operator lines (docs/operations.md, "Operator log lines").
const (
	lineTurnFailed  = "turn failed"
	lineNotReady    = "provider not ready for pod qwen"
	lineWakeFired   = "wake requested for pod"
	lineWakeRefused = "wake refused for pod"
	lineWakeFailed  = "wake failed for pod"
	lineInFlight    = "wake requested for pod qwen: in flight (client timed out after 0.3 s; the conductor continues)"
	linePluginCrash = "plugin crashed during a call"
	// The supervisor's lines about a plugin that exited and its relaunch.
	linePluginExited     = "plugin not running; relaunching"
	linePluginRelaunched = "plugin relaunched"
	lineWakeResumed      = "wake watch resumed for pod qwen: wake requested at 12:26 UTC"
	lineLoadingWait      = "provider not ready for pod qwen (status RUNNING, model loading) → wait"
	lineCrashed          = lineLoadingWait + " — CRASHED: was answering, stopped while RUNNING"
	lineAnswerLost       = "wake requested for pod qwen: in flight (the start's answer was lost: the GPU plugin stopped during the call; watching the pod)"
	lineExitedWake       = "provider not ready for pod qwen (status EXITED) → wake"
	lineExitedWait       = "provider not ready for pod qwen (status EXITED) → wait"
	lineUnreadableOK     = "provider not ready for pod qwen (status UNKNOWN) → wait"
	// lineTokenRejected is the conductor plugin's own warning, forwarded.
	lineTokenRejected = "start refused: the conductor rejected RIG_WAKE_TOKEN"
)

// turnFailed is the ERROR line of a 502 with its classified error.
func turnFailed(err string) wantLine {
	return wantLine{level: "ERROR", msg: lineTurnFailed, err: "agent: provider qwen: " + err}
}

// The model's stale answer after the pod stopped: the proxy's 502 page. It
// quotes the key, to prove no body is ever quoted.
const proxy502 = "<!DOCTYPE html><html><head><title>502 Bad Gateway</title></head>" +
	"<body><h1>502 Bad Gateway</h1><!-- upstream auth " + secretKey + " --></body></html>"

// stale502 is that answer on the completion route: the pod stopped since
// the history turn, so the next completion goes to a dead proxy and the
// host asks the conductor again (D6).
func stale502(e *env) {
	e.model.on(routeComplete, status(http.StatusBadGateway, "text/html", proxy502))
}

// asleep: the pod stopped; the conductor says EXITED and answers the start
// with start.
func asleep(start handler) func(e *env) {
	return func(e *env) {
		stale502(e)
		e.cond.on(routeGetPod, exited())
		e.cond.on(routeStart, start)
	}
}

// conductorFault: the pod stopped, and the conductor's lookup fails with h.
func conductorFault(h handler) func(e *env) {
	return func(e *env) {
		stale502(e)
		e.cond.on(routeGetPod, h)
	}
}

// modelFault: the pod is RUNNING, its model answers with h.
func modelFault(h handler) func(e *env) {
	return func(e *env) { e.model.on(routeComplete, h) }
}

// lookupFailed is the row shape of a conductor that cannot be asked (D8): the
// resolver serves its cached resolution, so the turn fails with the model's
// own 502, never the loading reply, and nothing is woken.
func lookupFailed(name string, inject func(e *env), gets int) row {
	return row{
		name: name, history: true, inject: inject,
		wantStatus: http.StatusBadGateway, wantBody: e2e.ProviderFailed,
		lines:  []wantLine{turnFailed("completion failed: status=502: HTTP 502 Bad Gateway")},
		absent: []string{lineNotReady, lineWakeFired, lineWakeRefused, lineWakeFailed},
		gets:   gets, completions: 1,
	}
}

// refused is the row of a start the conductor answers with code; lines are
// the refusal's lines.
func refused(code int, lines ...wantLine) row {
	return row{
		name: fmt.Sprintf("conductor/start answered %d", code), history: true,
		inject:     asleep(status(code, "application/json", `{"error":"no","token":"`+secretToken+`"}`)),
		wantStatus: http.StatusOK, wantReply: replyStopped,
		lines:  append([]wantLine{{level: "INFO", msg: lineExitedWake}}, lines...),
		absent: []string{lineWakeFired, lineWakeFailed},
		gets:   1, completions: 1, starts: 2,
		then: askAgainRefused(code),
	}
}

var matrix = []row{
	// --- the conductor ---
	lookupFailed("conductor/down (closed port)", func(e *env) { stale502(e); e.cond.down() }, 0),
	{
		// Nothing cached yet: the lookup's own failure is the turn's error,
		// and it names the conductor, not a URL.
		name:       "conductor/down before any turn (nothing cached)",
		inject:     func(e *env) { e.cond.down() },
		wantStatus: http.StatusBadGateway, wantBody: e2e.ProviderFailed,
		lines:  []wantLine{turnFailed("conductor lookup for pod qwen: conductor unreachable: ECONNREFUSED")},
		absent: []string{lineNotReady, lineWakeFired, lineWakeRefused, lineWakeFailed},
		gets:   0, completions: 0,
	},
	func() row {
		r := lookupFailed("conductor/hanging past lookup_timeout", conductorFault(hang()), 1)
		r.minTook, r.maxTook = lookupTimeout, lookupTimeout+2*time.Second
		r.waits = true
		return r
	}(),
	lookupFailed("conductor/500",
		conductorFault(status(http.StatusInternalServerError, "text/plain", "internal error near "+secretToken)), 1),
	lookupFailed("conductor/malformed JSON",
		conductorFault(status(http.StatusOK, "application/json", `{"name":"qwen","status":"RUNN`)), 1),
	{
		name: "conductor/lookup UNREADABLE", history: true, inject: conductorFault(unreadable()),
		wantStatus: http.StatusOK, wantReply: replyUnreadable,
		lines:  []wantLine{{level: "INFO", msg: lineUnreadableOK}},
		absent: []string{lineWakeFired, lineWakeRefused, lineWakeFailed},
		gets:   1, completions: 1, starts: 0,
	},
	// A 401/403 names RIG_WAKE_TOKEN (its wording is the host's to choose);
	// the conductor plugin's own warning says the token was sent and rejected.
	refused(http.StatusUnauthorized,
		wantLine{level: "ERROR", msg: "wake refused for pod qwen: status=401 (", prefix: true, contains: []string{"RIG_WAKE_TOKEN"}},
		wantLine{level: "WARN", msg: lineTokenRejected}),
	refused(http.StatusForbidden,
		wantLine{level: "ERROR", msg: "wake refused for pod qwen: status=403 (", prefix: true, contains: []string{"RIG_WAKE_TOKEN"}},
		wantLine{level: "WARN", msg: lineTokenRejected}),
	refused(http.StatusConflict, wantLine{level: "ERROR", msg: "wake refused for pod qwen: status=409"}),
	refused(http.StatusServiceUnavailable, wantLine{level: "ERROR", msg: "wake refused for pod qwen: status=503"}),
	{
		// The conductor goes away between the lookup and the start: the
		// start never reaches it. Once it is back, the next ask says so and
		// wakes again, and that start is accepted.
		name: "conductor/down between lookup and start", history: true,
		inject: func(e *env) {
			stale502(e)
			e.cond.on(routeGetPod, e.cond.downAfter(exited()), exited())
		},
		wantStatus: http.StatusOK, wantReply: replyStopped,
		lines:  []wantLine{{level: "INFO", msg: lineExitedWake}, {level: "ERROR", msg: "wake failed for pod qwen: ECONNREFUSED"}},
		absent: []string{lineWakeRefused},
		gets:   1, completions: 1, starts: 1,
		then: askAgainNotSent,
	},
	{
		name: "conductor/start hanging past start_timeout", history: true, inject: asleep(hang()), waits: true,
		wantStatus: http.StatusOK, wantReply: replyStopped,
		lines:  []wantLine{{level: "INFO", msg: lineExitedWake}, {level: "INFO", msg: lineInFlight}},
		absent: []string{lineWakeRefused, lineWakeFailed},
		gets:   1, completions: 1, starts: 1,
		then: watched,
	},

	// --- the model (the pod RUNNING, its proxy URL on the model server) ---
	{
		// The boot answered the history turn: a RUNNING pod whose model
		// stops answering has crashed, said at once, never woken.
		name: "model/502 HTML twice", history: true,
		inject:     modelFault(status(http.StatusBadGateway, "text/html", proxy502)),
		wantStatus: http.StatusOK, wantReply: replyCrashed,
		lines:  []wantLine{{level: "ERROR", msg: lineCrashed}},
		absent: []string{lineWakeFired, lineTurnFailed},
		gets:   1, completions: 2,
	},
	{
		name: "model/connection reset", history: true, inject: modelFault(reset()),
		wantStatus: http.StatusOK, wantReply: replyCrashed,
		lines:  []wantLine{{level: "ERROR", msg: lineCrashed}},
		absent: []string{lineWakeFired, lineTurnFailed},
		gets:   1, completions: 2,
	},
	{
		// Nothing has answered on this boot and the conductor gives no
		// readySince: the model is still loading (D7).
		name: "model/502 HTML twice on a boot that never answered",
		inject: func(e *env) {
			e.cond.on(routeGetPod, booting(e.model))
			e.model.on(routeComplete, status(http.StatusBadGateway, "text/html", proxy502))
		},
		wantStatus: http.StatusOK, wantReply: replyLoading,
		lines:  []wantLine{{level: "INFO", msg: lineLoadingWait}},
		absent: []string{lineWakeFired, lineTurnFailed, "CRASHED"},
		gets:   2, completions: 2,
	},
	{
		name: "model/hanging past completion_timeout", history: true, inject: modelFault(hang()), waits: true,
		wantStatus: http.StatusBadGateway, wantBody: e2e.ProviderFailed,
		minTook: 2 * completionTimeout, maxTook: 2*completionTimeout + 2*time.Second,
		lines:  []wantLine{turnFailed("completion aborted: timed out after 500ms")},
		absent: []string{lineNotReady, lineWakeFired},
		gets:   1, completions: 2,
	},
	{
		name: "model/200 whose body stops halfway", history: true, inject: modelFault(truncated()),
		wantStatus: http.StatusBadGateway, wantBody: e2e.ProviderFailed,
		lines:  []wantLine{turnFailed("completion failed: status=200: response body failed: EOF")},
		absent: []string{lineNotReady, lineWakeFired},
		gets:   0, completions: 1,
	},
	{
		name: "model/200 with malformed JSON", history: true,
		inject:     modelFault(status(http.StatusOK, "application/json", `{"choices":[{"message":{"content":"trunc`)),
		wantStatus: http.StatusBadGateway, wantBody: e2e.ProviderFailed,
		lines:  []wantLine{turnFailed("completion failed: status=200: malformed response: syntax error at offset 40")},
		absent: []string{lineNotReady, lineWakeFired},
		gets:   0, completions: 1,
	},
	{
		name: "model/500", history: true,
		inject:     modelFault(status(http.StatusInternalServerError, "application/json", `{"error":{"message":"CUDA error: out of memory"}}`)),
		wantStatus: http.StatusBadGateway, wantBody: e2e.ProviderFailed,
		lines:  []wantLine{turnFailed("completion failed: status=500: HTTP 500: CUDA error: out of memory")},
		absent: []string{lineNotReady, lineWakeFired},
		gets:   0, completions: 1,
	},
	{
		name: "model/429", history: true,
		inject:     modelFault(status(http.StatusTooManyRequests, "application/json", `{"error":{"message":"rate limit exceeded for `+secretKey+`"}}`)),
		wantStatus: http.StatusBadGateway, wantBody: e2e.ProviderFailed,
		lines:  []wantLine{turnFailed("completion failed: status=429: HTTP 429: rate limit exceeded for [redacted]")},
		absent: []string{lineNotReady, lineWakeFired},
		gets:   0, completions: 1,
	},

	// --- the input ---
	{
		// Three turns of 700 KB, each answered with 700 KB: together over
		// gRPC's default 4 MiB. History is bounded by bytes, so the next
		// turn sends none of them and the session stays usable. A 700 KB
		// turn may take longer than the matrix's 500 ms completion timeout
		// on a loaded machine under -race: this row is about size.
		name:              "input/three 700 KB turns, then a short one",
		largeTurns:        []string{strings.Repeat("a", 700<<10), strings.Repeat("b", 700<<10), strings.Repeat("c", 700<<10)},
		completionTimeout: 20 * time.Second,
		inject:            func(*env) {},
		wantStatus:        http.StatusOK, wantReply: echo(faultMessage),
		absent: []string{lineTurnFailed, lineNotReady},
		gets:   0, completions: 1, stored: true,
	},

	// --- the plugins ---
	{
		// The first turn's lookup crashes the GPU plugin after the conductor
		// answered; the supervisor relaunches it and asks once more.
		name: "plugin/GPU plugin crashes during GetPod", gpuPlugin: faultBin,
		inject: func(e *env) {
			e.cond.on(routeGetPod, fault("crash", running(e.model, t0)), running(e.model, t0))
		},
		wantStatus: http.StatusOK, wantReply: echo(faultMessage),
		lines: []wantLine{{level: "WARN", msg: linePluginCrash}},
		gets:  2, completions: 1, stored: true,
	},
	{
		// The start was handed to the GPU plugin, which died before it
		// answered: whether the request went out is unknown, so, like the
		// client timeout of D2, the wake is in flight and watched. The next
		// ask inside the window waits; it sends no second start.
		name: "plugin/GPU plugin crashes during StartPod", gpuPlugin: faultBin, history: true,
		inject:     asleep(fault("crash", status(http.StatusAccepted, "application/json", `{}`))),
		wantStatus: http.StatusOK, wantReply: replyStopped,
		lines: []wantLine{
			{level: "INFO", msg: lineExitedWake},
			{level: "INFO", msg: lineAnswerLost},
		},
		absent: []string{lineWakeFailed, lineWakeRefused},
		gets:   1, completions: 1, starts: 1,
		then: askAgainInFlight,
	},
	{
		// The model got the payload; the plugin died before answering. The
		// outcome is unknown, so the payload is never sent again.
		name: "plugin/provider plugin crashes during Complete", providerPlugin: faultBin, history: true,
		inject:     modelFault(fault("crash", answer())),
		wantStatus: http.StatusBadGateway, wantBody: e2e.ProviderFailed,
		lines: []wantLine{
			{level: "WARN", msg: linePluginCrash},
			turnFailed("completion failed: status=0: provider plugin crashed"),
		},
		absent: []string{lineNotReady, lineWakeFired},
		gets:   0, completions: 1,
	},
	{
		// The GPU plugin never answers GetPod. The host must not wait longer
		// than lookup_timeout for it: the lookup fails and the cached
		// resolution's 502 is the answer, as with a conductor that hangs.
		name: "plugin/GPU plugin hangs in GetPod", gpuPlugin: faultBin, history: true, waits: true,
		inject: func(e *env) {
			stale502(e)
			e.cond.on(routeGetPod, fault("hang", running(e.model, t0)))
		},
		wantStatus: http.StatusBadGateway, wantBody: e2e.ProviderFailed,
		// Any cap a little above lookup_timeout will do (the host caps a
		// start at start_timeout + 5s); a turn still waiting at +7s is held
		// by nothing but its client's patience.
		maxTook:     lookupTimeout + 6*time.Second,
		turnTimeout: lookupTimeout + 7*time.Second,
		lines:       []wantLine{turnFailed("completion failed: status=502: HTTP 502 Bad Gateway")},
		absent:      []string{lineNotReady, lineWakeFired},
		gets:        1, completions: 1,
	},
	{
		// systemd's default stop signals every process of the unit, the
		// plugins too, while a turn is in flight: a plugin ignores SIGTERM
		// while its host lives, and the turn gets its answer.
		name: "plugin/SIGTERM reaches both plugins mid-turn", history: true,
		inject:     func(e *env) { e.model.on(routeComplete, sigtermPlugins(e, answer())) },
		wantStatus: http.StatusOK, wantReply: echo(faultMessage),
		absent: []string{linePluginCrash, lineTurnFailed},
		gets:   0, completions: 1, stored: true,
		then: pluginsSurvived,
	},
	{
		// The conductor plugin dies with no call in flight. The host notices
		// the exit itself and relaunches the plugin; /readyz follows it
		// without any chat traffic (see killIdleGPUPlugin). The fault turn
		// runs before the kill, as a plain turn.
		name: "plugin/conductor plugin killed while idle", history: true,
		inject:     func(*env) {},
		wantStatus: http.StatusOK, wantReply: echo(faultMessage),
		absent: []string{linePluginCrash, lineTurnFailed},
		gets:   0, completions: 1, stored: true,
		then: killIdleGPUPlugin,
	},
	{
		name: "plugin/binary fails the handshake", gpuPlugin: badHandshake,
		startErr: []string{"conductor.plugin", filepath.Join(binDirMark, badHandshake), "failed the go-plugin handshake"},
	},
	{
		name: "plugin/missing binary", gpuPlugin: "wake-plugin-missing",
		startErr:   []string{"conductor.plugin", filepath.Join(binDirMark, "wake-plugin-missing")},
		startErrIs: fs.ErrNotExist,
	},
	{
		// The conductor plugin is running by the time the provider's binary
		// turns out to be missing: app.New must stop it again (the leak check
		// sees its client's goroutines otherwise).
		name: "plugin/missing provider binary after the conductor plugin started", providerPlugin: "wake-plugin-missing",
		startErr:   []string{"providers[0].plugin", filepath.Join(binDirMark, "wake-plugin-missing")},
		startErrIs: fs.ErrNotExist,
	},

	// --- the host ---
	{
		// A wake.db cut short mid-file (a full disk, a copy that stopped):
		// bbolt would die of SIGBUS mapping it. The host refuses it before
		// starting anything, with the file's path and what to do.
		name: "host/store truncated mid-file", inject: truncatedStore,
		startErr:   []string{"wake.db is corrupt: it is truncated", "move the file aside and restore it from a backup"},
		startErrIs: store.ErrCorrupt,
	},
	{
		// Host A wakes the pod and is stopped at once, while its start
		// request is still held by the conductor; host B starts on the same
		// data dir two minutes later.
		name: "host/killed mid-wake and restarted", history: true, inject: asleep(hang()), waits: true,
		wantStatus: http.StatusOK, wantReply: replyStopped,
		lines:  []wantLine{{level: "INFO", msg: lineExitedWake}},
		absent: []string{lineWakeRefused, lineWakeFailed},
		gets:   1, completions: 1, starts: 1,
		then: restartMidWake,
	},
}

// TestFaultMatrix runs every row of the matrix on a fresh host, the rows in
// parallel: each has its own servers, clock, data dir, plugin dir and log.
// The rows that wait (a hang row spends most of its time on lookup_timeout
// plus the host's second, or on two completion_timeouts) start first, all
// at once; the others, which start plugins and hosts and relaunch them
// within a second, follow in order, as many at once as -parallel says
// (GOMAXPROCS by default): a row that waits would hold one of those few
// places with nothing to do. Once the last row has ended, no goroutine of
// any row is left.
func TestFaultMatrix(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t, leakIgnores...) })
	// t.Run may be called from several goroutines at once: each row is a
	// subtest of its own, and none is a parallel one.
	var rows sync.WaitGroup
	run := func(r row, done func()) {
		rows.Go(func() {
			defer done()
			t.Run(r.name, func(t *testing.T) { runRow(t, r) })
		})
	}
	for _, r := range matrix {
		if r.waits {
			run(r, func() {})
		}
	}
	places := make(chan struct{}, flag.Lookup("test.parallel").Value.(flag.Getter).Get().(int))
	for _, r := range matrix {
		if !r.waits {
			places <- struct{}{}
			run(r, func() { <-places })
		}
	}
	rows.Wait()
}

// truncatedStore leaves a store with a few turns in the row's data dir, cut
// to half its pages.
func truncatedStore(e *env) {
	path := filepath.Join(e.dataDir, "wake.db")
	s, err := store.Open(path)
	if err != nil {
		panic(err)
	}
	for i := range 50 {
		user := store.Message{Role: store.RoleUser, Content: historyMessage}
		reply := store.Message{Role: store.RoleAssistant, Content: strings.Repeat(echo(historyMessage), 20)}
		if err := s.AppendTurn(context.Background(), fmt.Sprintf("%s-%d", session, i), user, reply); err != nil {
			panic(err)
		}
	}
	if err := s.Close(); err != nil {
		panic(err)
	}
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true})
	if err != nil {
		panic(err)
	}
	var used int64
	db.View(func(tx *bolt.Tx) error { used = tx.Size(); return nil })
	db.Close()
	if err := os.Truncate(path, used/2); err != nil {
		panic(err)
	}
}

// askAgainRefused: the refusal was recorded (D12). A minute later the pod
// is still asleep; the next ask names the refusal and wakes again, once.
func askAgainRefused(code int) func(t *testing.T, e *env, h *host) *host {
	return func(t *testing.T, e *env, h *host) *host {
		t.Helper()
		h.awaitState(t, "refused") // the refusal is recorded
		starts := e.cond.count(routeStart)
		e.clock.Advance(time.Minute)
		got := h.chat(t, session, "again")
		if want := replyBody(session, e2e.ReplyRefused(code)); got.Status != http.StatusOK || got.Body != want {
			t.Errorf("ask after the refusal: %d %q, want 200 %q", got.Status, got.Body, want)
		}
		// The second start reached the conductor, which refused it too,
		// before the follow-up heals the conductor.
		e2e.WaitCount(t, "start requests", starts+1, func() int { return e.cond.count(routeStart) }, waitFor)
		e.whenStopped(func(t *testing.T) {
			if n := len(e.log.Matching(t, lineWakeRefused)); n != 2 {
				t.Errorf("%d %q lines, want 2: one per refused start", n, lineWakeRefused)
			}
		})
		return h
	}
}

// askAgainNotSent: the failed start was recorded (D12). With the conductor
// back and the pod still asleep, the next ask names the failure and wakes
// again; this start is accepted.
func askAgainNotSent(t *testing.T, e *env, h *host) *host {
	t.Helper()
	h.awaitState(t, "start-failed") // the failed start is recorded
	e.cond.up()
	e.cond.on(routeStart, status(http.StatusAccepted, "application/json", `{}`))
	e.clock.Advance(time.Minute)
	got := h.chat(t, session, "again")
	if want := replyBody(session, replyWakeFailed); got.Status != http.StatusOK || got.Body != want {
		t.Errorf("ask after the failed start: %d %q, want 200 %q", got.Status, got.Body, want)
	}
	e.expectLine(wantLine{level: "INFO", msg: "wake requested for pod qwen: accepted status=202"})
	return h
}

// askAgainInFlight: a start whose answer was lost is a wake in flight. A
// minute later the pod is still asleep: the next ask waits, and no second
// start goes out.
func askAgainInFlight(t *testing.T, e *env, h *host) *host {
	t.Helper()
	e2e.WaitWatcher(t, e.clock, waitFor) // the start returned, its answer lost: watched
	starts := e.cond.count(routeStart)
	e.clock.Advance(time.Minute)
	got := h.chat(t, session, "again")
	if want := replyBody(session, e2e.ReplyStillWaking(1)); got.Status != http.StatusOK || got.Body != want {
		t.Errorf("ask after the lost start: %d %q, want 200 %q", got.Status, got.Body, want)
	}
	if n := e.cond.count(routeStart); n != starts {
		t.Errorf("%d more start requests, want none", n-starts)
	}
	return watched(t, e, h)
}

// watched: a start in flight is watched (D12): the watch sleeps on the
// clock, and after watch_poll it reads the pod at the conductor.
func watched(t *testing.T, e *env, h *host) *host {
	t.Helper()
	e2e.WaitWatcher(t, e.clock, waitFor)
	gets := e.cond.count(routeGetPod)
	e.clock.Advance(time.Minute)
	e2e.WaitCount(t, "GetPod requests after one watch_poll", gets+1, func() int { return e.cond.count(routeGetPod) }, waitFor)
	return h
}

// restartMidWake stops host A while its start is in flight and starts host B
// on the same data dir two minutes later: B resumes the watch of A's wake at
// once, counts the elapsed minutes from A's wake, sends no second start,
// and its watch keeps polling.
func restartMidWake(t *testing.T, e *env, a *host) *host {
	t.Helper()
	if err := a.Stop(); err != nil {
		t.Fatalf("host A: Shutdown: %v", err)
	}
	// Shutdown waited for the start: it timed out at the client and was
	// logged in flight, and no watch outlived host A.
	checkLine(t, e, wantLine{level: "INFO", msg: lineInFlight})
	if n := e.cond.count(routeStart); n != 1 {
		t.Fatalf("host A made %d start requests, want 1", n)
	}
	e.clock.Advance(2 * time.Minute)
	gets := e.cond.count(routeGetPod)
	b := e.start(t)
	// B's resumed watch logs that it resumed, then reads the pod.
	e2e.WaitCount(t, "GetPod requests of B's resumed watch", gets+1, func() int { return e.cond.count(routeGetPod) }, waitFor)
	checkLine(t, e, wantLine{level: "INFO", msg: lineWakeResumed})
	e2e.WaitWatcher(t, e.clock, waitFor)

	got := b.chat(t, session, "are you there?")
	if want := replyBody(session, e2e.ReplyStillWaking(2)); got.Status != http.StatusOK || got.Body != want {
		t.Errorf("host B at +2m: %d %q, want 200 %q", got.Status, got.Body, want)
	}
	checkLine(t, e, wantLine{level: "INFO", msg: lineExitedWait})
	if n := e.cond.count(routeGetPod) - gets; n != 2 {
		t.Errorf("host B: %d GetPod requests (watch and turn), want 2", n)
	}
	e.clock.Advance(time.Minute)
	e2e.WaitCount(t, "GetPod requests after B's watch_poll", gets+3, func() int { return e.cond.count(routeGetPod) }, waitFor)
	if n := len(e.log.Matching(t, lineWakeFired)); n != 1 {
		t.Errorf("%d %q lines over both hosts, want 1 (host A's)", n, lineWakeFired)
	}
	return b
}
