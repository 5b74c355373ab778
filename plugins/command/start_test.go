//go:build unix

package command_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/hashicorp/go-hclog"

	"github.com/wakeonchat/wakeonchat/plugins/command"
	"github.com/wakeonchat/wakeonchat/plugins/pluginapi"
)

// Every outcome of a start command, and the same for a stop command: a
// StartResult, never an error.
func TestStartAndStopPod(t *testing.T) {
	t.Parallel()
	notExec := filepath.Join(t.TempDir(), "not-executable")
	if err := os.WriteFile(notExec, []byte("#!/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		argv    []string
		timeout time.Duration
		pod     string
		want    pluginapi.StartResult
	}{
		{name: "exit 0 is requested", argv: sh(`echo "` + secret + `"`), want: pluginapi.StartResult{Requested: true}},
		{name: "a non-zero exit failed", argv: sh(`echo "` + secret + `" >&2; exit 1`), want: pluginapi.StartResult{Error: "exit status 1"}},
		{name: "exit 125 (docker's own failure)", argv: sh(`exit 125`), want: pluginapi.StartResult{Error: "exit status 125"}},
		{name: "killed by a signal failed", argv: sh(`kill -9 $$`), want: pluginapi.StartResult{Error: "signal: killed"}},
		{
			name: "a hang past the cap is in flight", argv: []string{"sleep", "30"}, timeout: 100 * time.Millisecond,
			want: pluginapi.StartResult{Requested: true, TimedOut: true, TimeoutMs: 100},
		},
		{
			name: "a pipeline that hangs is in flight", argv: sh(`sleep 30 | cat`), timeout: 100 * time.Millisecond,
			want: pluginapi.StartResult{Requested: true, TimedOut: true, TimeoutMs: 100},
		},
		{name: "no such program", argv: []string{"no-such-command-" + secret}, want: pluginapi.StartResult{Error: "not found"}},
		{name: "no such file", argv: []string{"/nonexistent/" + secret}, want: pluginapi.StartResult{Error: "not found"}},
		{name: "a script whose interpreter is missing", argv: []string{writeFile(t, "#!/nonexistent/sh\n", 0o755)}, want: pluginapi.StartResult{Error: "not found"}},
		{name: "not executable", argv: []string{notExec}, want: pluginapi.StartResult{Error: "permission denied"}},
		{name: "a directory", argv: []string{t.TempDir()}, want: pluginapi.StartResult{Error: "permission denied"}},
		{name: "invalid pod name runs nothing", argv: sh(`exit 0`), pod: "--all", want: pluginapi.StartResult{Error: "invalid pod name"}},
	}
	for _, tt := range tests {
		for _, op := range []string{"start", "stop"} {
			t.Run(op+"/"+tt.name, func(t *testing.T) {
				t.Parallel()
				cfg := command.Config{Start: []string{"true"}, Status: []string{"true"}, Env: testEnv}
				call := (*command.Runner).StartPod
				if op == "start" {
					cfg.Start, cfg.StartTimeout = tt.argv, tt.timeout
				} else {
					cfg.Stop, cfg.StopTimeout = tt.argv, tt.timeout
					call = (*command.Runner).StopPod
				}
				var log bytes.Buffer
				cfg.Logger = hclog.New(&hclog.LoggerOptions{Output: &log, Level: hclog.Trace})
				pod := tt.pod
				if pod == "" {
					pod = "qwen"
				}
				began := time.Now()
				got, err := call(newRunner(t, cfg), context.Background(), pod)
				if err != nil {
					t.Fatalf("%s returned an error: %v", op, err)
				}
				if took := time.Since(began); took > 10*time.Second {
					t.Errorf("%s took %v: the command was not killed", op, took)
				}
				if diff := cmp.Diff(tt.want, got); diff != "" {
					t.Errorf("result (-want +got):\n%s", diff)
				}
				if strings.Contains(log.String(), secret) || strings.Contains(got.Error, secret) {
					t.Errorf("the command's output or arguments reached the result or the log:\n%s", log.String())
				}
			})
		}
	}
}

// writeFile writes content to a fresh file and returns its path.
func writeFile(t *testing.T, content string, mode os.FileMode) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(path, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestStopPodWithoutStopCommand(t *testing.T) {
	t.Parallel()
	r := newRunner(t, command.Config{Start: []string{"true"}, Status: []string{"true"}, Env: testEnv})
	got, err := r.StopPod(context.Background(), "qwen")
	if diff := cmp.Diff(pluginapi.StartResult{Error: "no stop command"}, got); diff != "" || err != nil {
		t.Errorf("StopPod = %v (-want +got):\n%s", err, diff)
	}
}

// A command gets its arguments with {pod} replaced and exactly the
// configured environment: nothing of the plugin's own, not even when the
// configured one is empty.
func TestCommandArgsAndEnv(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		env  []string
		want []string // the command's environment, sorted
	}{
		{
			name: "PATH and the passed variables",
			env:  []string{"PATH=/usr/bin:/bin", "DOCKER_HOST=unix:///run/docker.sock", "RUNPOD_API_KEY=" + secret},
			want: []string{"DOCKER_HOST=unix:///run/docker.sock", "PATH=/usr/bin:/bin", "RUNPOD_API_KEY=" + secret},
		},
		{name: "none at all", env: nil, want: []string{}},
	}
	if os.Getenv("HOME") == "" && os.Getenv("PATH") == "" {
		t.Fatal("the test process has neither HOME nor PATH: it cannot show that they are not passed on")
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			file := filepath.Join(t.TempDir(), "record")
			start := helperArgv("record", file, "--name={pod}", "{pod}", "vllm-{pod}-{pod}", "$HOME", "a b")
			r := newRunner(t, command.Config{Start: start, Status: []string{"true"}, Env: tt.env})
			if got, _ := r.StartPod(context.Background(), "qwen-2"); !got.Requested {
				t.Fatalf("StartPod = %+v", got)
			}
			b, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			var rec struct{ Args, Env []string }
			if err := json.Unmarshal(b, &rec); err != nil {
				t.Fatal(err)
			}
			slices.Sort(rec.Env)
			if diff := cmp.Diff([]string{"--name=qwen-2", "qwen-2", "vllm-qwen-2-qwen-2", "$HOME", "a b"}, rec.Args); diff != "" {
				t.Errorf("arguments (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.want, rec.Env); diff != "" {
				t.Errorf("environment (-want +got):\n%s", diff)
			}
		})
	}
}

// The caller's context ends a start too. Ended before, nothing runs; ended
// while it runs, its group is killed and the start is in flight, with how
// long it ran.
func TestStartPodContext(t *testing.T) {
	t.Parallel()
	t.Run("canceled before", func(t *testing.T) {
		t.Parallel()
		r := newRunner(t, command.Config{Start: []string{"true"}, Status: []string{"true"}, Env: testEnv})
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		got, _ := r.StartPod(ctx, "qwen")
		if diff := cmp.Diff(pluginapi.StartResult{Error: "canceled"}, got); diff != "" {
			t.Errorf("result (-want +got):\n%s", diff)
		}
	})
	t.Run("deadline passed before", func(t *testing.T) {
		t.Parallel()
		r := newRunner(t, command.Config{Start: []string{"true"}, Status: []string{"true"}, Env: testEnv})
		ctx, cancel := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
		defer cancel()
		got, _ := r.StartPod(ctx, "qwen")
		if diff := cmp.Diff(pluginapi.StartResult{Error: "timeout"}, got); diff != "" {
			t.Errorf("result (-want +got):\n%s", diff)
		}
	})
	t.Run("canceled while it runs", func(t *testing.T) {
		t.Parallel()
		start, fifo, lockFile := holdCommand(t)
		r := newRunner(t, command.Config{Start: start, Status: []string{"true"}, Env: testEnv})
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		done := make(chan pluginapi.StartResult, 1)
		go func() {
			res, _ := r.StartPod(ctx, "qwen")
			done <- res
		}()
		waitHeld(t, fifo)
		cancel()
		select {
		case got := <-done:
			if !got.Requested || !got.TimedOut || got.Error != "" || got.TimeoutMs < 0 || got.TimeoutMs > 20000 {
				t.Errorf("result = %+v, want in flight (Requested, TimedOut, how long it ran)", got)
			}
		case <-time.After(20 * time.Second):
			t.Fatal("StartPod did not return after the cancellation")
		}
		waitGone(t, lockFile)
	})
}

// The plugin's log lines name the pod and the class, never a command's
// arguments, output or environment; New warns, by name only, about passed
// variables that were not set.
func TestLogCarriesNoSecrets(t *testing.T) {
	t.Parallel()
	var log bytes.Buffer
	logger := hclog.New(&hclog.LoggerOptions{Output: &log, Level: hclog.Trace})
	r := newRunner(t, command.Config{
		Start:  sh(`echo "` + secret + `"; echo "` + secret + `" >&2; exit 3`),
		Stop:   []string{"/nonexistent/" + secret},
		Status: sh(`echo "` + secret + `"`),
		Env:    []string{"PATH=/usr/bin:/bin", "KEY=" + secret},
		Unset:  []string{"DOCKER_HOST"},
		Logger: logger,
	})
	_, _ = r.StartPod(context.Background(), "qwen")
	_, _ = r.StopPod(context.Background(), "qwen")
	_, _ = r.GetPod(context.Background(), "qwen")
	out := log.String()
	for _, want := range []string{`pod=qwen`, `error="exit status 3"`, `error="not found"`, `names=DOCKER_HOST`} {
		if !strings.Contains(out, want) {
			t.Errorf("log lacks %s:\n%s", want, out)
		}
	}
	if strings.Contains(out, secret) {
		t.Errorf("log carries a secret:\n%s", out)
	}
}
