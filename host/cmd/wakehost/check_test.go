package main

import (
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// checkRun is what one `wakehost check` printed and its exit status.
type checkRun struct {
	Code           int
	Stdout, Stderr string
}

// TestCheck runs the wakehost binary's check on good, bad and unreadable
// configs. DIR in a file, a path or an expectation stands for the case's
// directory, where wake.toml is; ADDR for a loopback address the test
// holds open (check opens no listener, so a busy address is no problem).
// No case leaves anything behind in DIR: check writes nothing, and opens no
// store.
func TestCheck(t *testing.T) {
	t.Parallel()
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	const builtins = "plugins: wake-plugin-conductor built in, wake-plugin-provider-openai built in"
	tests := []struct {
		name  string
		files map[string]string // relative to DIR; a name ending in "/" is a directory
		exec  []string          // files to make executable
		env   []string          // the check's whole environment
		path  string            // the -config argument; default DIR/wake.toml
		args  []string          // instead of -config path
		want  checkRun
		// prefixes: each line of want.Stderr is only the start of the
		// line printed (the config package's wording is its own, tested
		// there; check's is that each problem has its line, file first).
		prefixes bool
	}{
		{
			name:  "defaults: the plugins built in",
			files: map[string]string{"wake.toml": ""},
			want:  checkRun{Stdout: "DIR/wake.toml: ok (1 provider, 1 pod, store bbolt in DIR/data, " + builtins + ", shutdown grace 2m13s)\n"},
		},
		{
			name: "two providers on one pod, a busy listen address, a plugin binary in plugins.dir, the grace from completion_timeout",
			files: map[string]string{
				"wake.toml": "[server]\nlisten = \"ADDR\"\n\n[[providers]]\nname = \"a\"\npod = \"qwen\"\n\n" +
					"[[providers]]\nname = \"b\"\npod = \"qwen\"\nmodel = \"other\"\n\n[agent]\nproviders = [\"a\", \"b\"]\n\n" +
					"[timings]\ncompletion_timeout = \"60s\"\n",
				"bin/wake-plugin-conductor": "#!/bin/sh\n",
			},
			exec: []string{"bin/wake-plugin-conductor"},
			want: checkRun{Stdout: "DIR/wake.toml: ok (2 providers, 1 pod, store bbolt in DIR/data, " +
				"plugins: wake-plugin-conductor from DIR/bin/wake-plugin-conductor, wake-plugin-provider-openai built in, shutdown grace 1m13s)\n"},
		},
		{
			name:  "postgres with its connection string set",
			files: map[string]string{"wake.toml": "[store]\nbackend = \"postgres\"\ndsn_env = \"DSN\"\n"},
			env:   []string{"DSN=postgres://nowhere.invalid/wake"},
			want:  checkRun{Stdout: "DIR/wake.toml: ok (1 provider, 1 pod, store postgres, " + builtins + ", shutdown grace 2m13s)\n"},
		},
		{
			name:  "a relative -config is printed as given",
			files: map[string]string{"wake.toml": ""},
			path:  "wake.toml",
			want:  checkRun{Stdout: "wake.toml: ok (1 provider, 1 pod, store bbolt in DIR/data, " + builtins + ", shutdown grace 2m13s)\n"},
		},
		{
			name:  "unknown keys and a rejected value: all of them, each with its line",
			files: map[string]string{"wake.toml": "[server]\nlisen = \"127.0.0.1:8080\"\n\n[timings]\nwake_window = \"15x\"\nwake_windw = \"10m\"\n"},
			want: checkRun{Code: 1, Stderr: `DIR/wake.toml:2: unknown key "server.lisen"` + "\n" +
				`DIR/wake.toml:5: timings.wake_window: ` + "\n" +
				`DIR/wake.toml:6: unknown key "timings.wake_windw"` + "\n"},
			prefixes: true,
		},
		{
			name:  "invalid values: each names its key and line",
			files: map[string]string{"wake.toml": "[timings]\nwake_window = \"-1m\"\n\n[agent]\nproviders = [\"nobody\"]\n"},
			want: checkRun{Code: 1, Stderr: "DIR/wake.toml:2: timings.wake_window: \n" +
				"DIR/wake.toml:5: agent.providers[0]: \n"},
			prefixes: true,
		},
		{
			name:     "a syntax error: its line and column",
			files:    map[string]string{"wake.toml": "[server]\nlisten = 127.0.0.1\n"},
			want:     checkRun{Code: 1, Stderr: "DIR/wake.toml:2:10: invalid TOML: \n"},
			prefixes: true,
		},
		{
			name: "plugins missing or not executable: each names its key",
			files: map[string]string{
				"wake.toml":       "[conductor]\nplugin = \"my-conductor\"\n\n[[providers]]\nname = \"qwen\"\npod = \"qwen\"\nplugin = \"my-provider\"\n",
				"bin/my-provider": "not a program",
			},
			want: checkRun{Code: 1, Stderr: "DIR/wake.toml: conductor.plugin: plugin my-conductor: stat DIR/bin/my-conductor: no such file or directory\n" +
				"DIR/wake.toml: providers[0].plugin: plugin my-provider: DIR/bin/my-provider is not an executable file\n"},
		},
		{
			name: "a RunPod backend beside the conductor: its plugin built in, its key set",
			files: map[string]string{"wake.toml": "[[backends]]\nname = \"rp\"\nkind = \"runpod\"\napi_key_env = \"RP_KEY\"\n\n" +
				"[[providers]]\nname = \"a\"\npod = \"qwen\"\n\n[[providers]]\nname = \"b\"\npod = \"big\"\nbackend = \"rp\"\n\n[agent]\nproviders = [\"a\"]\n"},
			env: []string{"RP_KEY=rpa_secret"},
			want: checkRun{Stdout: "DIR/wake.toml: ok (2 providers, 2 pods, 2 GPU backends, store bbolt in DIR/data, " +
				"plugins: wake-plugin-conductor built in, wake-plugin-runpod built in, wake-plugin-provider-openai built in, shutdown grace 2m13s)\n"},
		},
		{
			name: "backends: a RunPod key not set, a plugin missing, a key of another kind",
			files: map[string]string{"wake.toml": "[[backends]]\nname = \"rp\"\nkind = \"runpod\"\napi_key_env = \"RP_KEY\"\n\n" +
				"[[backends]]\nname = \"box\"\nkind = \"command\"\nplugin = \"my-command\"\nstart = [\"s\"]\nstatus = [\"t\"]\n\n" +
				"[[providers]]\nname = \"a\"\npod = \"qwen\"\nbackend = \"rp\"\n\n[[providers]]\nname = \"b\"\npod = \"big\"\nbackend = \"box\"\n\n[agent]\nproviders = [\"a\"]\n"},
			want: checkRun{Code: 1, Stderr: "DIR/wake.toml: backends[0].api_key_env: RP_KEY is not set: the RunPod backend \"rp\" reads its API key there\n" +
				"DIR/wake.toml: backends[1].plugin: plugin my-command: stat DIR/bin/my-command: no such file or directory\n"},
		},
		{
			name:     "a [[backends]] key of another kind: its line",
			files:    map[string]string{"wake.toml": "[[backends]]\nname = \"rp\"\nkind = \"runpod\"\napi_key_env = \"RP_KEY\"\nstart = [\"s\"]\n"},
			want:     checkRun{Code: 1, Stderr: "DIR/wake.toml:5: backends[0].start: not a key of a \"runpod\" backend\n"},
			prefixes: true,
		},
		{
			name:  "postgres without its connection string",
			files: map[string]string{"wake.toml": "[store]\nbackend = \"postgres\"\n"},
			want:  checkRun{Code: 1, Stderr: "store.dsn_env: WAKE_POSTGRES_DSN is not set: [store] backend = \"postgres\" reads its connection string there\n"},
		},
		{
			name:  "a data_dir that is a file",
			files: map[string]string{"wake.toml": "[server]\ndata_dir = \"state\"\n", "state": ""},
			want:  checkRun{Code: 1, Stderr: "DIR/wake.toml: server.data_dir: DIR/state is not a directory\n"},
		},
		{
			name: "a missing file",
			want: checkRun{Code: 1, Stderr: "read config: open DIR/wake.toml: no such file or directory\n"},
		},
		{
			name:  "a directory",
			files: map[string]string{"wake.toml/": ""},
			want:  checkRun{Code: 1, Stderr: "read config: read DIR/wake.toml: is a directory\n"},
		},
		{
			name: "unexpected arguments",
			args: []string{"-config", "wake.toml", "extra"},
			want: checkRun{Code: 2, Stderr: "wakehost check: unexpected arguments: [\"extra\"]\n"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			fill := func(s string) string {
				return strings.NewReplacer("DIR", dir, "ADDR", busy.Addr().String()).Replace(s)
			}
			for name, content := range tt.files {
				path := filepath.Join(dir, name)
				if strings.HasSuffix(name, "/") {
					if err := os.MkdirAll(path, 0o755); err != nil {
						t.Fatal(err)
					}
					continue
				}
				if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, []byte(fill(content)), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			for _, name := range tt.exec {
				if err := os.Chmod(filepath.Join(dir, name), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			before := listDir(t, dir)
			args := tt.args
			if args == nil {
				path := tt.path
				if path == "" {
					path = filepath.Join(dir, "wake.toml")
				}
				args = []string{"-config", path}
			}
			cmd := exec.Command(wakehostBin, append([]string{"check"}, args...)...)
			cmd.Dir = dir
			cmd.Env = append([]string{}, tt.env...)
			got := runCheck(t, cmd)
			want := tt.want
			want.Stdout, want.Stderr = fill(want.Stdout), fill(want.Stderr)
			if tt.prefixes {
				got.Stderr = cutLines(got.Stderr, want.Stderr)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("wakehost check (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(before, listDir(t, dir)); diff != "" {
				t.Errorf("check changed its directory (-before +after):\n%s", diff)
			}
		})
	}
}

// A config the host may not read fails the check with exit status 1 and
// the reason. As root, who reads any file, the check runs as nobody.
func TestCheckPermissionDenied(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "wake.toml")
	if err := os.WriteFile(path, nil, 0o000); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(wakehostBin, "check", "-config", path)
	cmd.Env = []string{}
	if os.Geteuid() == 0 {
		// nobody must reach the binary and the directory, not the file.
		for _, d := range []string{filepath.Dir(wakehostBin), dir, filepath.Dir(dir)} {
			if err := os.Chmod(d, 0o755); err != nil {
				t.Fatal(err)
			}
		}
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	}
	want := checkRun{Code: 1, Stderr: "read config: open " + path + ": permission denied\n"}
	if diff := cmp.Diff(want, runCheck(t, cmd)); diff != "" {
		t.Errorf("wakehost check (-want +got):\n%s", diff)
	}
}

// cutLines cuts each line of got to the length of the same line of want,
// where it starts with it.
func cutLines(got, want string) string {
	g, w := strings.Split(got, "\n"), strings.Split(want, "\n")
	for i := range min(len(g), len(w)) {
		if strings.HasPrefix(g[i], w[i]) {
			g[i] = w[i]
		}
	}
	return strings.Join(g, "\n")
}

// runCheck runs cmd and returns what it printed and its exit status.
func runCheck(t *testing.T, cmd *exec.Cmd) checkRun {
	t.Helper()
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	var got checkRun
	if err := cmd.Run(); err != nil {
		var exit *exec.ExitError
		if !errors.As(err, &exit) {
			t.Fatalf("wakehost check: %v", err)
		}
		got.Code = exit.ExitCode()
	}
	got.Stdout, got.Stderr = stdout.String(), stderr.String()
	return got
}

// listDir is every path under dir, relative to it.
func listDir(t *testing.T, dir string) []string {
	t.Helper()
	var paths []string
	err := filepath.WalkDir(dir, func(path string, _ os.DirEntry, err error) error {
		rel, _ := filepath.Rel(dir, path)
		paths = append(paths, rel)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return paths
}
