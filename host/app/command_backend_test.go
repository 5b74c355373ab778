package app_test

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/wakeonchat/wakeonchat/host/app"
	"github.com/wakeonchat/wakeonchat/host/config"
	"github.com/wakeonchat/wakeonchat/host/internal/e2e"
	"github.com/wakeonchat/wakeonchat/host/internal/fakeclock"
	"github.com/wakeonchat/wakeonchat/machines"
)

// modelProcessEnv, set to a loopback address, makes the test binary a
// model process: an OpenAI-compatible model that echoes the last message,
// listening there until it is killed. The command backend's scripts start
// and stop it.
const modelProcessEnv = "WAKE_APP_TEST_MODEL"

func serveModelProcess(addr string) int {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/models", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"object":"list","data":[{"id":"qwen","object":"model"}]}`)
	})
	mux.HandleFunc("POST /v1/chat/completions", func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Messages []struct {
				Content string `json:"content"`
			} `json:"messages"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil || len(req.Messages) == 0 {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"choices": []any{map[string]any{
			"index": 0, "finish_reason": "stop",
			"message": map[string]string{"role": "assistant", "content": "echo: " + req.Messages[len(req.Messages)-1].Content},
		}}})
	})
	if err := http.ListenAndServe(addr, mux); err != nil {
		fmt.Fprintln(os.Stderr, "model process:", err)
		return 1
	}
	return 0
}

// commandBackend writes the start, stop and status scripts of a command
// backend whose pod is a real process: the test binary as a model on a
// free port, its pid in a file. It returns the scripts' directory and the
// pid file.
func commandBackend(t *testing.T) (dir, pidFile, url string) {
	t.Helper()
	dir = t.TempDir()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	pidFile = filepath.Join(dir, "model.pid")
	url = "http://" + addr // the provider's path (/v1) is added to it
	scripts := map[string]string{
		// The model process outlives the script: its own session, its
		// output nowhere, its pid kept.
		"start.sh": fmt.Sprintf("#!/bin/sh\n[ -f %[1]s ] && kill -0 \"$(cat %[1]s)\" 2>/dev/null && exit 0\n%[2]s=%[3]s setsid %[4]s </dev/null >/dev/null 2>&1 &\necho $! > %[1]s\n",
			strconv.Quote(pidFile), modelProcessEnv, addr, strconv.Quote(self)),
		"stop.sh": fmt.Sprintf("#!/bin/sh\n[ -f %[1]s ] || exit 0\nkill \"$(cat %[1]s)\" 2>/dev/null\nrm -f %[1]s\n", strconv.Quote(pidFile)),
		"status.sh": fmt.Sprintf("#!/bin/sh\nif [ -f %[1]s ] && kill -0 \"$(cat %[1]s)\" 2>/dev/null; then\n  echo '{\"status\":\"RUNNING\",\"url\":\"%[2]s\"}'\nelse\n  echo '{\"status\":\"EXITED\"}'\nfi\n",
			strconv.Quote(pidFile), url),
	}
	for name, body := range scripts {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		if pid, ok := readPID(pidFile); ok {
			if p, err := os.FindProcess(pid); err == nil {
				_ = p.Kill()
			}
		}
	})
	return dir, pidFile, url
}

// readPID is the pid in pidFile; false while there is none, or the start
// script has created the file and not written it yet.
func readPID(pidFile string) (int, bool) {
	b, err := os.ReadFile(pidFile)
	if err != nil {
		return 0, false
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	return pid, err == nil
}

// running reports whether the process in pidFile runs.
func running(pidFile string) bool {
	pid, ok := readPID(pidFile)
	if !ok {
		return false
	}
	_, err := os.Stat(fmt.Sprintf("/proc/%d", pid))
	return err == nil
}

// TestCommandBackendWakesARealProcess (#19): a pod on a command backend
// whose start, stop and status are real process operations, run by the
// command plugin built into wakehost; the host runs in process, on a fake
// clock. The first ask finds it EXITED and wakes it (the start script
// starts the model process); the watch reads the status script, which says
// RUNNING with the model's URL, and probes the model; once it answers, the
// next ask is the model's answer. Fifteen idle minutes after that answer
// (stop_after_idle's default) the host stops what it woke: the stop script
// ends the model process, the pod is idled, and the next ask says so and
// wakes it again.
func TestCommandBackendWakesARealProcess(t *testing.T) {
	t.Parallel()
	e2e.RequireProc(t)
	scripts, pidFile, modelURL := commandBackend(t)
	dir := t.TempDir()
	cfg := filepath.Join(dir, "wake.toml")
	toml := fmt.Sprintf(`[server]
listen = "127.0.0.1:0"
data_dir = %q

[conductor]
url = "http://127.0.0.1:9"

[[backends]]
name = "box"
kind = "command"
start = ["/bin/sh", %q]
stop = ["/bin/sh", %q]
status = ["/bin/sh", %q]

[[providers]]
name = "qwen"
pod = "qwen"
model = "qwen"
backend = "box"
api_key_env = ""
`, filepath.Join(dir, "data"), filepath.Join(scripts, "start.sh"), filepath.Join(scripts, "stop.sh"), filepath.Join(scripts, "status.sh"))
	if err := os.WriteFile(cfg, []byte(toml), 0o644); err != nil {
		t.Fatal(err)
	}
	clk, ts := fakeclock.New(t0), newTimers()
	logs := &e2e.Log{}
	eh := e2e.Start(t, app.Options{
		ConfigPath: cfg, Logger: logs.Logger(slog.LevelDebug), Getenv: func(string) string { return "" },
		Clock: timerClock{Clock: clk, timers: ts}, PluginDir: binDir, Executable: filepath.Join(binDir, e2e.WakehostBin),
	}, logs, nil)
	h := &testHost{Host: eh, clock: clk, log: logs}

	if got := h.ask(t, "box", "hello"); got != e2e.ReplyWaking {
		t.Fatalf("first ask: %q, want the waking reply", got)
	}
	awaitProcess(t, pidFile, true, "the start script did not start the model process")
	awaitModel(t, modelURL)
	// Ready once the watch has read RUNNING and the model answered its
	// probe: the watch's next poll (watch_poll, 5s) finds both.
	e2e.WaitWatcher(t, clk, waitFor)
	clk.Advance(5 * time.Second)
	h.waitState(t, "ready")
	answered := clk.Now()
	if got := h.ask(t, "box", "are you there?"); got != "echo: are you there?" {
		t.Errorf("ask once ready: %q, want the model's echo", got)
	}

	// The idle stop, due 15 minutes after that answer, once the host has
	// set its timer for then.
	due := answered.Add(config.DefaultStopAfterIdle)
	ts.await(t, 0, due, "the idle stop is not due 15 min after the answer")
	clk.Set(due)
	awaitProcess(t, pidFile, false, "the host did not stop the idle pod")
	h.waitState(t, "idled")
	// The reply, rendered from the default wording: the wake measured
	// took well under a minute, so the estimate is its one minute.
	want, err := machines.MustDefaultReplies().Render(machines.ReplyIdleStopped, machines.ReplyData{Pod: "qwen", EtaMinutes: 1})
	if err != nil {
		t.Fatal(err)
	}
	if got := h.ask(t, "box", "back?"); got != want {
		t.Errorf("the ask after the idle stop: %q, want %q", got, want)
	}
	// That ask woke the pod again: wait for its model process, whose pid
	// the cleanup reads to end it (a start script cut short by the host's
	// shutdown would leave it running with no pid written).
	awaitProcess(t, pidFile, true, "the second wake's start script did not start the model process")
	// The stop's line is whole in the log once the host stopped.
	h.stop(t)
	if n := len(h.log.Matching(t, "pod stopped after idling: pod qwen")); n != 1 {
		t.Errorf("%d lines \"pod stopped after idling: pod qwen\", want 1; the log:\n%s", n, h.log.Operator(t))
	}
}

// awaitModel waits until the model process at url answers, and fails the
// test after waitFor: a real process takes a moment of real time to
// listen, which the fake clock does not wait for.
func awaitModel(t *testing.T, url string) {
	t.Helper()
	client := &http.Client{Timeout: time.Second}
	t.Cleanup(client.CloseIdleConnections)
	for deadline := time.Now().Add(waitFor); ; time.Sleep(20 * time.Millisecond) {
		if resp, err := client.Get(url + "/v1/models"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the model process at %s did not answer within %v", url, waitFor)
		}
	}
}

// awaitProcess waits until the process in pidFile runs (or, with run
// false, no longer does), and fails the test with why after waitFor: the
// scripts start and stop it in real time.
func awaitProcess(t *testing.T, pidFile string, run bool, why string) {
	t.Helper()
	for deadline := time.Now().Add(waitFor); running(pidFile) != run; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%s within %v", why, waitFor)
		}
	}
}
