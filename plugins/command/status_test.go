//go:build unix

package command_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/wakeonchat/wakeonchat/plugins/command"
	"github.com/wakeonchat/wakeonchat/plugins/pluginapi"
)

func running(url string) pluginapi.Pod {
	return pluginapi.Pod{Name: "qwen", Status: "RUNNING", IsRunning: true, ProxyURL: url, Lookup: pluginapi.LookupFound}
}

func down(status string) pluginapi.Pod {
	return pluginapi.Pod{Name: "qwen", Status: status, Lookup: pluginapi.LookupFound}
}

// Every answer a status command can give in json mode, and every way it
// can fail to give one: each failure is a *pluginapi.LookupError with a
// short class and nothing of the command's output.
func TestGetPodJSON(t *testing.T) {
	t.Parallel()
	notExec := filepath.Join(t.TempDir(), "not-executable")
	garbage := filepath.Join(t.TempDir(), "garbage")
	for path, mode := range map[string]os.FileMode{notExec: 0o644, garbage: 0o755} {
		if err := os.WriteFile(path, []byte("\x01\x02 "+secret), mode); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name    string
		status  []string
		url     string        // Config.URL
		timeout time.Duration // Config.StatusTimeout
		// waitDelay, when set, replaces the second the Runner waits for
		// the output of a command that has exited (command.SetWaitDelay).
		waitDelay time.Duration
		want      pluginapi.Pod
		wantErr   string // the LookupError's message
	}{
		{
			name:   "running with url and readySince",
			status: sh(`echo '{"status":"RUNNING","url":"http://10.0.0.7:8000/v1","readySince":"2026-09-09T12:33:56Z"}'`),
			want: pluginapi.Pod{Name: "qwen", Status: "RUNNING", IsRunning: true, ProxyURL: "http://10.0.0.7:8000/v1",
				ReadySince: time.Date(2026, 9, 9, 12, 33, 56, 0, time.UTC), Lookup: pluginapi.LookupFound},
		},
		{
			name:   "docker's lower-case word is upper-cased",
			status: sh(`echo '{"status":"running"}'`),
			url:    "http://127.0.0.1:8000/v1",
			want:   running("http://127.0.0.1:8000/v1"),
		},
		{
			name:   "the output's url wins over the configured one",
			status: sh(`echo '{"status":"RUNNING","url":"https://gpu.example/v1"}'`),
			url:    "http://127.0.0.1:8000/v1",
			want:   running("https://gpu.example/v1"),
		},
		{
			name:   "{pod} in the configured url",
			status: sh(`echo '{"status":"RUNNING"}'`),
			url:    "http://{pod}.lan:8000/v1",
			want:   running("http://qwen.lan:8000/v1"),
		},
		{
			name:   "running with no url anywhere is up without a way to the model",
			status: sh(`echo '{"status":"RUNNING"}'`),
			want:   running(""),
		},
		{
			name:   "exited drops the url",
			status: sh(`echo '{"status":"EXITED","url":"http://10.0.0.7:8000/v1"}'`),
			url:    "http://127.0.0.1:8000/v1",
			want:   down("EXITED"),
		},
		{name: "created", status: sh(`echo '{"status":"created"}'`), want: down("CREATED")},
		{name: "any other word", status: sh(`echo '{"status":"TERMINATED"}'`), want: down("TERMINATED")},
		{
			name:   "pretty-printed over several lines, with fields it does not know (gcloud's json(status))",
			status: sh(`printf '{\n  "status": "RUNNING",\n  "zone": "x"\n}\n'`),
			url:    "http://10.0.0.7:8000/v1",
			want:   running("http://10.0.0.7:8000/v1"),
		},
		{
			name:   "a readySince that does not parse is none",
			status: sh(`echo '{"status":"RUNNING","readySince":"yesterday"}'`),
			want:   running(""),
		},
		{name: "exactly 64 KiB", status: helperArgv("pad", strconv.Itoa(command.MaxStatusOutput)), want: running("")},

		// What cannot be read.
		{name: "one byte past 64 KiB", status: helperArgv("pad", strconv.Itoa(command.MaxStatusOutput+1)), wantErr: "status command: output larger than 64 KiB"},
		{name: "output without end", status: []string{"yes", secret}, wantErr: "status command: output larger than 64 KiB"},
		{name: "garbage", status: sh(`echo "hello ` + secret + `"`), wantErr: "status command: unparseable output: not a JSON object"},
		{name: "no output", status: sh(`true`), wantErr: "status command: unparseable output: no output"},
		{name: "an array", status: sh(`echo '[{"status":"RUNNING"}]'`), wantErr: "status command: unparseable output: not a JSON object"},
		{name: "truncated", status: sh(`printf '{"status":"RUNN'`), wantErr: "status command: unparseable output: truncated"},
		{name: "syntax error", status: sh(`echo '{"status":"RUNNING",` + secret + `}'`), wantErr: "status command: unparseable output: syntax error at offset 21"},
		{name: "two objects", status: sh(`echo '{"status":"RUNNING"}{"status":"EXITED"}'`), wantErr: "status command: unparseable output: more than one JSON value"},
		{name: "an object and garbage", status: sh(`echo '{"status":"RUNNING"} ` + secret + `'`), wantErr: "status command: unparseable output: more than one JSON value"},
		{name: "no status", status: sh(`echo '{"url":"http://10.0.0.7/v1"}'`), wantErr: "status command: unparseable output: no status"},
		{name: "status of the wrong type", status: sh(`echo '{"status":1}'`), wantErr: "status command: unparseable output: field status is a JSON number"},
		{name: "a sentence for a status", status: sh(`echo '{"status":"error: token ` + secret + ` rejected"}'`), wantErr: "status command: unparseable output: the status is not a word"},
		{name: "a url that is not http", status: sh(`echo '{"status":"RUNNING","url":"ftp://u:` + secret + `@h/"}'`), wantErr: "status command: unparseable output: the url is not an absolute http or https url"},
		{name: "a relative url", status: sh(`echo '{"status":"RUNNING","url":"/v1"}'`), wantErr: "status command: unparseable output: the url is not an absolute http or https url"},
		{name: "valid JSON and a non-zero exit", status: sh(`echo '{"status":"RUNNING"}'; exit 1`), wantErr: "status command: exit status 1"},
		{name: "exit status 2", status: sh(`echo "` + secret + `" >&2; exit 2`), wantErr: "status command: exit status 2"},
		{name: "killed by a signal", status: sh(`kill -9 $$`), wantErr: "status command: signal: killed"},
		{name: "a hang", status: []string{"sleep", "30"}, timeout: 100 * time.Millisecond, wantErr: "status command: timed out after 100ms"},
		{name: "a shell pipeline that hangs", status: sh(`sleep 30 | cat`), timeout: 100 * time.Millisecond, wantErr: "status command: timed out after 100ms"},
		{name: "a background process that keeps the output", status: sh(`sleep 30 & echo '{"status":"RUNNING"}'`), waitDelay: 100 * time.Millisecond, wantErr: "status command: output left open by a background process"},
		{name: "no such program in PATH", status: []string{"no-such-command-" + secret}, wantErr: "status command: not found"},
		{name: "no such file", status: []string{"/nonexistent/" + secret}, wantErr: "status command: not found"},
		{name: "not executable", status: []string{notExec}, wantErr: "status command: permission denied"},
		{name: "not a program", status: []string{garbage}, wantErr: "status command: exec format error"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := newRunner(t, command.Config{
				Start: []string{"true"}, Status: tt.status, URL: tt.url,
				StatusTimeout: tt.timeout, Env: testEnv, Logger: nullLogger,
			})
			if tt.waitDelay > 0 {
				command.SetWaitDelay(r, tt.waitDelay)
			}
			began := time.Now()
			pod, err := r.GetPod(context.Background(), "qwen")
			if took := time.Since(began); took > 10*time.Second {
				t.Errorf("GetPod took %v: the command was not killed", took)
			}
			checkLookup(t, tt.want, tt.wantErr, pod, err)
		})
	}
}

// checkLookup compares a GetPod's answer with the wanted pod, or its
// error with the wanted LookupError message.
func checkLookup(t *testing.T, want pluginapi.Pod, wantErr string, pod pluginapi.Pod, err error) {
	t.Helper()
	if wantErr == "" {
		if err != nil {
			t.Fatalf("GetPod error: %v", err)
		}
		if diff := cmp.Diff(want, pod); diff != "" {
			t.Errorf("pod (-want +got):\n%s", diff)
		}
		return
	}
	le, ok := err.(*pluginapi.LookupError)
	if !ok {
		t.Fatalf("GetPod = %+v, %v; want a *pluginapi.LookupError %q", pod, err, wantErr)
	}
	if diff := cmp.Diff(&pluginapi.LookupError{Message: wantErr}, le); diff != "" {
		t.Errorf("lookup error (-want +got):\n%s", diff)
	}
	if strings.Contains(le.Message, secret) {
		t.Errorf("lookup error %q carries the command's output or arguments", le.Message)
	}
}

// In exit mode the exit code is the answer: the LSB status codes.
func TestGetPodExit(t *testing.T) {
	t.Parallel()
	const url = "http://{pod}.lan:8000/v1"
	tests := []struct {
		name    string
		down    []int // Config.DownCodes
		status  []string
		want    pluginapi.Pod
		wantErr string
	}{
		{name: "0 is running at the configured url", status: sh(`echo active; exit 0`), want: running("http://qwen.lan:8000/v1")},
		{name: "1 is exited (dead, pid file exists)", status: sh(`exit 1`), want: down("EXITED")},
		{name: "2 is exited (dead, lock file exists)", status: sh(`exit 2`), want: down("EXITED")},
		{name: "3 is exited (not running: systemctl is-active on an inactive unit)", status: sh(`echo inactive; exit 3`), want: down("EXITED")},
		{name: "4 cannot be read (unknown: no such unit)", status: sh(`exit 4`), wantErr: "status command: exit status 4"},
		{name: "any other code cannot be read", status: sh(`exit 127`), wantErr: "status command: exit status 127"},
		{name: "a signal cannot be read", status: sh(`kill -TERM $$`), wantErr: "status command: signal: terminated"},
		{name: "output is ignored, however long", status: []string{"yes", secret}, wantErr: "status command: timed out after 200ms"},
		{name: "not found", status: []string{"no-such-command"}, wantErr: "status command: not found"},
		{name: "configured down codes: 3 is exited", down: []int{3}, status: sh(`exit 3`), want: down("EXITED")},
		{name: "configured down codes: 1 cannot be read (systemctl without systemd)", down: []int{3}, status: sh(`exit 1`), wantErr: "status command: exit status 1"},
		{name: "configured down codes: any code", down: []int{3, 7, 255}, status: sh(`exit 255`), want: down("EXITED")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := newRunner(t, command.Config{
				Start: []string{"true"}, Status: tt.status, StatusBy: command.StatusByExit, DownCodes: tt.down, URL: url,
				StatusTimeout: 200 * time.Millisecond, Env: testEnv, Logger: nullLogger,
			})
			pod, err := r.GetPod(context.Background(), "qwen")
			checkLookup(t, tt.want, tt.wantErr, pod, err)
		})
	}
}

// The caller's context ends a status command too: a deadline sooner than
// the command's own cap is a timeout, a cancellation is "canceled", and a
// context that ended before the call runs nothing.
func TestGetPodContext(t *testing.T) {
	t.Parallel()
	t.Run("deadline sooner than the cap", func(t *testing.T) {
		t.Parallel()
		r := newRunner(t, command.Config{Start: []string{"true"}, Status: []string{"sleep", "30"}, Env: testEnv})
		ctx, cancel := context.WithTimeout(context.Background(), 150*time.Millisecond)
		defer cancel()
		_, err := r.GetPod(ctx, "qwen")
		// The cap that applied is what was left of the deadline when the
		// command started: at most 150ms, in whole milliseconds.
		var le *pluginapi.LookupError
		if !errors.As(err, &le) {
			t.Fatalf("GetPod error = %v, want a *pluginapi.LookupError", err)
		}
		d, err := time.ParseDuration(strings.TrimPrefix(le.Message, "status command: timed out after "))
		if err != nil || d <= 0 || d > 150*time.Millisecond || d%time.Millisecond != 0 {
			t.Errorf("lookup error %q, want status command: timed out after up to 150ms", le.Message)
		}
	})
	t.Run("canceled before", func(t *testing.T) {
		t.Parallel()
		ran := filepath.Join(t.TempDir(), "ran")
		r := newRunner(t, command.Config{Start: []string{"true"}, Status: helperArgv("record", ran), Env: testEnv})
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		pod, err := r.GetPod(ctx, "qwen")
		checkLookup(t, pluginapi.Pod{}, "status command: canceled", pod, err)
		if _, err := os.Stat(ran); err == nil {
			t.Error("the command ran after the context ended")
		}
	})
	t.Run("invalid pod name runs nothing", func(t *testing.T) {
		t.Parallel()
		ran := filepath.Join(t.TempDir(), "ran")
		r := newRunner(t, command.Config{Start: []string{"true"}, Status: helperArgv("record", ran), Env: testEnv})
		pod, err := r.GetPod(context.Background(), "-rf")
		checkLookup(t, pluginapi.Pod{}, "invalid pod name", pod, err)
		if _, err := os.Stat(ran); err == nil {
			t.Error("the command ran for an invalid pod name")
		}
	})
}

// A cancellation while the command runs kills its whole process group: a
// process it started in the foreground (here behind a shell) dies with
// it, rather than lingering with its output.
func TestGetPodCancelKillsTheGroup(t *testing.T) {
	t.Parallel()
	status, fifo, lockFile := holdCommand(t)
	r := newRunner(t, command.Config{Start: []string{"true"}, Status: status, Env: testEnv})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := r.GetPod(ctx, "qwen")
		done <- err
	}()
	waitHeld(t, fifo)
	cancel()
	select {
	case err := <-done:
		var le *pluginapi.LookupError
		if !errors.As(err, &le) || le.Message != "status command: canceled" {
			t.Errorf("GetPod error = %v, want status command: canceled", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("GetPod did not return after the cancellation")
	}
	waitGone(t, lockFile)
}

// holdCommand is a command that runs a process in the background behind a
// shell and waits for it: killing the shell alone would leave the process
// running. The process takes lockFile and then writes to fifo.
func holdCommand(t *testing.T) (argv []string, fifo, lockFile string) {
	t.Helper()
	dir := t.TempDir()
	fifo, lockFile = filepath.Join(dir, "held"), filepath.Join(dir, "lock")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	return []string{"/bin/sh", "-c", `"$0" "$1" hold "$2" "$3" & wait`, testBin, helperArg, fifo, lockFile}, fifo, lockFile
}

// waitHeld waits until holdCommand's process has its lock.
func waitHeld(t *testing.T, fifo string) {
	t.Helper()
	held := make(chan error, 1)
	go func() {
		_, err := os.ReadFile(fifo)
		held <- err
	}()
	select {
	case err := <-held:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the held process never took its lock")
	}
}

// waitGone waits until the process holding lockFile has died (the kernel
// drops its lock), failing the test if it is still alive after 20s.
func waitGone(t *testing.T, lockFile string) {
	t.Helper()
	f, err := os.Open(lockFile)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	gone := make(chan error, 1)
	go func() { gone <- syscall.Flock(int(f.Fd()), syscall.LOCK_EX) }()
	select {
	case err := <-gone:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the process the command started is still alive: its group was not killed")
	}
}
