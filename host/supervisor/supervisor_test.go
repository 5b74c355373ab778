package supervisor_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/wakeonchat/wakeonchat/host/supervisor"
	"github.com/wakeonchat/wakeonchat/plugins/pluginapi"
)

const hostSecret = "host-secret-that-must-not-leak"

// testSpec is the test plugin's Spec. Its tests crash it again and again:
// it is relaunched on the quick schedule (supervisor.QuickRelaunch), 10 ms
// after its first exit of a streak rather than 100.
func testSpec(t *testing.T, logs *recorder) supervisor.Spec {
	t.Helper()
	spec := supervisor.QuickRelaunch(supervisor.Spec{
		Name:    "test",
		Path:    testBin,
		Env:     []string{"TESTPLUGIN_DIR=" + t.TempDir(), "TESTPLUGIN_SECRET=" + hostSecret},
		Secrets: []string{hostSecret},
	})
	if logs != nil {
		spec.Logger = slog.New(logs)
	}
	return spec
}

// The plugin sees Spec.Env and go-plugin's handshake variables, nothing
// of the host's environment. Not parallel: it sets a variable of the
// test's own environment.
func TestEnvironmentIsExplicit(t *testing.T) {
	t.Setenv("WAKE_TEST_UNRELATED_SECRET", "do-not-inherit")
	gpu := startGPU(t, testSpec(t, nil))

	pod, err := gpu.GetPod(context.Background(), "env")
	if err != nil {
		t.Fatalf("GetPod: %v", err)
	}
	want := []string{
		"PLUGIN_CLIENT_CERT", "PLUGIN_MAX_PORT", "PLUGIN_MIN_PORT", "PLUGIN_PROTOCOL_VERSIONS",
		"TESTPLUGIN_DIR", "TESTPLUGIN_SECRET", pluginapi.EnvLogLevel, pluginapi.Handshake.MagicCookieKey,
	}
	if diff := cmp.Diff(want, strings.Split(pod.Status, ",")); diff != "" {
		t.Errorf("the plugin's environment (-want +got):\n%s", diff)
	}
}

// Spec.Args reach the plugin (wakehost's built-in plugins are selected by
// them), on its first launch and on a relaunch alike; none are given when
// Spec has none.
func TestArgsReachThePlugin(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name string
		args []string
		want string
	}{
		{"none", nil, ""},
		{"built-in", []string{"plugin", "wake-plugin-conductor"}, "plugin wake-plugin-conductor"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			spec := testSpec(t, nil)
			spec.Args = tt.args
			gpu := startGPU(t, spec)
			for launch := range 2 {
				if launch > 0 {
					first := pid(t, gpu)
					if err := syscall.Kill(first, syscall.SIGKILL); err != nil {
						t.Fatal(err)
					}
					if second := pid(t, gpu); second == first {
						t.Fatalf("pid %d after the kill, want a new process", second)
					}
				}
				pod, err := gpu.GetPod(context.Background(), "args")
				if err != nil {
					t.Fatalf("launch %d: GetPod: %v", launch, err)
				}
				if pod.Status != tt.want {
					t.Errorf("launch %d: the plugin's arguments %q, want %q", launch, pod.Status, tt.want)
				}
			}
		})
	}
}

// The plugin is told the lowest level the host's logger keeps, so that it
// writes no line the host would drop.
func TestPluginLogLevelFollowsTheHost(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		level slog.Level
		want  string
	}{
		{slog.LevelDebug, "debug"},
		{slog.LevelInfo, "info"},
		{slog.LevelError, "error"},
	} {
		t.Run(tt.want, func(t *testing.T) {
			spec := testSpec(t, nil)
			spec.Logger = slog.New(slog.NewTextHandler(io.Discard, &slog.HandlerOptions{Level: tt.level}))
			pod, err := startGPU(t, spec).GetPod(context.Background(), "loglevel")
			if err != nil {
				t.Fatalf("GetPod: %v", err)
			}
			if pod.Status != tt.want {
				t.Errorf("%s = %q, want %q", pluginapi.EnvLogLevel, pod.Status, tt.want)
			}
		})
	}
}

func TestLifecycle(t *testing.T) {
	t.Parallel()
	gpu := supervisor.NewGPU(testSpec(t, nil))
	if gpu.Ready() {
		t.Error("Ready before Start")
	}
	if err := gpu.Start(context.Background()); err != nil {
		t.Fatalf("Start: %v", err)
	}
	if !gpu.Ready() {
		t.Error("not Ready after Start")
	}
	if err := gpu.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if gpu.Ready() {
		t.Error("Ready after Close")
	}
	if _, err := gpu.GetPod(context.Background(), "qwen"); !errors.Is(err, supervisor.ErrClosed) {
		t.Errorf("GetPod after Close: %v, want ErrClosed", err)
	}
	r, err := gpu.StartPod(context.Background(), "qwen")
	if diff := cmp.Diff(pluginapi.StartResult{Error: "plugin closed"}, r); diff != "" || err != nil {
		t.Errorf("StartPod after Close: err %v, result (-want +got):\n%s", err, diff)
	}
}

// A call before Start launches the plugin.
func TestFirstCallLaunches(t *testing.T) {
	t.Parallel()
	gpu := supervisor.NewGPU(testSpec(t, nil))
	t.Cleanup(func() { _ = gpu.Close() })
	if _, err := gpu.GetPod(context.Background(), "qwen"); err != nil {
		t.Fatalf("GetPod: %v", err)
	}
	if !gpu.Ready() {
		t.Error("not Ready after the first call")
	}
}

func TestLaunchFailures(t *testing.T) {
	t.Parallel()
	missing := t.TempDir() + "/no-such-plugin"
	tests := []struct {
		name     string
		path     string
		env      []string
		wantText []string
		wantIs   error
	}{
		{name: "missing binary", path: missing, wantText: []string{missing}, wantIs: fs.ErrNotExist},
		{name: "not executable", path: "supervisor_test.go", wantText: []string{"supervisor_test.go", "not an executable"}},
		{name: "garbage instead of the handshake", path: garbageBin, wantText: []string{garbageBin, "handshake", `printed "hello, I am not a plugin" instead`}},
		{name: "plugin exits at start (no conductor url)", path: conductorBin, wantText: []string{conductorBin, "handshake", "printed no handshake line"}},
		{name: "bad env entry", path: testBin, env: []string{"NO_EQUALS_SIGN"}, wantText: []string{"env entry 0"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			logs := newRecorder()
			spec := supervisor.Spec{Name: "x", Path: tt.path, Env: tt.env, Logger: slog.New(logs)}
			gpu := supervisor.NewGPU(spec)
			t.Cleanup(func() { _ = gpu.Close() })

			err := gpu.Start(context.Background())
			if err == nil {
				t.Fatal("Start succeeded")
			}
			for _, s := range tt.wantText {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q does not contain %q", err, s)
				}
			}
			if tt.wantIs != nil && !errors.Is(err, tt.wantIs) {
				t.Errorf("error %v is not %v", err, tt.wantIs)
			}
			if gpu.Ready() {
				t.Error("Ready after a failed Start")
			}
			// Calls report the failure as their kind of outcome.
			if _, err := gpu.GetPod(context.Background(), "qwen"); err == nil {
				t.Error("GetPod succeeded")
			}
			r, err := gpu.StartPod(context.Background(), "qwen")
			if diff := cmp.Diff(pluginapi.StartResult{Error: "plugin unavailable"}, r); diff != "" || err != nil {
				t.Errorf("StartPod: err %v, result (-want +got):\n%s", err, diff)
			}

			provider := supervisor.NewProvider(spec)
			t.Cleanup(func() { _ = provider.Close() })
			_, err = provider.Complete(context.Background(), "http://model/v1", pluginapi.CompletionRequest{})
			var ce *pluginapi.CompletionError
			if !errors.As(err, &ce) {
				t.Fatalf("Complete: error %v (%T) is not a *CompletionError", err, err)
			}
			if diff := cmp.Diff(&pluginapi.CompletionError{Message: "provider plugin unavailable"}, ce); diff != "" {
				t.Errorf("Complete (-want +got):\n%s", diff)
			}
		})
	}
}

// A plugin that dies mid-GetPod is relaunched and GetPod retried once.
func TestGetPodCrashIsRetriedOnce(t *testing.T) {
	t.Parallel()
	logs := newRecorder()
	gpu := startGPU(t, testSpec(t, logs))
	ctx := context.Background()

	pod, err := gpu.GetPod(ctx, "crash-once")
	if err != nil {
		t.Fatalf("GetPod(crash-once): %v", err)
	}
	want := pluginapi.Pod{Name: "crash-once", Status: "RUNNING", IsRunning: true, Lookup: pluginapi.LookupFound}
	if diff := cmp.Diff(want, pod); diff != "" {
		t.Errorf("the retried GetPod (-want +got):\n%s", diff)
	}
	if n := len(logs.find("plugin crashed during a call")); n != 1 {
		t.Errorf("%d crash records, want 1", n)
	}

	_, err = gpu.GetPod(ctx, "crash")
	if err == nil || !strings.Contains(err.Error(), "crashed twice") {
		t.Fatalf("GetPod(crash): %v, want an error saying it crashed twice", err)
	}

	// The next call works after the relaunch.
	if _, err := gpu.GetPod(ctx, "qwen"); err != nil {
		t.Fatalf("GetPod after the crashes: %v", err)
	}
	if !gpu.Ready() {
		t.Error("not Ready after the relaunch")
	}
}

// A plugin killed between calls is noticed on the next call, which gets
// the retried result from a new process.
func TestKilledPluginIsRelaunched(t *testing.T) {
	t.Parallel()
	gpu := startGPU(t, testSpec(t, nil))
	ctx := context.Background()
	first := pid(t, gpu)

	if err := syscall.Kill(first, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	second := pid(t, gpu)
	if second == first {
		t.Errorf("pid %d after the kill, want a new process", second)
	}
	if _, err := gpu.GetPod(ctx, "qwen"); err != nil {
		t.Errorf("GetPod: %v", err)
	}
}

// A plugin killed while idle is relaunched with no call: Ready turns
// false, then true again within a second, and the relaunch is logged.
func TestIdlePluginIsRelaunched(t *testing.T) {
	t.Parallel()
	logs := newRecorder()
	gpu := startGPU(t, testSpec(t, logs))
	first := pid(t, gpu)
	if err := syscall.Kill(first, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	awaitReady(t, gpu, false)
	awaitReady(t, gpu, true)
	if n := len(logs.await(t, "plugin relaunched")); n != 1 {
		t.Errorf("%d \"plugin relaunched\" records, want 1", n)
	}
	if second := pid(t, gpu); second == first {
		t.Errorf("pid %d after the relaunch, want a new process", second)
	}
}

// awaitReady polls Ready (the plugin is another process) until it is want,
// and fails the test after a second.
func awaitReady(t *testing.T, gpu *supervisor.GPU, want bool) {
	t.Helper()
	deadline := time.Now().Add(time.Second)
	for gpu.Ready() != want {
		if time.Now().After(deadline) {
			t.Fatalf("Ready still %v after 1s", !want)
		}
		time.Sleep(time.Millisecond)
	}
}

// Concurrent callers that meet a dead plugin share one relaunch.
func TestConcurrentCallersShareOneRelaunch(t *testing.T) {
	t.Parallel()
	gpu := startGPU(t, testSpec(t, nil))
	if err := syscall.Kill(pid(t, gpu), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}

	const callers = 8
	pids := make(chan string, callers)
	var wg sync.WaitGroup
	for range callers {
		wg.Go(func() {
			pod, err := gpu.GetPod(context.Background(), "pid")
			if err != nil {
				t.Errorf("GetPod: %v", err)
				return
			}
			pids <- pod.PodID
		})
	}
	wg.Wait()
	close(pids)
	seen := map[string]bool{}
	for p := range pids {
		seen[p] = true
	}
	if len(seen) != 1 {
		t.Errorf("callers saw %d processes %v, want one relaunch", len(seen), seen)
	}
}

func pid(t *testing.T, gpu *supervisor.GPU) int {
	t.Helper()
	pod, err := gpu.GetPod(context.Background(), "pid")
	if err != nil {
		t.Fatalf("GetPod(pid): %v", err)
	}
	var n int
	for _, c := range pod.PodID {
		n = n*10 + int(c-'0')
	}
	return n
}

// StartPod and StopPod are never retried: a crash during the call is an
// unknown outcome (the request may have gone out), and the next call
// relaunches the plugin.
func TestStartStopCrashIsAnOutcome(t *testing.T) {
	t.Parallel()
	gpu := startGPU(t, testSpec(t, nil))
	ctx := context.Background()
	for _, call := range []struct {
		name string
		fn   func(context.Context, string) (pluginapi.StartResult, error)
	}{{"StartPod", gpu.StartPod}, {"StopPod", gpu.StopPod}} {
		r, err := call.fn(ctx, "crash")
		if !errors.Is(err, supervisor.ErrCrashedDuringCall) {
			t.Fatalf("%s(crash): error %v, want ErrCrashedDuringCall", call.name, err)
		}
		if diff := cmp.Diff(pluginapi.StartResult{}, r); diff != "" {
			t.Errorf("%s(crash) (-want +got):\n%s", call.name, diff)
		}
		r, err = call.fn(ctx, "qwen")
		if err != nil {
			t.Fatalf("%s after the crash: %v", call.name, err)
		}
		if diff := cmp.Diff(pluginapi.StartResult{Requested: true, Status: 202}, r); diff != "" {
			t.Errorf("%s after the crash (-want +got):\n%s", call.name, diff)
		}
	}
	// A plugin that fails StartPod breaks the contract; still an outcome.
	r, err := gpu.StartPod(ctx, "broken")
	if diff := cmp.Diff(pluginapi.StartResult{Error: "plugin error"}, r); diff != "" || err != nil {
		t.Errorf("StartPod(broken): err %v, result (-want +got):\n%s", err, diff)
	}
}

// Complete is never retried: a crash is a plain provider failure.
func TestCompleteCrash(t *testing.T) {
	t.Parallel()
	provider := startProvider(t, testSpec(t, nil))
	ctx := context.Background()
	msgs := []pluginapi.Message{{Role: "user", Content: "hi"}}

	_, err := provider.Complete(ctx, "http://model/v1", pluginapi.CompletionRequest{Model: "crash", Messages: msgs})
	var ce *pluginapi.CompletionError
	if !errors.As(err, &ce) {
		t.Fatalf("error %v (%T) is not a *CompletionError", err, err)
	}
	if diff := cmp.Diff(&pluginapi.CompletionError{Message: "provider plugin crashed"}, ce); diff != "" {
		t.Errorf("Complete(crash) (-want +got):\n%s", diff)
	}

	got, err := provider.Complete(ctx, "http://model/v1", pluginapi.CompletionRequest{Model: "m", Messages: msgs})
	if err != nil {
		t.Fatalf("Complete after the crash: %v", err)
	}
	if diff := cmp.Diff("echo: hi", got); diff != "" {
		t.Errorf("Complete after the crash (-want +got):\n%s", diff)
	}

	// A classified failure passes through unchanged.
	_, err = provider.Complete(ctx, "http://model/v1", pluginapi.CompletionRequest{Model: "m"})
	if !errors.As(err, &ce) {
		t.Fatalf("error %v (%T) is not a *CompletionError", err, err)
	}
	if diff := cmp.Diff(&pluginapi.CompletionError{Status: 400, Message: "HTTP 400: no messages"}, ce); diff != "" {
		t.Errorf("Complete(no messages) (-want +got):\n%s", diff)
	}
}

// The caller's deadline reaches the plugin; a hang is not a crash.
func TestHangingCallHonoursDeadline(t *testing.T) {
	t.Parallel()
	gpu := startGPU(t, testSpec(t, nil))
	before := pid(t, gpu)
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()

	began := time.Now()
	_, err := gpu.GetPod(ctx, "hang")
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("GetPod(hang): %v, want context.DeadlineExceeded", err)
	}
	if took := time.Since(began); took > 2*time.Second {
		t.Errorf("GetPod(hang) took %v", took)
	}
	if after := pid(t, gpu); after != before {
		t.Errorf("the plugin was relaunched (%d -> %d) after a hang", before, after)
	}
}

// The plugin's stderr lines reach the slog handler at their own level,
// with secrets scrubbed from the message and from attributes; secrets are
// scrubbed from returned errors too.
func TestPluginLogsAreForwardedAndScrubbed(t *testing.T) {
	t.Parallel()
	logs := newRecorder()
	gpu := startGPU(t, testSpec(t, logs))

	if _, err := gpu.GetPod(context.Background(), "log"); err != nil {
		t.Fatalf("GetPod(log): %v", err)
	}
	recs := logs.await(t, "the secret is [redacted]")
	if len(recs) != 1 {
		t.Fatalf("%d forwarded records, want 1; all: %v", len(recs), logs.all())
	}
	got := recs[0]
	if got.Level != slog.LevelWarn {
		t.Errorf("level %v, want %v", got.Level, slog.LevelWarn)
	}
	wantAttrs := map[string]any{
		"secret": "[redacted]",
		"nested": map[string]any{"list": []any{"x", "[redacted]"}},
		"count":  float64(3),
	}
	for k, want := range wantAttrs {
		if diff := cmp.Diff(want, got.Attrs[k]); diff != "" {
			t.Errorf("attr %s (-want +got):\n%s", k, diff)
		}
	}
	for _, rec := range logs.all() {
		if s := strings.Join([]string{rec.Message, fmt.Sprint(rec.Attrs)}, " "); strings.Contains(s, hostSecret) {
			t.Errorf("a record carries the secret: %s", s)
		}
	}

	_, err := gpu.GetPod(context.Background(), "fail")
	var le *pluginapi.LookupError
	if !errors.As(err, &le) {
		t.Fatalf("error %v (%T) is not a *LookupError", err, err)
	}
	if diff := cmp.Diff(&pluginapi.LookupError{Status: 500, Message: "failed with [redacted]"}, le); diff != "" {
		t.Errorf("GetPod(fail) (-want +got):\n%s", diff)
	}
}
