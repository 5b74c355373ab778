package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/wakeonchat/wakeonchat/host/internal/binaries"
	"github.com/wakeonchat/wakeonchat/host/internal/e2e"
	"github.com/wakeonchat/wakeonchat/plugins/pluginapi"
)

// within bounds every wait of these tests on the host process.
const within = 30 * time.Second

// scale is the host's -scale: the simulated 9-minute wake takes about 0.9 s,
// and the pod stops itself after 15 idle minutes, about 1.5 s, which the
// test's one turn after the wake comes well within.
const scale = "600"

// hostOnly is a variable of the host's environment that no plugin may see.
const hostOnly = "WAKE_TEST_HOST_ONLY=not-for-plugins"

// TestBuiltinPluginsServeAWake: wakehost alone, in a directory with
// nothing else, on the default config (so the default plugin names and a
// plugins.dir that does not exist), serves a whole simulated wake with its
// built-in plugins. They run as go-plugin subprocesses of wakehost's own
// executable in plugin mode, each in a process group of its own, with the
// explicit environment and not the host's; one killed is relaunched the
// same way, and the wake goes through it; and a SIGTERM stops the host and
// them.
func TestBuiltinPluginsServeAWake(t *testing.T) {
	t.Parallel()
	e2e.RequireProc(t)
	entries, err := os.ReadDir(filepath.Dir(wakehostBin))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if diff := cmp.Diff([]string{binaries.Wakehost}, names); diff != "" {
		t.Fatalf("the binary's directory (-want +got):\n%s", diff)
	}
	cfg := filepath.Join(t.TempDir(), "wake.toml")
	if err := os.WriteFile(cfg, nil, 0o644); err != nil { // every key its default
		t.Fatal(err)
	}

	h := startHost(t, cfg)
	plugins := h.plugins(t)
	wantArgs := map[string][]string{
		"conductor": {"plugin", "wake-plugin-conductor"},
		"provider":  {"plugin", "wake-plugin-provider-openai"},
	}
	for kind, pid := range plugins {
		if diff := cmp.Diff(wantArgs[kind], cmdline(t, pid)[1:]); diff != "" {
			t.Errorf("the %s plugin's arguments (-want +got):\n%s", kind, diff)
		}
		if pgid, err := syscall.Getpgid(pid); err != nil || pgid != pid {
			t.Errorf("the %s plugin's process group %d (%v), want its own, %d", kind, pgid, err, pid)
		}
		env := environ(t, pid)
		if slices.Contains(env, hostOnly) {
			t.Errorf("the %s plugin inherited the host's %s: %q", kind, hostOnly, env)
		}
		if kind == "conductor" && !slices.ContainsFunc(env, func(kv string) bool { return strings.HasPrefix(kv, pluginapi.EnvConductorURL+"=") }) {
			t.Errorf("the conductor plugin has no %s: %q", pluginapi.EnvConductorURL, env)
		}
	}

	// A built-in plugin killed is relaunched from the same executable.
	if err := syscall.Kill(plugins["conductor"], syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	relaunched := h.awaitPlugin(t, "conductor", plugins["conductor"])
	if diff := cmp.Diff(wantArgs["conductor"], cmdline(t, relaunched)[1:]); diff != "" {
		t.Errorf("the relaunched conductor plugin's arguments (-want +got):\n%s", diff)
	}

	// The wake, through the relaunched plugin: asleep, woken by the first
	// ask, ready (pushed on the pod's event stream), then the model's
	// answer.
	ready := h.awaitReady("qwen")
	if got, want := h.chat(t, "hello"), e2e.ReplyWaking; got != want {
		t.Fatalf("the first ask: %q, want %q", got, want)
	}
	if err := <-ready; err != nil {
		t.Fatalf("the pod's event stream: %v\nthe log:\n%s", err, h.Log)
	}
	if got, want := h.chat(t, "hello"), "echo: hello"; got != want {
		t.Fatalf("the ask once the pod is ready: %q, want %q", got, want)
	}

	if err := h.Cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-h.Exited:
	case <-time.After(within):
		t.Fatalf("wakehost did not exit within %v of SIGTERM\nthe log:\n%s", within, h.Log)
	}
	if h.Err != nil {
		t.Errorf("wakehost: %v\nthe log:\n%s", h.Err, h.Log)
	}
	e2e.WaitGone(t, within, relaunched, plugins["provider"])
}

// host is a wakehost child process under -simulate.
type host struct{ *e2e.Wakehost }

// startHost runs wakehostBin -simulate at scale on the config at cfg, on
// a free loopback port, with hostOnly its whole environment, and waits for
// /readyz 200. The process is killed at cleanup if it still runs.
func startHost(t *testing.T, cfg string) *host {
	t.Helper()
	return &host{e2e.Launch(t, wakehostBin, []string{"-simulate", "-scale", scale, "-config", cfg, "-log-format", "json"}, []string{hostOnly}, within)}
}

// plugins are the host's two plugin processes, by kind ("conductor",
// "provider"): its children, each wakehost itself.
func (h *host) plugins(t *testing.T) map[string]int {
	t.Helper()
	children := e2e.Children(h.Cmd.Process.Pid)
	out := map[string]int{}
	for pid, exe := range children {
		if exe != binaries.Wakehost {
			t.Errorf("the host's child %d runs %s, want %s", pid, exe, binaries.Wakehost)
			continue
		}
		switch args := cmdline(t, pid); {
		case slices.Contains(args, "wake-plugin-conductor"):
			out["conductor"] = pid
		case slices.Contains(args, "wake-plugin-provider-openai"):
			out["provider"] = pid
		}
	}
	if len(out) != 2 || len(children) != 2 {
		t.Fatalf("the host's children %v, want the two built-in plugins", children)
	}
	return out
}

// awaitPlugin waits until the host's plugin of kind runs in a process
// other than old, and /readyz is 200 again, and returns its pid.
func (h *host) awaitPlugin(t *testing.T, kind string, old int) int {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		if pid, ok := h.pluginsNow(t)[kind]; ok && pid != old {
			if resp, err := h.Client.Get(h.Base + "/readyz"); err == nil {
				resp.Body.Close()
				if resp.StatusCode == http.StatusOK {
					return pid
				}
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no new %s plugin within %v\nthe log:\n%s", kind, within, h.Log)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// pluginsNow is plugins without its checks: what runs at the moment.
func (h *host) pluginsNow(t *testing.T) map[string]int {
	out := map[string]int{}
	for pid := range e2e.Children(h.Cmd.Process.Pid) {
		args, err := readCmdline(pid)
		if err != nil {
			continue // it exited meanwhile
		}
		switch {
		case slices.Contains(args, "wake-plugin-conductor"):
			out["conductor"] = pid
		case slices.Contains(args, "wake-plugin-provider-openai"):
			out["provider"] = pid
		}
	}
	return out
}

// chat asks message in the session "builtin" and returns the reply.
func (h *host) chat(t *testing.T, message string) string {
	t.Helper()
	body, _ := json.Marshal(map[string]string{"message": message, "sessionId": "builtin"})
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, h.Base+"/api/chat", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := h.Client.Do(req)
	if err != nil {
		t.Fatalf("POST /api/chat: %v\nthe log:\n%s", err, h.Log)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var got struct{ Reply string }
	if resp.StatusCode != http.StatusOK || json.Unmarshal(b, &got) != nil {
		t.Fatalf("POST /api/chat: %d %s\nthe log:\n%s", resp.StatusCode, b, h.Log)
	}
	return got.Reply
}

// awaitReady opens the pod's event stream now and reports, on the
// channel, nil once an event says the pod is ready, or why it will not.
func (h *host) awaitReady(pod string) <-chan error {
	done := make(chan error, 1)
	ctx, cancel := context.WithTimeout(context.Background(), within)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, h.Base+"/api/pods/"+pod+"/events", nil)
	if err != nil {
		cancel()
		done <- err
		return done
	}
	resp, err := h.Client.Do(req)
	if err != nil {
		cancel()
		done <- err
		return done
	}
	go func() {
		defer cancel()
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			data, ok := strings.CutPrefix(sc.Text(), "data: ")
			var ev struct{ Ready bool }
			if ok && json.Unmarshal([]byte(data), &ev) == nil && ev.Ready {
				done <- nil
				return
			}
		}
		done <- fmt.Errorf("the stream ended without a ready event: %v", sc.Err())
	}()
	return done
}

// cmdline is the process's arguments, its program name first.
func cmdline(t *testing.T, pid int) []string {
	t.Helper()
	args, err := readCmdline(pid)
	if err != nil {
		t.Fatal(err)
	}
	return args
}

func readCmdline(pid int) ([]string, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		return nil, err
	}
	return strings.Split(strings.TrimSuffix(string(b), "\x00"), "\x00"), nil
}

// environ is the process's environment, as KEY=VALUE entries.
func environ(t *testing.T, pid int) []string {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSuffix(string(b), "\x00"), "\x00")
}
