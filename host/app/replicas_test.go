package app_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wakeonchat/wakeonchat/host/internal/e2e"
	"github.com/wakeonchat/wakeonchat/host/internal/pgtest"
)

// This file runs three wakehost processes on one PostgreSQL database, behind
// no load balancer: the test spreads its requests over them itself.

// sharedPod is a conductor and a model on loopback for the replicas: the pod
// qwen is EXITED until the test makes it ready, every start is answered 202
// and counted, and every start and lookup is noted, with the replica that
// sent it, in calls. The model echoes the last message, keeps every
// request's messages, and holds a completion of "hold" until the test
// releases it.
type sharedPod struct {
	conductor, model *httptest.Server
	starts           atomic.Int64
	ready            atomic.Pointer[string] // the readySince, once ready

	mu       sync.Mutex
	calls    []conductorCall
	called   chan struct{}         // closed and replaced at each call
	requests [][]map[string]string // every completion's messages
	held     chan struct{}         // a "hold" completion arrived
	release  chan struct{}         // closed by the test: "hold" answers
}

// conductorCall is one request the conductor answered: a start or a
// lookup (kind "start" or "get") of the replica whose conductor URL it
// came through (replicaURL), -1 for the conductor's own URL.
type conductorCall struct {
	replica int
	kind    string
}

// replicaURL is the conductor's URL for replica i: its own path prefix, so
// that the conductor tells the replicas' requests apart. (The conductor
// plugin puts the API's paths under the URL it is given.)
func (p *sharedPod) replicaURL(i int) string {
	return fmt.Sprintf("%s/replica/%d", p.conductor.URL, i)
}

func newSharedPod(t *testing.T) *sharedPod {
	t.Helper()
	p := &sharedPod{called: make(chan struct{}), held: make(chan struct{}, 1), release: make(chan struct{})}
	p.model = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Messages []map[string]string `json:"messages"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil || len(req.Messages) == 0 {
			http.Error(w, "bad completion request", http.StatusBadRequest)
			return
		}
		p.mu.Lock()
		p.requests = append(p.requests, req.Messages)
		p.mu.Unlock()
		last := req.Messages[len(req.Messages)-1]["content"]
		if last == "hold" {
			p.held <- struct{}{}
			select {
			case <-p.release:
			case <-r.Context().Done():
				return
			}
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"choices": []any{map[string]any{
			"message": map[string]string{"role": "assistant", "content": "echo: " + last},
		}}})
	}))
	p.conductor = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		replica, path := -1, r.URL.Path
		if rest, ok := strings.CutPrefix(path, "/replica/"); ok {
			n, api, _ := strings.Cut(rest, "/")
			if i, err := strconv.Atoi(n); err == nil {
				replica, path = i, "/"+api
			}
		}
		switch {
		case r.Method == http.MethodPost && path == "/api/pods/qwen/start":
			p.note(conductorCall{replica: replica, kind: "start"})
			p.starts.Add(1)
			w.WriteHeader(http.StatusAccepted)
			io.WriteString(w, "{}")
		case r.Method == http.MethodGet && path == "/api/pods/qwen":
			p.note(conductorCall{replica: replica, kind: "get"})
			w.Header().Set("Content-Type", "application/json")
			if since := p.ready.Load(); since != nil {
				io.WriteString(w, `{"name":"qwen","status":"RUNNING","isRunning":true,"proxyUrl":"`+p.model.URL+
					`","podId":"pod-1","readySince":"`+*since+`","lookup":"FOUND"}`)
				return
			}
			io.WriteString(w, `{"name":"qwen","status":"EXITED","isRunning":false,"podId":"pod-1","lookup":"FOUND"}`)
		default:
			http.Error(w, "not scripted", http.StatusNotFound)
		}
	}))
	t.Cleanup(func() {
		p.conductor.Close()
		p.model.Close()
	})
	return p
}

// note notes a call, before it is answered.
func (p *sharedPod) note(c conductorCall) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.calls = append(p.calls, c)
	close(p.called)
	p.called = make(chan struct{})
}

// callCount is how many calls the conductor got so far.
func (p *sharedPod) callCount() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.calls)
}

// awaitCalls waits until done, given every call so far, says yes, and
// returns those calls; after within it fails the test, saying it found no
// what.
func (p *sharedPod) awaitCalls(t *testing.T, within time.Duration, what string, done func([]conductorCall) bool) []conductorCall {
	t.Helper()
	deadline := time.After(within)
	for {
		p.mu.Lock()
		calls, called := slices.Clone(p.calls), p.called
		p.mu.Unlock()
		if done(calls) {
			return calls
		}
		select {
		case <-called:
		case <-deadline:
			t.Fatalf("the conductor got no %s within %v: %v", what, within, calls)
			return nil
		}
	}
}

// makeReady makes the pod RUNNING with its model answering since now, to
// the nanosecond (RFC 3339 takes a fraction of a second).
func (p *sharedPod) makeReady() {
	since := time.Now().UTC().Format(time.RFC3339Nano)
	p.ready.Store(&since)
}

// lastRequest is the messages of the last completion.
func (p *sharedPod) lastRequest() []map[string]string {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.requests) == 0 {
		return nil
	}
	return p.requests[len(p.requests)-1]
}

// replicaLease and replicaPoll are the replicas' [store] lease and
// [timings] watch_poll: short, so that a takeover takes a second or two.
const (
	replicaLease = time.Second
	replicaPoll  = 200 * time.Millisecond
)

// startReplicas runs n wakehost processes on the schema of dsn and the pod,
// host i's conductor URL p.replicaURL(i), each with its wake.toml from
// e2e.Config and then tune (nil for none). They start one after the other:
// e2e.Launch hands each a port it found free, and two launched at once
// can be handed the same one.
func startReplicas(t *testing.T, n int, dsn string, p *sharedPod, tune func(*e2e.Config)) []*wakehost {
	t.Helper()
	var hosts []*wakehost
	for i := range n {
		c := e2e.Config{
			ConductorURL: p.replicaURL(i), LookupTimeout: time.Second, StartTimeout: startTimeout,
			WatchPoll: replicaPoll, StoreDSNEnv: "WAKE_TEST_STORE_DSN", StoreLease: replicaLease,
		}
		if tune != nil {
			tune(&c)
		}
		hosts = append(hosts, launchWakehost(t, e2e.WriteConfig(t, c), []string{"WAKE_TEST_STORE_DSN=" + dsn}))
	}
	return hosts
}

// post sends body to h's /api/chat and returns the status and body; a
// transport error is status 0 with the error as the body.
func (h *wakehost) post(body any) (int, string) {
	b, _ := json.Marshal(body)
	ctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, h.base+"/api/chat", bytes.NewReader(b))
	req.Header.Set("Content-Type", "application/json")
	resp, err := h.client.Do(req)
	if err != nil {
		return 0, "transport error: " + err.Error()
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(out)
}

// counted is h's counter name, summed over its series whose labels
// include where ("k=v" pairs), as GET /metrics says now.
func (h *wakehost) counted(t *testing.T, name string, where ...string) float64 {
	t.Helper()
	return scrapeAt(t, h.client, h.base).sum(name, where...)
}

// isStart reports whether c is a start.
func isStart(c conductorCall) bool { return c.kind == "start" }

// reads are the lookups among calls.
func reads(calls []conductorCall) []conductorCall {
	var out []conductorCall
	for _, c := range calls {
		if c.kind == "get" {
			out = append(out, c)
		}
	}
	return out
}

// stream opens h's event stream of pod qwen.
func (h *wakehost) stream(t *testing.T) *eventStream {
	t.Helper()
	return openStream(t, h.client, h.base, "/api/pods/qwen/events")
}

// wakesTotal is the counter of the wakes whose outcome a host recorded
// itself.
const wakesTotal = "wakeonchat_wakes_total"

// TestThreeReplicas: three hosts on one database behave as one. A burst of
// 1000 asks spread over them makes one start, and every ask gets the same
// wake's reply; a turn of a session running on one host is a 409 on
// another; a wait left on one host resumes on another, and the turns each
// ran are in the history the other sends, and the wait's event stream,
// open on the host that resumes, says when; when the host watching the wake
// is killed, another takes the watch over and records the wake ready; and
// one watch reads the pod per poll, not one per host.
//
// Most of its time is the takeover's wait: a wake is left to the host that
// decided it until its start's own cap has passed (wake's start_timeout and
// slack, over 5 s), whatever the lease. So the hosts start and the burst
// wakes the pod before the test is parallel: that wait then runs while the
// package's other tests do, whenever this one gets its turn among them.
func TestThreeReplicas(t *testing.T) {
	dsn := pgtest.Schema(t)
	p := newSharedPod(t)
	hosts := startReplicas(t, 3, dsn, p, nil)

	// The burst: 1000 asks, 64 at a time, round robin over the hosts.
	const asks, concurrency = 1000, 64
	replies := make([]string, asks)
	var wg sync.WaitGroup
	next := atomic.Int64{}
	for range concurrency {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= asks {
					return
				}
				status, body := hosts[i%len(hosts)].post(chatRequest{Message: "hello", SessionID: fmt.Sprintf("burst-%d", i)})
				if status != http.StatusOK {
					replies[i] = fmt.Sprintf("%d %s", status, body)
					continue
				}
				var r chatReply
				json.Unmarshal([]byte(body), &r)
				replies[i] = r.Reply
			}
		})
	}
	wg.Wait()
	counts := map[string]int{}
	for _, r := range replies {
		counts[r]++
	}
	if counts[e2e.ReplyWaking] != 1 || counts[e2e.ReplyWaking]+counts[e2e.ReplyStillWaking(0)] != asks {
		t.Errorf("the burst's replies: %v; want one waking and the rest still waking (0 min)", counts)
	}
	t.Parallel()
	// The host that sent the start is the one whose watch follows the wake.
	calls := p.awaitCalls(t, waitFor, "start", func(cs []conductorCall) bool { return slices.ContainsFunc(cs, isStart) })
	watcher := calls[slices.IndexFunc(calls, isStart)].replica
	if watcher < 0 || watcher >= len(hosts) {
		t.Fatalf("the start came through the conductor URL of replica %d", watcher)
	}

	// One watch per wake: with no asks, the watching host alone reads the
	// pod, once a poll, not once a poll per host. The window is the time
	// the conductor takes to see windowReads reads, waited for: a busy
	// machine stretches it, which can make the reads only rarer.
	const windowReads = 5
	from, began := p.callCount(), time.Now()
	window := p.awaitCalls(t, waitFor, fmt.Sprintf("%d pod reads with a wake in progress (no watch polls)", windowReads),
		func(cs []conductorCall) bool { return len(reads(cs[from:])) >= windowReads })[from:]
	polls := int64(time.Since(began) / replicaPoll)
	if n := int64(len(reads(window))); n > polls+2 {
		t.Errorf("%d pod reads in %d watch polls of three hosts, want about one a poll", n, polls)
	}
	for _, c := range reads(window) {
		if c.replica != watcher {
			t.Errorf("host %d, which does not watch the wake, read the pod meanwhile, want none: %v", c.replica, window)
			break
		}
	}
	if n := p.starts.Load(); n != 1 {
		t.Errorf("%d starts for the burst, want 1", n)
	}
	for i, h := range hosts {
		if i != watcher && len(h.log.Matching(t, "wake watch resumed")) > 0 {
			t.Errorf("host %d took over a watch nobody lost", i)
		}
	}

	// A wait on one host; its resume on another.
	waitOn, resumeOn := (watcher+1)%3, (watcher+2)%3
	status, body := hosts[waitOn].post(chatRequest{Message: "remember 42", SessionID: "fg", WakeMode: "wait"})
	var waited chatReply
	if json.Unmarshal([]byte(body), &waited); status != http.StatusOK || waited.PendingWake == nil {
		t.Fatalf("the wait: %d %s, want a pendingWake", status, body)
	}
	// The marker's event stream, opened on the host that will resume it,
	// tells the client when to: the wake is another host's.
	resumeStream := openStream(t, hosts[resumeOn].client, hosts[resumeOn].base, waited.PendingWake.Events)
	if first := resumeStream.nextPod(t); first.State != "waking" {
		t.Errorf("the pending wake's stream on the resuming host starts %+v, want waking", first)
	}

	// The watching host dies; another takes its watch over and records the
	// wake ready, before anyone asks. The taker's watch reads the pod at
	// once: the first survivor to read it took the watch over.
	hosts[watcher].cmd.Process.Kill()
	<-hosts[watcher].exited
	killed := p.callCount()
	p.makeReady()
	bySurvivor := func(c conductorCall) bool { return c.kind == "get" && c.replica != watcher }
	calls = p.awaitCalls(t, 10*replicaLease+10*time.Second, "pod read by a survivor (nobody took the watch over)",
		func(cs []conductorCall) bool { return slices.ContainsFunc(cs[killed:], bySurvivor) })[killed:]
	taker := calls[slices.IndexFunc(calls, bySurvivor)].replica
	if taker != waitOn && taker != resumeOn {
		t.Fatalf("the first pod read after the kill came through the conductor URL of replica %d", taker)
	}
	// The taker's own stream shows the wake ready once its watch recorded
	// it (and counted it: the metrics follow each change before the
	// streams); the other survivor counted nothing.
	hosts[taker].stream(t).nextState(t, "ready", waitFor)
	for _, i := range []int{waitOn, resumeOn} {
		want := 0.0
		if i == taker {
			want = 1
		}
		if got := hosts[i].counted(t, wakesTotal, "outcome=ready"); got != want {
			t.Errorf("survivor %d counted %v wakes ready, want %v: survivor %d took the watch over", i, got, want, taker)
		}
	}
	if n := p.starts.Load(); n != 1 {
		t.Errorf("%d starts after the takeover, want still 1", n)
	}
	if ready := resumeStream.nextState(t, "ready", waitFor); !ready.Ready {
		t.Errorf("the pending wake's stream on the resuming host: %+v, want a fresh ready", ready)
	}

	status, body = hosts[resumeOn].post(chatRequest{Message: "remember 42", SessionID: "fg", WakeMode: "resume", PendingWake: waited.PendingWake.Key})
	if want := `{"reply":"echo: remember 42","sessionId":"fg"}`; status != http.StatusOK || strings.TrimSpace(body) != want {
		t.Errorf("the resume on another host: %d %s, want %s", status, body, want)
	}
	status, body = hosts[waitOn].post(chatRequest{Message: "remember 42", SessionID: "fg", WakeMode: "resume", PendingWake: waited.PendingWake.Key})
	if status != http.StatusConflict || !strings.Contains(body, "no pending wake for this session") {
		t.Errorf("a second resume, on the first host: %d %s, want 409", status, body)
	}

	// One turn per session across hosts: while a turn of "fg" runs on one,
	// the session is 409 on the other.
	held := make(chan string, 1)
	go func() {
		_, body := hosts[waitOn].post(chatRequest{Message: "hold", SessionID: "fg"})
		held <- body
	}()
	select {
	case <-p.held:
	case <-time.After(waitFor):
		t.Fatal("the held completion never reached the model")
	}
	status, body = hosts[resumeOn].post(chatRequest{Message: "meanwhile", SessionID: "fg"})
	if status != http.StatusConflict || !strings.Contains(body, "a turn is already in flight for this session") {
		t.Errorf("a turn of a session another host runs: %d %s, want 409", status, body)
	}
	close(p.release)
	if body := <-held; !strings.Contains(body, "echo: hold") {
		t.Errorf("the held turn: %s, want its answer", body)
	}

	// The history the other host sends has both turns, the one resumed
	// there and the one held here: sent the moment the held turn was
	// answered, the turn waits for it to be stored instead of a 409.
	status, body = hosts[resumeOn].post(chatRequest{Message: "what did I say?", SessionID: "fg"})
	if status != http.StatusOK {
		t.Fatalf("the last turn: %d %s", status, body)
	}
	var contents []string
	for _, m := range p.lastRequest() {
		contents = append(contents, m["role"]+": "+m["content"])
	}
	want := []string{"user: remember 42", "assistant: echo: remember 42", "user: hold", "assistant: echo: hold", "user: what did I say?"}
	got := contents[len(contents)-min(len(contents), len(want)):]
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("the last completion's messages end with\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	for _, h := range hosts {
		if strings.Contains(h.log.String(), dsn) {
			t.Error("a host's log carries the connection string")
		}
	}
}

// elsewhereWithin is how soon a change one replica stores reaches another's
// event stream (#13: within 1 s).
const elsewhereWithin = time.Second

// nextState is the stream's next pod event in state, skipping others; it
// fails the test when none comes within d.
func (es *eventStream) nextState(t *testing.T, state string, d time.Duration) podEvent {
	t.Helper()
	deadline := time.After(d)
	for {
		select {
		case e, ok := <-es.events:
			if !ok {
				t.Fatalf("the event stream ended before %s", state)
			}
			var p podEvent
			if e.Name != "" || json.Unmarshal([]byte(e.Data), &p) != nil {
				t.Fatalf("event %q %s, want a pod event", e.Name, e.Data)
			}
			if p.State == state {
				return p
			}
		case <-deadline:
			t.Fatalf("no %s event within %v", state, d)
			return podEvent{}
		}
	}
}

// TestReplicaEvents: what one replica stores, another's event stream
// shows within a second, and its pod report, metrics and status page count
// it: a wake decided on A is waking on B's stream; its outcome, recorded by
// A's watch, is ready on B's, B's estimate is measured from the wake A
// logged, B's status page lists it, and B's pod state metric follows while
// only A counts the wake.
//
// Not parallel: it bounds how soon, in real time, B sees A's changes.
func TestReplicaEvents(t *testing.T) {
	dsn := pgtest.Schema(t)
	p := newSharedPod(t)
	hosts := startReplicas(t, 2, dsn, p, nil)
	a, b := hosts[0], hosts[1]

	atA, atB := a.stream(t), b.stream(t)
	if first := atB.nextPod(t); first.State != "asleep" {
		t.Fatalf("B's first event: %+v, want asleep", first)
	}
	status, body := a.post(chatRequest{Message: "hello", SessionID: "s"})
	replied := time.Now()
	var r chatReply
	if json.Unmarshal([]byte(body), &r); status != http.StatusOK || r.Reply != e2e.ReplyWaking {
		t.Fatalf("the ask on A: %d %s, want the waking reply", status, body)
	}
	waking := atB.nextState(t, "waking", waitFor)
	if lag := time.Since(replied); lag > elsewhereWithin {
		t.Errorf("B's stream showed waking %v after A replied, want within %v", lag, elsewhereWithin)
	}
	if waking.WakeRequestedAt == nil || waking.ElapsedSeconds == nil || waking.EtaSeconds == nil {
		t.Errorf("B's waking event %+v lacks the wake's request, elapsed or eta", waking)
	}

	// Ready since after the request (by more than the database's
	// microsecond), so that the wake A logs takes a positive time and
	// counts in the estimate.
	for !time.Now().After(waking.WakeRequestedAt.Add(time.Millisecond)) {
		time.Sleep(time.Millisecond)
	}
	p.makeReady()
	// A's own stream shows the wake ready once A's watch recorded it, and
	// counted it (the metrics follow each change before the streams).
	atA.nextState(t, "ready", waitFor)
	recorded := time.Now()
	if got := a.counted(t, wakesTotal, "outcome=ready"); got != 1 {
		t.Fatalf("A counted %v wakes ready once its stream showed it ready, want 1: A's watch records it", got)
	}
	ready := atB.nextState(t, "ready", waitFor)
	if lag := time.Since(recorded); lag > elsewhereWithin {
		t.Errorf("B's stream showed ready %v after A recorded it, want within %v", lag, elsewhereWithin)
	}
	if !ready.Ready || ready.Outcome == nil || *ready.Outcome != "ready" {
		t.Errorf("B's ready event: %+v, want a fresh ready with the outcome ready", ready)
	}

	// B's estimate counts the wake A logged.
	_, raw, err := b.get("/api/pods/qwen")
	var report struct {
		EstimateWakes int `json:"estimateWakes"`
	}
	if err != nil || json.Unmarshal([]byte(raw), &report) != nil || report.EstimateWakes != 1 {
		t.Errorf("GET /api/pods/qwen on B: %s, %v; want estimateWakes 1, the wake A logged", raw, err)
	}
	// B's status page lists it, from the shared wake log.
	if _, frag, err := b.get("/status/pods/qwen"); err != nil || !strings.Contains(frag, `<td class="ok">ready</td>`) {
		t.Errorf("B's status fragment lacks the wake A logged (%v):\n%s", err, frag)
	}
	// B's pod state follows; the wake is counted once, by A.
	scrapeB, scrapeA := scrapeAt(t, b.client, b.base), scrapeAt(t, a.client, a.base)
	if v := scrapeB.value("wakeonchat_pod_state", "pod=qwen", "state=ready"); v != 1 {
		t.Errorf("B's wakeonchat_pod_state{state=ready} = %v, want 1", v)
	}
	wakesA := scrapeA.byLabel("wakeonchat_wakes_total", "outcome")
	wakesB := scrapeB.byLabel("wakeonchat_wakes_total", "outcome")
	if wakesA["ready"] != 1 || wakesB["ready"] != 0 {
		t.Errorf("wakes counted ready: A %v, B %v; want the one wake on A alone", wakesA, wakesB)
	}
}
