package chat_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wakeonchat/wakeonchat/host/agent"
	"github.com/wakeonchat/wakeonchat/host/internal/e2e"
	"github.com/wakeonchat/wakeonchat/host/resolve"
	"github.com/wakeonchat/wakeonchat/plugins/pluginapi"
)

// The pod as the conductor reports it in each state.

func asleepPod() pluginapi.Pod {
	return pluginapi.Pod{Name: "qwen", Status: "EXITED", PodID: "kcbbg9igl0xdaz", Lookup: pluginapi.LookupFound}
}

func creatingPod() pluginapi.Pod {
	return pluginapi.Pod{Name: "qwen", Status: "CREATED", PodID: "kcbbg9igl0xdaz", Lookup: pluginapi.LookupFound}
}

// loadingPod is RUNNING with a proxy URL and no readySince: vLLM is loading.
func loadingPod() pluginapi.Pod {
	return pluginapi.Pod{Name: "qwen", Status: pluginapi.StatusRunning, IsRunning: true, ProxyURL: proxyURL,
		PodID: "kcbbg9igl0xdaz", Lookup: pluginapi.LookupFound}
}

// readyPod is RUNNING with the conductor's readySince (rig-conductor#2056).
func readyPod(since string) pluginapi.Pod {
	p := loadingPod()
	p.ReadySince = pluginapi.ParseReadySince(since) // as the conductor plugin parses it
	return p
}

func unreadablePod() pluginapi.Pod {
	return pluginapi.Pod{Name: "qwen", Lookup: pluginapi.LookupUnreadable}
}

func rfc3339(t time.Time) string { return t.UTC().Format(time.RFC3339) }

// fakeGPU is a hand-written pluginapi.GPU. GetPod answers the scripted pod
// state (or fails while the conductor is down); StartPod answers a start in
// flight after the client's 3 s timeout unless startPod says otherwise.
// Every StartPod is counted and announced on started.
type fakeGPU struct {
	mu       sync.Mutex
	pod      pluginapi.Pod
	down     error // GetPod fails with it: the conductor cannot be reached
	getPod   func(ctx context.Context, name string) (pluginapi.Pod, error)
	startPod func(ctx context.Context, name string) (pluginapi.StartResult, error)
	gets     int
	starts   []string
	started  chan string
}

var _ pluginapi.GPU = (*fakeGPU)(nil)

func newFakeGPU(p pluginapi.Pod) *fakeGPU {
	return &fakeGPU{pod: p, started: make(chan string, 1024)}
}

func (f *fakeGPU) GetPod(ctx context.Context, name string) (pluginapi.Pod, error) {
	f.mu.Lock()
	f.gets++
	fn, p, down := f.getPod, f.pod, f.down
	f.mu.Unlock()
	switch {
	case fn != nil:
		return fn(ctx, name)
	case down != nil:
		return pluginapi.Pod{}, down
	}
	return p, nil
}

func (f *fakeGPU) StartPod(ctx context.Context, name string) (pluginapi.StartResult, error) {
	f.mu.Lock()
	f.starts = append(f.starts, name)
	fn := f.startPod
	f.mu.Unlock()
	f.started <- name
	if fn == nil {
		return pluginapi.StartResult{Requested: true, TimedOut: true, TimeoutMs: 3000}, nil
	}
	return fn(ctx, name)
}

func (f *fakeGPU) StopPod(context.Context, string) (pluginapi.StartResult, error) {
	panic("fake GPU: StopPod is never called by the chat host")
}

// set scripts the pod state the conductor reports from now on; the
// conductor is reachable again.
func (f *fakeGPU) set(p pluginapi.Pod) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.pod, f.down = p, nil
}

// setDown makes the conductor unreachable.
func (f *fakeGPU) setDown() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.down = &pluginapi.LookupError{Message: "conductor unreachable: ECONNREFUSED"}
}

func (f *fakeGPU) onGet(fn func(ctx context.Context, name string) (pluginapi.Pod, error)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.getPod = fn
}

func (f *fakeGPU) onStart(fn func(ctx context.Context, name string) (pluginapi.StartResult, error)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.startPod = fn
}

func (f *fakeGPU) startCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.starts)
}

func (f *fakeGPU) getCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.gets
}

// fakeProvider is a hand-written pluginapi.Provider: it records every
// endpoint and request and answers with complete ("answer to: <last
// message>" when nil).
type fakeProvider struct {
	mu        sync.Mutex
	complete  func(ctx context.Context, endpoint string, req pluginapi.CompletionRequest) (string, error)
	endpoints []string
	reqs      []pluginapi.CompletionRequest
}

var _ pluginapi.Provider = (*fakeProvider)(nil)

func (f *fakeProvider) Complete(ctx context.Context, endpoint string, req pluginapi.CompletionRequest) (string, error) {
	f.mu.Lock()
	f.endpoints = append(f.endpoints, endpoint)
	f.reqs = append(f.reqs, req)
	fn := f.complete
	f.mu.Unlock()
	if fn == nil {
		return answerTo(req.Messages[len(req.Messages)-1].Content), nil
	}
	return fn(ctx, endpoint, req)
}

func answerTo(msg string) string { return "answer to: " + msg }

func (f *fakeProvider) set(fn func(ctx context.Context, endpoint string, req pluginapi.CompletionRequest) (string, error)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.complete = fn
}

func (f *fakeProvider) calls() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.reqs)
}

func (f *fakeProvider) requests() []pluginapi.CompletionRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.reqs)
}

func (f *fakeProvider) endpointsSeen() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.endpoints)
}

// fail answers every completion with ce. Its message quotes the endpoint,
// as Go's *url.Error does, so the log checks see that it is scrubbed.
func fail(ce pluginapi.CompletionError) func(context.Context, string, pluginapi.CompletionRequest) (string, error) {
	return func(_ context.Context, endpoint string, _ pluginapi.CompletionRequest) (string, error) {
		e := ce
		e.Message = fmt.Sprintf("Post %q: %s", endpoint+"/chat/completions", ce.Message)
		return "", &e
	}
}

// fakeModel is a hand-written agent.Model, for errors no plugin produces.
type fakeModel struct {
	complete func(ctx context.Context, msgs []pluginapi.Message) (string, error)
	calls    atomic.Int32
}

var _ agent.Model = (*fakeModel)(nil)

func (m *fakeModel) Complete(ctx context.Context, msgs []pluginapi.Message, _ resolve.Send) (string, error) {
	m.calls.Add(1)
	return m.complete(ctx, msgs)
}

// logSink collects the JSON log (e2e.Log: safe while background
// goroutines write). Tests read it after the event that follows the lines
// they look for.
type logSink struct{ e2e.Log }

func newLogSink() *logSink { return &logSink{} }

// logLine is one record of the JSON log.
type logLine struct {
	Level string
	Msg   string
	Attrs map[string]any
}

func parseLog(t *testing.T, text string) []logLine {
	t.Helper()
	var out []logLine
	for _, raw := range strings.Split(strings.TrimSpace(text), "\n") {
		if raw == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(raw), &m); err != nil {
			t.Fatalf("log line %q is not JSON: %v", raw, err)
		}
		l := logLine{Attrs: m}
		l.Level, _ = m["level"].(string)
		l.Msg, _ = m["msg"].(string)
		out = append(out, l)
	}
	return out
}

// find returns the log lines whose message is msg.
// logged is the first line that match accepts, which must be logged
// already: call it after the event that follows the line. desc names the
// line in the failure.
func (s *logSink) logged(t *testing.T, desc string, match func(logLine) bool) logLine {
	t.Helper()
	for _, l := range parseLog(t, s.String()) {
		if match(l) {
			return l
		}
	}
	t.Fatalf("no log line %s; the log:\n%s", desc, s)
	return logLine{}
}

// one is the first line whose message is msg, which must be logged
// already (see logged).
func (s *logSink) one(t *testing.T, msg string) logLine {
	t.Helper()
	return s.logged(t, fmt.Sprintf("%q", msg), func(l logLine) bool { return l.Msg == msg })
}

func (s *logSink) find(t *testing.T, msg string) []logLine {
	t.Helper()
	var out []logLine
	for _, l := range parseLog(t, s.String()) {
		if l.Msg == msg {
			out = append(out, l)
		}
	}
	return out
}
