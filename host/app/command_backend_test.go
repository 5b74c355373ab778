package app_test

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/wakeonchat/wakeonchat/host/internal/e2e"
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
// whose start, stop and status are real process operations. The first ask
// finds it EXITED and wakes it (the start script starts the model process);
// the watch reads the status script, which says RUNNING with the model's
// URL, and probes the model; once it answers, the next ask is the model's
// answer. Two idle seconds after that answer the host stops what it woke:
// the stop script ends the model process, the pod is idled, and the next
// ask says so and wakes it again. (The idle period also runs from the pod
// becoming ready: the test has those two seconds to see it ready and ask,
// on a machine busy with the other tests.)
func TestCommandBackendWakesARealProcess(t *testing.T) {
	t.Parallel()
	e2e.RequireProc(t)
	scripts, pidFile, _ := commandBackend(t)
	cfg := filepath.Join(t.TempDir(), "wake.toml")
	toml := fmt.Sprintf(`[server]
listen = "127.0.0.1:0"
data_dir = %q

[conductor]
url = "http://127.0.0.1:9"

[timings]
watch_poll = "200ms"
probe_interval = "200ms"

[[backends]]
name = "box"
kind = "command"
start = ["/bin/sh", %q]
stop = ["/bin/sh", %q]
status = ["/bin/sh", %q]
stop_after_idle = "2s"

[[providers]]
name = "qwen"
pod = "qwen"
model = "qwen"
backend = "box"
api_key_env = ""
`, filepath.Join(filepath.Dir(cfg), "data"), filepath.Join(scripts, "start.sh"), filepath.Join(scripts, "stop.sh"), filepath.Join(scripts, "status.sh"))
	if err := os.WriteFile(cfg, []byte(toml), 0o644); err != nil {
		t.Fatal(err)
	}
	h := launchWakehost(t, cfg, nil)

	status, body := h.post(chatRequest{Message: "hello", SessionID: "box"})
	var r chatReply
	if status != http.StatusOK || json.Unmarshal([]byte(body), &r) != nil || r.Reply != e2e.ReplyWaking {
		t.Fatalf("first ask: %d %s, want the waking reply", status, body)
	}
	deadline := time.Now().Add(waitFor)
	for !running(pidFile) {
		if time.Now().After(deadline) {
			t.Fatalf("the start script did not start the model process within %v", waitFor)
		}
		time.Sleep(20 * time.Millisecond)
	}
	// Ready once the watch has read RUNNING and the model answered its probe.
	deadline = time.Now().Add(waitFor)
	for {
		code, view, err := h.get("/api/pods/qwen")
		if err == nil && code == http.StatusOK && json.Valid([]byte(view)) {
			var v struct {
				Ready bool   `json:"ready"`
				State string `json:"state"`
			}
			if json.Unmarshal([]byte(view), &v) == nil && v.Ready {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the pod was not ready within %v: %d %s", waitFor, code, view)
		}
		time.Sleep(20 * time.Millisecond)
	}
	status, body = h.post(chatRequest{Message: "are you there?", SessionID: "box"})
	if status != http.StatusOK || json.Unmarshal([]byte(body), &r) != nil || r.Reply != "echo: are you there?" {
		t.Errorf("ask once ready: %d %s, want the model's echo", status, body)
	}
	stoppedAfterIdle(t, h, pidFile)
}

// stoppedAfterIdle is the second half of TestCommandBackendWakesARealProcess:
// the idle stop, seen in the process, the view, the reply and the log.
func stoppedAfterIdle(t *testing.T, h *wakehost, pidFile string) {
	t.Helper()
	deadline := time.Now().Add(waitFor)
	for running(pidFile) {
		if time.Now().After(deadline) {
			t.Fatalf("the host did not stop the idle pod within %v", waitFor)
		}
		time.Sleep(20 * time.Millisecond)
	}
	for {
		_, view, _ := h.get("/api/pods/qwen")
		var v struct {
			State string `json:"state"`
		}
		if json.Unmarshal([]byte(view), &v) == nil && v.State == "idled" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the stopped pod's view: %s, want state idled", view)
		}
		time.Sleep(20 * time.Millisecond)
	}
	// The reply, rendered from the default wording: the wake measured
	// took well under a minute, so the estimate is its one minute.
	want, err := machines.MustDefaultReplies().Render(machines.ReplyIdleStopped, machines.ReplyData{Pod: "qwen", EtaMinutes: 1})
	if err != nil {
		t.Fatal(err)
	}
	status, body := h.post(chatRequest{Message: "back?", SessionID: "box"})
	var r chatReply
	if status != http.StatusOK || json.Unmarshal([]byte(body), &r) != nil || r.Reply != want {
		t.Errorf("the ask after the idle stop: %d %s, want %q", status, body, want)
	}
	if len(h.log.Matching(t, "pod stopped after idling: pod qwen")) != 1 {
		t.Errorf("no one line \"pod stopped after idling: pod qwen\"; the log:\n%s", h.log.Operator(t))
	}
	// That ask woke the pod again: wait for its model process, whose pid
	// the cleanup reads to end it (a start script cut short by the host's
	// shutdown would leave it running with no pid written).
	for deadline := time.Now().Add(waitFor); !running(pidFile); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the second wake's start script did not start the model process within %v", waitFor)
		}
	}
}
