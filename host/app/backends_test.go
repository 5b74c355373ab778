package app_test

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	openaisdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/wakeonchat/wakeonchat/host/app"
	"github.com/wakeonchat/wakeonchat/host/internal/e2e"
	"github.com/wakeonchat/wakeonchat/host/internal/fakeclock"
	"github.com/wakeonchat/wakeonchat/host/sim"
	"github.com/wakeonchat/wakeonchat/plugins/runpod/runpodfake"
)

// TestTwoBackends runs one host with two pods on two kinds of GPU backend:
// qwen on the conductor (the simulator), gpu on RunPod (runpodfake, the
// RunPod plugin built into wakehost, the model behind its proxy URL the
// simulator's). They wake, wait and report independently: RunPod twice
// refuses gpu's start (the machine has no free GPU, then the key is
// rejected), and qwen's replies are the ones a lone qwen gets; then both
// are ready and answer, and GET /api/pods/{name} reports each from its own
// backend.
func TestTwoBackends(t *testing.T) {
	t.Parallel()
	clk := fakeclock.New(t0)

	// The simulator is the conductor of qwen and, for the pod "model",
	// the model behind gpu's RunPod proxy URL: woken here, before the
	// host starts, and never idle-stopped, it answers throughout.
	s := sim.New(sim.Config{Pods: []string{"qwen", "model"}, Clock: clk, IdleStop: 24 * time.Hour})
	conductorURL := serveSim(t, s, s.Handler())
	started := make(chan error, 1)
	go func() {
		resp, err := http.Post(conductorURL+"/api/pods/model/start", "application/json", strings.NewReader("{}"))
		if err == nil {
			resp.Body.Close()
		}
		started <- err
	}()
	e2e.WaitCount(t, `StartRequests("model")`, 1, func() int { return s.StartRequests("model") }, waitFor)
	clk.Advance(10 * time.Minute) // past boot and load
	if err := <-started; err != nil {
		t.Fatal(err)
	}
	proxy := s.Snapshot("model").ProxyURL // "/proxy/{podId}": the simulator serves no URL of its own
	if proxy == "" {
		t.Fatal("the simulator's model pod is not running")
	}
	modelURL := conductorURL + proxy
	base := clk.Now()

	const key = "rpa_test_key_0123456789"
	fake := runpodfake.New(key)
	fake.AddPod("rp7xq2", runpodfake.Exited)
	api := httptest.NewServer(fake)
	t.Cleanup(api.Close)
	fake.Fail(runpodfake.Start, "rp7xq2", runpodfake.NoFreeGPU())
	fake.Fail(runpodfake.Start, "rp7xq2", runpodfake.Problem(http.StatusUnauthorized, "invalid api key"))

	dir := t.TempDir()
	path := filepath.Join(dir, "wake.toml")
	toml := fmt.Sprintf(`[server]
listen = "127.0.0.1:0"
data_dir = %q

[conductor]
url = %q
start_timeout = "200ms"

[[backends]]
name = "runpod"
kind = "runpod"
api_key_env = "RUNPOD_TEST_KEY"
url = %q
proxy_url = %q
pods = { gpu = "rp7xq2" }
stop_after_idle = "0s" # the test's clock runs past 15 idle minutes; the idle stop has its own tests

[[providers]]
name = "qwen"
pod = "qwen"
model = "qwen"
api_key_env = ""

[[providers]]
name = "gpu"
pod = "gpu"
backend = "runpod"
model = "qwen"
api_key_env = ""
`, filepath.Join(dir, "data"), conductorURL, api.URL+"/v2", modelURL)
	if err := os.WriteFile(path, []byte(toml), 0o644); err != nil {
		t.Fatal(err)
	}
	logs := &e2e.Log{}
	env := map[string]string{"RUNPOD_TEST_KEY": key}
	eh := e2e.Start(t, app.Options{
		ConfigPath: path, Logger: logs.Logger(slog.LevelDebug), Getenv: func(k string) string { return env[k] },
		Clock: clk, PluginDir: binDir, Executable: filepath.Join(binDir, e2e.WakehostBin),
	}, logs, nil)
	h := &testHost{Host: eh, clock: clk, log: logs}
	c := openaisdk.NewClient(option.WithBaseURL(h.Base+"/v1/"), option.WithAPIKey("sk-client"), option.WithMaxRetries(0), option.WithHTTPClient(h.Client))
	ask := func(model, text string) string {
		t.Helper()
		got, _ := askSDK(t, c, openaisdk.ChatCompletionNewParams{
			Model: model, Messages: []openaisdk.ChatCompletionMessageParamUnion{openaisdk.UserMessage(text)},
		})
		return got
	}

	// Asleep, each as its own backend says.
	for _, pod := range []string{"qwen", "gpu"} {
		if p := podOf(t, h, pod); p.State != "asleep" || p.Status != "EXITED" || p.Ready {
			t.Errorf("GET /api/pods/%s before any ask: %+v, want asleep, EXITED, not ready", pod, p)
		}
	}

	// Minute 0: both wake. RunPod refuses gpu's start: no free GPU.
	var qwenReplies, gpuReplies []string
	qwenReplies = append(qwenReplies, ask("qwen", "hello qwen"))
	gpuReplies = append(gpuReplies, ask("gpu", "hello gpu"))
	h.waitPodState(t, "gpu", "refused")
	if p := podOf(t, h, "qwen"); p.State != "waking" {
		t.Errorf("GET /api/pods/qwen while gpu was refused: state %q, want waking", p.State)
	}

	// Minute 1: gpu wakes again, and RunPod rejects the key: the line
	// names the key's variable, not RIG_WAKE_TOKEN.
	stepTo(t, clk, base.Add(time.Minute), 5*time.Second)
	qwenReplies = append(qwenReplies, ask("qwen", "still there?"))
	gpuReplies = append(gpuReplies, ask("gpu", "and you?"))
	h.waitPodState(t, "gpu", "refused") // the ask made it waking: this is the second refusal

	// Minute 2: the third start goes through; RunPod boots the pod, the
	// host's watch finds it RUNNING and its model answering.
	stepTo(t, clk, base.Add(2*time.Minute), 5*time.Second)
	qwenReplies = append(qwenReplies, ask("qwen", "now?"))
	gpuReplies = append(gpuReplies, ask("gpu", "now?"))
	h.stepUntilPodState(t, "gpu", "ready", 5*time.Second)

	want := []string{e2e.ReplyWaking, e2e.ReplyStillWaking(1), e2e.ReplyStillWaking(2)}
	if diff := cmp.Diff(want, qwenReplies); diff != "" {
		t.Errorf("qwen's replies while gpu was refused (-want +got):\n%s", diff)
	}
	want = []string{e2e.ReplyWaking, e2e.ReplyRefusedBy("RunPod", 400), e2e.ReplyRefusedBy("RunPod", 401)}
	if diff := cmp.Diff(want, gpuReplies); diff != "" {
		t.Errorf("gpu's replies (-want +got):\n%s", diff)
	}
	if got := ask("gpu", "ready at last"); !strings.Contains(got, "ready at last") {
		t.Errorf("gpu once ready: %q, want the model's echo", got)
	}
	if p := podOf(t, h, "qwen"); p.State != "waking" && p.State != "loading" {
		t.Errorf("GET /api/pods/qwen while gpu is ready: state %q, want it still waking", p.State)
	}

	// qwen is ready on its own schedule, 9 minutes after its wake.
	h.stepUntilPodState(t, "qwen", "ready", 5*time.Second)
	if got := ask("qwen", "and now qwen"); !strings.Contains(got, "and now qwen") {
		t.Errorf("qwen once ready: %q, want the model's echo", got)
	}
	for _, pod := range []string{"qwen", "gpu"} {
		if p := podOf(t, h, pod); p.State != "ready" || p.Status != "RUNNING" || !p.IsRunning || !p.Ready {
			t.Errorf("GET /api/pods/%s at the end: %+v, want ready and RUNNING", pod, p)
		}
	}

	// One start per wake on each backend, nothing of one on the other.
	if n := s.StartRequests("qwen"); n != 1 {
		t.Errorf("the conductor got %d starts of qwen, want 1", n)
	}
	if n := s.StartRequests("gpu"); n != 0 {
		t.Errorf("the conductor got %d starts of gpu, RunPod's pod, want 0", n)
	}
	starts := 0
	for _, r := range fake.Requests() {
		if r.Method == http.MethodPost {
			starts++
		}
		if !strings.HasPrefix(r.Path, "/v2/pods/rp7xq2") {
			t.Errorf("RunPod got %s %s: only gpu's pod, rp7xq2, is on RunPod", r.Method, r.Path)
		}
	}
	if starts != 3 {
		t.Errorf("RunPod got %d starts, want 3 (two refused, one accepted)", starts)
	}
	// The refusals' lines, once the host has stopped and its log is
	// whole: a 401 names the key's variable, not RIG_WAKE_TOKEN.
	h.stop(t)
	if got := len(h.log.Matching(t, "wake refused for pod gpu: status=400")); got != 1 {
		t.Errorf("%d lines of the no-free-GPU refusal, want 1", got)
	}
	lines := h.log.Matching(t, "wake refused for pod gpu: status=401")
	if len(lines) != 1 || !strings.Contains(lines[0].Msg, "RUNPOD_TEST_KEY") || strings.Contains(lines[0].Msg, "RIG_WAKE_TOKEN") {
		t.Errorf("refused lines %v: want one, naming RUNPOD_TEST_KEY and not RIG_WAKE_TOKEN", lines)
	}
	h.log.CheckNoSecrets(t, key)
}

// podOf reads GET /api/pods/{pod}, which must answer 200.
func podOf(t *testing.T, h *testHost, pod string) podReport {
	t.Helper()
	status, raw := h.do(t, http.MethodGet, "/api/pods/"+pod, nil)
	if status != http.StatusOK {
		t.Fatalf("GET /api/pods/%s: status %d, want 200; body %s", pod, status, raw)
	}
	var p podReport
	if err := json.Unmarshal([]byte(raw), &p); err != nil {
		t.Fatalf("GET /api/pods/%s: %v\n%s", pod, err, raw)
	}
	return p
}
