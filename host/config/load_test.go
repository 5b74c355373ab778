package config

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/wakeonchat/wakeonchat/machines"
)

// resolved is DefaultConfig as Parse returns it for an empty file in dir.
func resolved(dir string) Config {
	c := DefaultConfig()
	c.Server.DataDir = filepath.Join(dir, "data")
	c.Plugins.Dir = filepath.Join(dir, "bin")
	return c
}

// fullFile sets every key to something other than its default.
const fullFile = `
[server]
listen = ":9090"
data_dir = "/var/lib/wake"
max_body_bytes = 4096
admin_listen = "127.0.0.1:9091"
events_keepalive = "25s"
max_event_streams = 50

[plugins]
dir = "/opt/wake/plugins"

[conductor]
plugin = "conductor-plugin"
url = "https://conductor.internal:8443/base"
start_timeout = "5s"
lookup_timeout = "1500ms"

[timings]
wake_window = "10m"
loading_ceiling = "25m"
wake_watch = "40m"
watch_poll = "30s"
probe_interval = "2s"
expected_wake = "8m"
pod_idle_stop = "20m"
ready_slack = "2m"
completion_timeout = "90s"

[[providers]]
name = "llama"
plugin = "llama-plugin"
pod = "llama-70b"
base_url = ""
path = "/api/v1"
model = "llama-3-70b"
api_key_env = "LLAMA_KEY"

[[providers]]
name = "backup"
base_url = "https://llm.example.internal"
model = "small"

[agent]
providers = ["llama", "backup"]
system_prompt = """
You are Rig-E.
Be brief."""
history_messages = 0
history_bytes = 1000

[store]
backend = "postgres"
dsn_env = "WAKE_DB"
lease = "3s"
history_max_age = "48h"
history_max_sessions = 50
prune_interval = "1m"
session_history_bytes = 4000

[openai]
cold_start = "hold"
hold_max = "5m"
keepalive = "10s"
api_keys_env = "DOOR_KEYS"
cors_origins = ["https://chat.example.com", "http://localhost:3000"]

[replies]
waking = "w {{.ExpectedMinutes}}"
still_waking = "sw {{.ElapsedMinutes}}"
still_waking_late = "swl {{.EtaMinutes}} {{.RemainingMinutes}} {{.EtaAt}}"
rewake = "rw"
loading = "l"
loading_waking = "lw {{.ElapsedMinutes}}"
stuck = "s {{.LoadingMinutes}}"
crashed = "c {{.ReadyAt}}"
unreadable = "u"
ready_then_stopped = "rts {{.ReadyAt}} {{.IdleMinutes}}"
never_ready = "nr {{.WakeRequestedAt}}"
refused = "r {{.Status}}"
wake_failed = "wf"
resume_waiting = "rsw {{.Pod}}"
idle_stopped = "is {{.EtaMinutes}}"
`

func TestParse(t *testing.T) {
	const dir = "/etc/wake"
	tests := []struct {
		name string
		file string
		want func() Config
	}{
		{
			name: "empty file gives the defaults",
			file: "",
			want: func() Config { return resolved(dir) },
		},
		{
			name: "comments only",
			file: "# nothing set\n\n",
			want: func() Config { return resolved(dir) },
		},
		{
			name: "one key overrides one default; the rest of its table stays",
			file: "[timings]\nwake_window = \"20m\"\nwake_watch = \"45m\"\n",
			want: func() Config {
				c := resolved(dir)
				c.Timings.WakeWindow = Duration{20 * time.Minute}
				c.Timings.WakeWatch = Duration{45 * time.Minute}
				return c
			},
		},
		{
			name: "dotted keys and inline tables are the same keys",
			file: "timings.watch_poll = \"2m\"\nserver = { listen = \"0.0.0.0:80\" }\n",
			want: func() Config {
				c := resolved(dir)
				c.Timings.WatchPoll = Duration{2 * time.Minute}
				c.Server.Listen = "0.0.0.0:80"
				return c
			},
		},
		{
			name: "every key",
			file: fullFile,
			want: func() Config {
				return Config{
					Server:  Server{Listen: ":9090", DataDir: "/var/lib/wake", MaxBodyBytes: 4096, AdminListen: "127.0.0.1:9091", EventsKeepalive: Duration{25 * time.Second}, MaxEventStreams: 50},
					Plugins: Plugins{Dir: "/opt/wake/plugins"},
					Conductor: Conductor{
						Plugin:        "conductor-plugin",
						URL:           "https://conductor.internal:8443/base",
						StartTimeout:  Duration{5 * time.Second},
						LookupTimeout: Duration{1500 * time.Millisecond},
					},
					Timings: Timings{
						WakeWindow:        Duration{10 * time.Minute},
						LoadingCeiling:    Duration{25 * time.Minute},
						WakeWatch:         Duration{40 * time.Minute},
						WatchPoll:         Duration{30 * time.Second},
						ProbeInterval:     Duration{2 * time.Second},
						ExpectedWake:      Duration{8 * time.Minute},
						PodIdleStop:       Duration{20 * time.Minute},
						ReadySlack:        Duration{2 * time.Minute},
						CompletionTimeout: Duration{90 * time.Second},
					},
					Providers: []Provider{
						{Name: "llama", Plugin: "llama-plugin", Pod: "llama-70b", Path: "/api/v1", Model: "llama-3-70b", APIKeyEnv: "LLAMA_KEY"},
						// plugin and path left out: their defaults
						{Name: "backup", Plugin: DefaultProviderPlugin, BaseURL: "https://llm.example.internal", Path: DefaultProviderPath, Model: "small"},
					},
					Agent: Agent{
						Providers:       []string{"llama", "backup"},
						SystemPrompt:    "You are Rig-E.\nBe brief.",
						HistoryMessages: 0,
						HistoryBytes:    1000,
					},
					Store: Store{
						Backend:             BackendPostgres,
						DSNEnv:              "WAKE_DB",
						Lease:               Duration{3 * time.Second},
						HistoryMaxAge:       Duration{48 * time.Hour},
						HistoryMaxSessions:  50,
						PruneInterval:       Duration{time.Minute},
						SessionHistoryBytes: 4000,
					},
					OpenAI: OpenAI{
						ColdStart:   "hold",
						HoldMax:     Duration{5 * time.Minute},
						Keepalive:   Duration{10 * time.Second},
						APIKeysEnv:  "DOOR_KEYS",
						CORSOrigins: []string{"https://chat.example.com", "http://localhost:3000"},
					},
					Replies: map[machines.ReplyKey]string{
						"waking": "w {{.ExpectedMinutes}}", "still_waking": "sw {{.ElapsedMinutes}}",
						"still_waking_late": "swl {{.EtaMinutes}} {{.RemainingMinutes}} {{.EtaAt}}", "rewake": "rw",
						"loading": "l", "loading_waking": "lw {{.ElapsedMinutes}}", "stuck": "s {{.LoadingMinutes}}", "crashed": "c {{.ReadyAt}}",
						"unreadable": "u", "ready_then_stopped": "rts {{.ReadyAt}} {{.IdleMinutes}}",
						"never_ready": "nr {{.WakeRequestedAt}}", "refused": "r {{.Status}}", "wake_failed": "wf",
						"resume_waiting": "rsw {{.Pod}}", "idle_stopped": "is {{.EtaMinutes}}",
					},
				}
			},
		},
		{
			// Decoded naively, this table would land on the default
			// provider's slot and keep its pod next to the new base_url.
			name: "[[providers]] replace the default provider, not merge into it",
			file: `
[[providers]]
name = "remote"
base_url = "http://10.0.0.5:8000"

[agent]
providers = ["remote"]
`,
			want: func() Config {
				c := resolved(dir)
				c.Providers = []Provider{{Name: "remote", Plugin: DefaultProviderPlugin, BaseURL: "http://10.0.0.5:8000", Path: DefaultProviderPath}}
				c.Agent.Providers = []string{"remote"}
				return c
			},
		},
		{
			name: "a provider may set path to empty",
			file: "[[providers]]\nname = \"qwen\"\npod = \"qwen\"\npath = \"\"\n",
			want: func() Config {
				c := resolved(dir)
				c.Providers = []Provider{{Name: "qwen", Plugin: DefaultProviderPlugin, Pod: "qwen"}}
				return c
			},
		},
		{
			name: "inline array of provider tables",
			file: `providers = [{name = "a", pod = "a"}, {name = "b", pod = "b", plugin = "p"}]
agent.providers = ["b", "a"]
`,
			want: func() Config {
				c := resolved(dir)
				c.Providers = []Provider{
					{Name: "a", Plugin: DefaultProviderPlugin, Pod: "a", Path: DefaultProviderPath},
					{Name: "b", Plugin: "p", Pod: "b", Path: DefaultProviderPath},
				}
				c.Agent.Providers = []string{"b", "a"}
				return c
			},
		},
		{
			name: "without a pod the conductor url may be empty",
			file: "[conductor]\nurl = \"\"\n[[providers]]\nname = \"qwen\"\nbase_url = \"https://x.internal\"\n",
			want: func() Config {
				c := resolved(dir)
				c.Conductor.URL = ""
				c.Providers = []Provider{{Name: "qwen", Plugin: DefaultProviderPlugin, BaseURL: "https://x.internal", Path: DefaultProviderPath}}
				return c
			},
		},
		{
			name: "relative dirs resolve against the config directory",
			file: "[server]\ndata_dir = \"../state/wake\"\n[plugins]\ndir = \"./plugins\"\n",
			want: func() Config {
				c := resolved(dir)
				c.Server.DataDir = "/etc/state/wake"
				c.Plugins.Dir = "/etc/wake/plugins"
				return c
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Parse([]byte(tt.file), dir)
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if diff := cmp.Diff(tt.want(), got); diff != "" {
				t.Errorf("Parse (-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseRelativeDir(t *testing.T) {
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{"", "conf"} {
		got, err := Parse(nil, dir)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(resolved(filepath.Join(wd, dir)), got); diff != "" {
			t.Errorf("Parse(nil, %q) (-want +got):\n%s", dir, diff)
		}
	}
}

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "wake.toml")
	if err := os.WriteFile(path, []byte("[server]\ndata_dir = \"state\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Chdir(dir)

	got, err := Load("wake.toml") // relative: Path still comes back absolute
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	want := resolved(dir)
	want.Server.DataDir = filepath.Join(dir, "state")
	want.Path = path
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Load (-want +got):\n%s", diff)
	}
	if got, want := got.DataDir(), filepath.Join(dir, "state"); got != want {
		t.Errorf("DataDir() = %q, want %q", got, want)
	}
	if got, want := got.PluginPath("wake-plugin-conductor"), filepath.Join(dir, "bin", "wake-plugin-conductor"); got != want {
		t.Errorf("PluginPath() = %q, want %q", got, want)
	}
}

func TestLoadMissingFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "nowhere", "wake.toml")
	c, err := Load(path)
	if err == nil {
		t.Fatal("Load of a missing file succeeded")
	}
	if !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("error %v is not fs.ErrNotExist", err)
	}
	if want := "read config: open " + path + ": no such file or directory"; err.Error() != want {
		t.Errorf("error = %q, want %q", err, want)
	}
	if diff := cmp.Diff(Config{}, c); diff != "" {
		t.Errorf("config on error (-want +got):\n%s", diff)
	}
}

// Load's errors name the file, compiler-style, and are *Error values.
func TestLoadErrorsNameTheFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "wake.toml")
	file := "[timings]\nwake_windw = \"1m\"\nwake_watch = \"5m\"\n\n[server]\nlisten = \n"
	for _, tt := range []struct {
		name, file string
		want       []string
	}{
		{
			name: "unknown key",
			file: "[timings]\nwake_windw = \"1m\"\n",
			want: []string{path + `:2: unknown key "timings.wake_windw"`},
		},
		{
			name: "malformed",
			file: file,
			want: []string{path + `:6:10: invalid TOML: expected value but found '\n' instead`},
		},
		{
			name: "invalid values, with a line where the file sets the key",
			file: "[timings]\nwake_watch = \"5m\"\n[[providers]]\nname = \"x\"\n",
			want: []string{
				path + ":2: timings.wake_watch: must be at least timings.wake_window (15m0s)",
				path + ": providers[0].pod: set exactly one of pod or base_url",
				path + `: agent.providers[0]: "qwen" is not the name of a provider`,
			},
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if err := os.WriteFile(path, []byte(tt.file), 0o600); err != nil {
				t.Fatal(err)
			}
			_, err := Load(path)
			if diff := cmp.Diff(tt.want, messages(err)); diff != "" {
				t.Errorf("Load errors (-want +got):\n%s", diff)
			}
			for _, e := range unjoin(err) {
				var ce *Error
				if !errors.As(e, &ce) || ce.File != path {
					t.Errorf("error %v: not an *Error with File %q", e, path)
				}
			}
		})
	}
}

// messages splits a joined error into its messages; nil for nil.
func messages(err error) []string {
	if err == nil {
		return nil
	}
	return strings.Split(err.Error(), "\n")
}
