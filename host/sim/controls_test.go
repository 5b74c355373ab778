package sim_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/wakeonchat/wakeonchat/host/sim"
)

func TestForceStartStatus(t *testing.T) {
	tests := []struct {
		status   int
		wantBody string
	}{
		{status: http.StatusUnauthorized, wantBody: `{"error":"Unauthorized"}`},
		{status: http.StatusConflict, wantBody: `{"error":"Conflict"}`},
		{status: http.StatusServiceUnavailable, wantBody: `{"error":"Service Unavailable"}`},
	}
	for _, tt := range tests {
		t.Run(http.StatusText(tt.status), func(t *testing.T) {
			clk := sim.NewManualClock(t0)
			// The default hold: a forced answer must not wait for anything.
			s := startSim(t, sim.Config{Clock: clk})
			s.ForceStartStatus("qwen", tt.status)
			r := do(t, http.MethodPost, s.URL()+"/api/pods/qwen/start", "{}")
			if r.code != tt.status || strings.TrimSpace(r.body) != tt.wantBody {
				t.Errorf("start: got %d %q, want %d %q", r.code, r.body, tt.status, tt.wantBody)
			}
			if got := s.StartRequests("qwen"); got != 1 {
				t.Errorf("StartRequests = %d, want 1", got)
			}
			// Nothing was started: ten minutes on, still asleep with no pod.
			clk.Set(t0.Add(10 * time.Minute))
			wantPod(t, "after a refused start", s, sim.PodView{Name: "qwen", Status: "EXITED", Lookup: "FOUND"})

			// 0 restores normal starts.
			s.ForceStartStatus("qwen", 0)
			held := startAsync(s.URL() + "/api/pods/qwen/start") // held until RUNNING
			waitFor(t, "the second start", func() bool { return s.StartRequests("qwen") == 2 })
			clk.Set(t0.Add(10*time.Minute + 15*time.Second))
			if got := s.Snapshot("qwen"); got.Status != "CREATED" || got.PodID != "pod-1" {
				t.Errorf("after a normal start: Snapshot = %+v, want CREATED pod-1", got)
			}
			clk.Set(t0.Add(17 * time.Minute)) // RUNNING: the held start answers
			if r := <-held; r.code != http.StatusOK {
				t.Errorf("normal start after the refusal: got %d %q, want 200", r.code, r.body)
			}
		})
	}
}

// TestNeverReady: a stuck model keeps the pod RUNNING with 502 for ever; lifting
// it lets the model answer from that moment.
func TestNeverReady(t *testing.T) {
	clk := sim.NewManualClock(t0)
	s := startSim(t, sim.Config{Clock: clk, NoStartHold: true})
	s.NeverReady("qwen", true)
	do(t, http.MethodPost, s.URL()+"/api/pods/qwen/start", "{}")
	proxy := s.URL() + "/proxy/pod-1"
	stuck := sim.PodView{Name: "qwen", Status: "RUNNING", IsRunning: true, ProxyURL: proxy, PodID: "pod-1", Lookup: "FOUND"}

	for _, d := range []time.Duration{9 * time.Minute, 25 * time.Minute, 48 * time.Hour} {
		clk.Set(t0.Add(d))
		wantPod(t, "stuck at +"+d.String(), s, stuck)
		wantLoading(t, "completion at +"+d.String(), complete(t, proxy, "hi"))
	}

	s.NeverReady("qwen", false)
	ready := stuck
	ready.ReadySince = "2026-09-11T12:26:25Z"
	wantPod(t, "lifted", s, ready)
	wantReply(t, "completion once lifted", complete(t, proxy, "hi"), "echo: hi")

	// Turning it on again does not take readiness from a model that answers.
	s.NeverReady("qwen", true)
	wantPod(t, "on again while ready", s, ready)
}

// TestNeverReadyOnLoadingWake: NeverReady applies to a wake already loading.
func TestNeverReadyOnLoadingWake(t *testing.T) {
	clk := sim.NewManualClock(t0)
	s := startSim(t, sim.Config{Clock: clk, NoStartHold: true})
	do(t, http.MethodPost, s.URL()+"/api/pods/qwen/start", "{}")
	clk.Set(t0.Add(7 * time.Minute))
	s.NeverReady("qwen", true)
	clk.Set(t0.Add(time.Hour))
	if got := s.Snapshot("qwen"); got.Status != "RUNNING" || got.ReadySince != "" {
		t.Errorf("an hour on: Snapshot = %+v, want RUNNING without readySince", got)
	}
	// Lifted after the moment it would have been ready: ready from now.
	s.NeverReady("qwen", false)
	if got, want := s.Snapshot("qwen").ReadySince, "2026-09-09T13:26:25Z"; got != want {
		t.Errorf("readySince after lifting = %q, want %q", got, want)
	}
}

func TestUnknownPod(t *testing.T) {
	s := startSim(t, sim.Config{Clock: sim.NewManualClock(t0)})
	tests := []struct {
		method, path string
	}{
		{http.MethodGet, "/api/pods/nope"},
		{http.MethodPost, "/api/pods/nope/start"},
		{http.MethodPost, "/api/pods/nope/stop"},
	}
	for _, tt := range tests {
		r := do(t, tt.method, s.URL()+tt.path, "")
		want := response{code: 404, contentType: "application/json", body: `{"error":"pod not found","lookup":"NOT_FOUND"}` + "\n"}
		if diff := cmp.Diff(want, r, cmp.AllowUnexported(response{})); diff != "" {
			t.Errorf("%s %s mismatch (-want +got):\n%s", tt.method, tt.path, diff)
		}
	}
	if got := s.StartRequests("nope"); got != 0 {
		t.Errorf("StartRequests(unknown) = %d, want 0", got)
	}
	if diff := cmp.Diff(sim.PodView{Name: "nope", Lookup: "NOT_FOUND"}, s.Snapshot("nope")); diff != "" {
		t.Errorf("Snapshot(unknown) mismatch (-want +got):\n%s", diff)
	}
	wantGone(t, "proxy of a pod id never issued", complete(t, s.URL()+"/proxy/pod-9", "hi"))
}

func TestControlsPanicOnUnknownPod(t *testing.T) {
	s := sim.New(sim.Config{})
	tests := map[string]func(){
		"ForceStartStatus":      func() { s.ForceStartStatus("nope", 409) },
		"ForceStartStatus code": func() { s.ForceStartStatus("qwen", 42) },
		"NeverReady":            func() { s.NeverReady("nope", true) },
	}
	for name, f := range tests {
		t.Run(name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Error("did not panic")
				}
			}()
			f()
		})
	}
}

func TestStop(t *testing.T) {
	clk := sim.NewManualClock(t0)
	s := startSim(t, sim.Config{Clock: clk, NoStartHold: true})
	do(t, http.MethodPost, s.URL()+"/api/pods/qwen/start", "{}")
	clk.Set(t0.Add(10 * time.Minute))
	proxy := s.URL() + "/proxy/pod-1"
	wantReply(t, "before the stop", complete(t, proxy, "hi"), "echo: hi")

	r := do(t, http.MethodPost, s.URL()+"/api/pods/qwen/stop", "")
	if r.code != http.StatusOK {
		t.Fatalf("stop: status = %d, want 200", r.code)
	}
	wantPod(t, "stopped", s, sim.PodView{
		Name: "qwen", Status: "EXITED", PodID: "pod-1", ReadySince: "2026-09-09T12:35:25Z", Lookup: "FOUND",
	})
	wantGone(t, "proxy after the stop", complete(t, proxy, "hi"))

	// A stop while creating: the pod never existed, so there is no podId.
	r = do(t, http.MethodPost, s.URL()+"/api/pods/qwen/start", "{}")
	clk.Set(t0.Add(10*time.Minute + 5*time.Second))
	do(t, http.MethodPost, s.URL()+"/api/pods/qwen/stop", "")
	clk.Set(t0.Add(time.Hour))
	wantPod(t, "stopped while creating", s, sim.PodView{Name: "qwen", Status: "EXITED", PodID: "pod-1", Lookup: "FOUND"})
}

// TestNoIdleStop: a pod that never stops itself stays up, answering, until
// a stop request; Wakes says the request ended it, and StopRequests counts
// every request, one that finds the pod asleep too.
func TestNoIdleStop(t *testing.T) {
	clk := sim.NewManualClock(t0)
	s := startSim(t, sim.Config{Clock: clk, NoStartHold: true, NoIdleStop: true})
	do(t, http.MethodPost, s.URL()+"/api/pods/qwen/start", "{}")
	clk.Set(t0.Add(10 * time.Minute))
	proxy := s.URL() + "/proxy/pod-1"
	wantReply(t, "ready", complete(t, proxy, "hi"), "echo: hi")

	clk.Set(t0.Add(24 * time.Hour)) // a day of idling: still up
	wantReply(t, "a day later", complete(t, proxy, "hi"), "echo: hi")
	if got := s.StopRequests("qwen"); got != 0 {
		t.Errorf("StopRequests before any stop = %d, want 0", got)
	}
	clk.Set(t0.Add(25 * time.Hour))
	do(t, http.MethodPost, s.URL()+"/api/pods/qwen/stop", "")
	wantGone(t, "proxy after the stop", complete(t, proxy, "hi"))
	clk.Set(t0.Add(26 * time.Hour))
	do(t, http.MethodPost, s.URL()+"/api/pods/qwen/stop", "") // asleep already: changes nothing

	want := []sim.WakeReport{{
		PodID: "pod-1", StartedAt: t0, ReadyAt: t0.Add(9 * time.Minute), EndedAt: t0.Add(25 * time.Hour), Stopped: true,
		Answered: 2, LastAnswerAt: t0.Add(24 * time.Hour), FirstAnswerAt: t0.Add(10 * time.Minute),
	}}
	if diff := cmp.Diff(want, s.Wakes("qwen"), cmpopts.IgnoreFields(sim.WakeReport{}, "FirstAnswerWall")); diff != "" {
		t.Errorf("Wakes (-want +got):\n%s", diff)
	}
	if got := s.StopRequests("qwen"); got != 2 {
		t.Errorf("StopRequests = %d, want 2", got)
	}
	if got := s.StopRequests("nope"); got != 0 {
		t.Errorf("StopRequests of an unknown pod = %d, want 0", got)
	}
}

// TestCompletionRequests covers the OpenAI request shapes the model accepts
// and refuses.
func TestCompletionRequests(t *testing.T) {
	clk := sim.NewManualClock(t0)
	s := startSim(t, sim.Config{Clock: clk, NoStartHold: true})
	do(t, http.MethodPost, s.URL()+"/api/pods/qwen/start", "{}")
	clk.Set(t0.Add(10 * time.Minute))
	url := s.URL() + "/proxy/pod-1/v1/chat/completions"

	tests := []struct {
		name     string
		body     string
		wantCode int
		want     string // the full body for 200, a substring otherwise
	}{
		{
			name:     "last message is echoed",
			body:     `{"model":"Qwen/Qwen2.5","messages":[{"role":"system","content":"be brief"},{"role":"user","content":"two words"}]}`,
			wantCode: 200,
			want: `{"id":"chatcmpl-sim-1","object":"chat.completion","created":1788957385,"model":"Qwen/Qwen2.5",` +
				`"choices":[{"index":0,"message":{"role":"assistant","content":"echo: two words"},"finish_reason":"stop"}],` +
				`"usage":{"prompt_tokens":4,"completion_tokens":3,"total_tokens":7}}` + "\n",
		},
		{
			name:     "content parts, no model: the pod name",
			body:     `{"messages":[{"role":"user","content":[{"type":"text","text":"a"},{"type":"image_url"},{"type":"text","text":"b"}]}]}`,
			wantCode: 200,
			want: `{"id":"chatcmpl-sim-2","object":"chat.completion","created":1788957385,"model":"qwen",` +
				`"choices":[{"index":0,"message":{"role":"assistant","content":"echo: a\nb"},"finish_reason":"stop"}],` +
				`"usage":{"prompt_tokens":2,"completion_tokens":3,"total_tokens":5}}` + "\n",
		},
		{name: "malformed JSON", body: `{"messages":`, wantCode: 400, want: "invalid JSON body"},
		{name: "no messages", body: `{"model":"qwen","messages":[]}`, wantCode: 400, want: "messages must not be empty"},
		{name: "bad content", body: `{"messages":[{"role":"user","content":7}]}`, wantCode: 400, want: "messages[0]"},
		{
			name:     "streaming, with usage",
			body:     `{"stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"hi"}]}`,
			wantCode: 200,
			want: `data: {"id":"chatcmpl-sim-3","object":"chat.completion.chunk","created":1788957385,"model":"qwen","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}` + "\n\n" +
				`data: {"id":"chatcmpl-sim-3","object":"chat.completion.chunk","created":1788957385,"model":"qwen","choices":[{"index":0,"delta":{"content":"echo: "},"finish_reason":null}]}` + "\n\n" +
				`data: {"id":"chatcmpl-sim-3","object":"chat.completion.chunk","created":1788957385,"model":"qwen","choices":[{"index":0,"delta":{"content":"hi"},"finish_reason":null}]}` + "\n\n" +
				`data: {"id":"chatcmpl-sim-3","object":"chat.completion.chunk","created":1788957385,"model":"qwen","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}` + "\n\n" +
				`data: {"id":"chatcmpl-sim-3","object":"chat.completion.chunk","created":1788957385,"model":"qwen","choices":[],"usage":{"prompt_tokens":1,"completion_tokens":2,"total_tokens":3}}` + "\n\n" +
				"data: [DONE]\n\n",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := do(t, http.MethodPost, url, tt.body)
			if r.code != tt.wantCode {
				t.Fatalf("status = %d, want %d (body %q)", r.code, tt.wantCode, r.body)
			}
			if tt.wantCode == 200 {
				if diff := cmp.Diff(tt.want, r.body); diff != "" {
					t.Errorf("body mismatch (-want +got):\n%s", diff)
				}
			} else if !strings.Contains(r.body, tt.want) {
				t.Errorf("body = %q, want it to contain %q", r.body, tt.want)
			}
		})
	}
	if n := s.Completions(); n != 3 {
		t.Errorf("Completions() = %d, want the 3 answered", n)
	}
}

// TestModelEndpoints: /v1/models and /health follow the same phases as
// completions, and do not count as activity.
func TestModelEndpoints(t *testing.T) {
	clk := sim.NewManualClock(t0)
	s := startSim(t, sim.Config{Clock: clk, NoStartHold: true})
	do(t, http.MethodPost, s.URL()+"/api/pods/qwen/start", "{}")
	proxy := s.URL() + "/proxy/pod-1"

	clk.Set(t0.Add(7 * time.Minute))
	wantLoading(t, "models while loading", do(t, http.MethodGet, proxy+"/v1/models", ""))
	wantLoading(t, "health while loading", do(t, http.MethodGet, proxy+"/health", ""))
	wantLoading(t, "other path while loading", do(t, http.MethodGet, proxy+"/metrics", ""))

	clk.Set(t0.Add(9 * time.Minute))
	r := do(t, http.MethodGet, proxy+"/v1/models", "")
	want := `{"object":"list","data":[{"id":"qwen","object":"model","created":1788957325,"owned_by":"vllm","root":"qwen"}]}` + "\n"
	if r.code != 200 || r.body != want {
		t.Errorf("models when ready: got %d %q, want 200 %q", r.code, r.body, want)
	}
	if r := do(t, http.MethodGet, proxy+"/health", ""); r.code != 200 || r.body != "" {
		t.Errorf("health when ready: got %d %q, want 200 with an empty body", r.code, r.body)
	}
	if r := do(t, http.MethodGet, proxy+"/metrics", ""); r.code != 404 || !strings.Contains(r.body, "Not Found") {
		t.Errorf("unknown path when ready: got %d %q, want vLLM's 404", r.code, r.body)
	}

	// Neither models nor health kept the pod up: it stops 15m after ready.
	clk.Set(t0.Add(24 * time.Minute))
	wantGone(t, "models after the idle stop", do(t, http.MethodGet, proxy+"/v1/models", ""))
}

// TestPods: several pods wake independently, with pod ids counted across them.
func TestPods(t *testing.T) {
	clk := sim.NewManualClock(t0)
	s := startSim(t, sim.Config{Clock: clk, NoStartHold: true, Pods: []string{"qwen", "llama", "qwen"}})
	do(t, http.MethodPost, s.URL()+"/api/pods/llama/start", "{}")
	clk.Set(t0.Add(time.Minute))
	do(t, http.MethodPost, s.URL()+"/api/pods/qwen/start", "{}")
	clk.Set(t0.Add(9*time.Minute + 30*time.Second)) // llama ready, qwen still loading

	wantPod(t, "llama", s, sim.PodView{
		Name: "llama", Status: "RUNNING", IsRunning: true, ProxyURL: s.URL() + "/proxy/pod-1", PodID: "pod-1",
		ReadySince: "2026-09-09T12:35:25Z", Lookup: "FOUND",
	})
	wantPod(t, "qwen", s, sim.PodView{
		Name: "qwen", Status: "RUNNING", IsRunning: true, ProxyURL: s.URL() + "/proxy/pod-2", PodID: "pod-2",
		Lookup: "FOUND",
	})
	if got := []int{s.StartRequests("qwen"), s.StartRequests("llama")}; !cmp.Equal(got, []int{1, 1}) {
		t.Errorf("StartRequests(qwen, llama) = %v, want [1 1]", got)
	}
}

// TestHandlerWithoutStart: served by someone else's server, proxy URLs follow
// the request's host.
func TestHandlerWithoutStart(t *testing.T) {
	clk := sim.NewManualClock(t0)
	s := sim.New(sim.Config{Clock: clk, NoStartHold: true})
	t.Cleanup(func() { s.Close() })
	if got := s.URL(); got != "" {
		t.Errorf("URL before Start = %q, want empty", got)
	}
	srv := newHTTPTestServer(t, s.Handler())
	do(t, http.MethodPost, srv+"/api/pods/qwen/start", "{}")
	clk.Set(t0.Add(9 * time.Minute))
	r := do(t, http.MethodGet, srv+"/api/pods/qwen", "")
	if !strings.Contains(r.body, `"proxyUrl":"`+srv+`/proxy/pod-1"`) {
		t.Errorf("GET body %q: want proxyUrl under %s", r.body, srv)
	}
	if got, want := s.Snapshot("qwen").ProxyURL, "/proxy/pod-1"; got != want {
		t.Errorf("Snapshot proxyUrl without Start = %q, want %q", got, want)
	}
	wantReply(t, "completion through the test server", complete(t, srv+"/proxy/pod-1", "hi"), "echo: hi")
}
