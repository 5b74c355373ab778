//go:build unix

package command_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"

	"github.com/wakeonchat/wakeonchat/plugins/command"
	"github.com/wakeonchat/wakeonchat/plugins/pluginapi"
	"github.com/wakeonchat/wakeonchat/plugins/pluginapi/plugintest"
)

// backend is a real local "GPU": shell scripts that start a model server
// (this test binary in its serve mode) in the background with a pid file,
// read its state from the pid file, and stop it, one server per pod under
// STATE_DIR. It is the shape of an operator's own scripts.
type backend struct {
	stateDir string
	env      map[string]string // the plugin's environment
}

func newBackend(t *testing.T) *backend {
	t.Helper()
	b := &backend{stateDir: t.TempDir()}
	// STATE_DIR reaches the scripts only because WAKE_COMMAND_PASS_ENV
	// names it; HOME, which the plugin has too, must not.
	start := script(t, `d="$STATE_DIR/$1"
mkdir -p "$d"
exec "`+testBin+`" `+helperArg+` start "$d"`)
	status := script(t, `d="$STATE_DIR/$1"
[ -z "$HOME" ] || { echo '{"status":"HOME-LEAKED"}'; exit 0; }
if [ -e "$d/pid" ] && kill -0 "$(cat "$d/pid")" 2>/dev/null; then
	printf '{"status":"running","url":"http://%s/v1"}\n' "$(cat "$d/addr")"
else
	echo '{"status":"exited"}'
fi`)
	stop := script(t, `d="$STATE_DIR/$1"
[ -e "$d/pid" ] || exit 0
exec "`+testBin+`" `+helperArg+` stop "$d"`)
	argv := func(path string) string {
		j, _ := json.Marshal([]string{path, "{pod}"})
		return string(j)
	}
	b.env = map[string]string{
		command.EnvStart:   argv(start),
		command.EnvStatus:  argv(status),
		command.EnvStop:    argv(stop),
		command.EnvPassEnv: "STATE_DIR",
		"PATH":             "/usr/bin:/bin",
		"STATE_DIR":        b.stateDir,
		"HOME":             "/root",
	}
	t.Cleanup(func() { b.kill(t) })
	return b
}

// kill stops any server a failed test left running.
func (b *backend) kill(t *testing.T) {
	pids, _ := filepath.Glob(filepath.Join(b.stateDir, "*", "pid"))
	for _, p := range pids {
		if raw, err := os.ReadFile(p); err == nil {
			if pid, err := strconv.Atoi(string(raw)); err == nil {
				t.Logf("killing the server of %s, left running", p)
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	}
}

// lifecycle drives gpu through a real wake and stop of pod: down, start,
// up with a URL at which the model answers, stop, down, and a URL that no
// longer answers.
func lifecycle(t *testing.T, gpu pluginapi.GPU, pod string) {
	t.Helper()
	ctx := context.Background()
	exited := pluginapi.Pod{Name: pod, Status: "EXITED", Lookup: pluginapi.LookupFound}

	got, err := gpu.GetPod(ctx, pod)
	if err != nil {
		t.Fatalf("GetPod before the start: %v", err)
	}
	if diff := cmp.Diff(exited, got); diff != "" {
		t.Fatalf("pod before the start (-want +got):\n%s", diff)
	}

	res, err := gpu.StartPod(ctx, pod)
	if err != nil || !cmp.Equal(pluginapi.StartResult{Requested: true}, res) {
		t.Fatalf("StartPod = %+v, %v; want Requested", res, err)
	}

	got, err = gpu.GetPod(ctx, pod)
	if err != nil {
		t.Fatalf("GetPod after the start: %v", err)
	}
	want := pluginapi.Pod{Name: pod, Status: "RUNNING", IsRunning: true, Lookup: pluginapi.LookupFound}
	if diff := cmp.Diff(want, got, cmpopts.IgnoreFields(pluginapi.Pod{}, "ProxyURL")); diff != "" {
		t.Fatalf("pod after the start (-want +got):\n%s", diff)
	}
	if !strings.HasPrefix(got.ProxyURL, "http://127.0.0.1:") || !strings.HasSuffix(got.ProxyURL, "/v1") {
		t.Fatalf("ProxyURL = %q, want the server's http://127.0.0.1:PORT/v1", got.ProxyURL)
	}
	url := got.ProxyURL
	resp, err := http.Get(url + "/models")
	if err != nil {
		t.Fatalf("the model at the pod's URL does not answer: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), `"id":"qwen"`) {
		t.Fatalf("GET /v1/models = %d %s", resp.StatusCode, body)
	}

	res, err = gpu.StopPod(ctx, pod)
	if err != nil || !cmp.Equal(pluginapi.StartResult{Requested: true}, res) {
		t.Fatalf("StopPod = %+v, %v; want Requested", res, err)
	}
	got, err = gpu.GetPod(ctx, pod)
	if err != nil {
		t.Fatalf("GetPod after the stop: %v", err)
	}
	if diff := cmp.Diff(exited, got); diff != "" {
		t.Fatalf("pod after the stop (-want +got):\n%s", diff)
	}
	// The stop script returns once the server has exited, which it does
	// after closing its listener.
	if resp, err := http.Get(url + "/models"); err == nil {
		_ = resp.Body.Close()
		t.Fatalf("the stopped server still answers: %d", resp.StatusCode)
	}

	res, err = gpu.StopPod(ctx, pod)
	if err != nil || !cmp.Equal(pluginapi.StartResult{Requested: true}, res) {
		t.Fatalf("a second StopPod = %+v, %v; want Requested (nothing to stop)", res, err)
	}
}

// The Runner over real gRPC in this process, configured by FromEnv:
// status, start and stop are real process operations on a local server.
func TestEndToEndOverGRPC(t *testing.T) {
	t.Parallel()
	b := newBackend(t)
	cfg, err := command.FromEnv(plugintest.Env(b.env).Getenv)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Logger = hclog.NewNullLogger()
	runner := newRunner(t, cfg)
	client, _ := plugin.TestPluginGRPCConn(t, false, map[string]plugin.Plugin{
		pluginapi.KindGPU: &pluginapi.GPUPlugin{Impl: runner},
	})
	t.Cleanup(func() { _ = client.Close() })
	raw, err := client.Dispense(pluginapi.KindGPU)
	if err != nil {
		t.Fatal(err)
	}
	gpu := raw.(pluginapi.GPU)
	lifecycle(t, gpu, "qwen")
	lifecycle(t, gpu, "llama-2") // another pod, another server, with the same commands
}

// The wake-plugin-command binary, launched the way the host launches a
// plugin (go-plugin, gRPC, AutoMTLS, nothing of this process's
// environment), drives the same local backend.
func TestEndToEndBinary(t *testing.T) {
	t.Parallel()
	bin := pluginBinary(t)
	b := newBackend(t)
	cmd := exec.Command(bin)
	for k, v := range b.env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	client := plugin.NewClient(&plugin.ClientConfig{
		HandshakeConfig:  pluginapi.Handshake,
		Plugins:          pluginapi.PluginMap,
		Cmd:              cmd,
		AllowedProtocols: []plugin.Protocol{plugin.ProtocolGRPC},
		AutoMTLS:         true,
		SkipHostEnv:      true,
		Logger:           hclog.NewNullLogger(),
	})
	t.Cleanup(client.Kill)
	rpc, err := client.Client()
	if err != nil {
		t.Fatalf("launch: %v", err)
	}
	raw, err := rpc.Dispense(pluginapi.KindGPU)
	if err != nil {
		t.Fatal(err)
	}
	lifecycle(t, raw.(pluginapi.GPU), "qwen")
}

// A binary with a bad configuration logs why and exits 1: the host's
// launch fails instead of serving a plugin that cannot work.
func TestBinaryRefusesBadConfig(t *testing.T) {
	t.Parallel()
	cmd := exec.Command(pluginBinary(t))
	cmd.Env = []string{
		pluginapi.Handshake.MagicCookieKey + "=" + pluginapi.Handshake.MagicCookieValue,
		command.EnvStart + `=["true"]`,
	}
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 {
		t.Fatalf("exit = %v, want exit status 1\n%s", err, out)
	}
	if !strings.Contains(string(out), "invalid configuration") || !strings.Contains(string(out), command.EnvStatus+": required") {
		t.Errorf("output lacks the reason:\n%s", out)
	}
}

// pluginBinary builds cmd/wake-plugin-command, once, and returns its path.
func pluginBinary(t *testing.T) string {
	t.Helper()
	return plugintest.Binary(t, "./cmd/wake-plugin-command")
}
