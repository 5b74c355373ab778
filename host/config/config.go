package config

import (
	"path/filepath"
	"time"

	"github.com/wakeonchat/wakeonchat/machines"
)

// Config is the host's whole configuration. Its zero value is not useful;
// start from [DefaultConfig], whose every field holds the default stated in
// the field's comment. [Load] returns it resolved and validated.
type Config struct {
	Server    Server    `toml:"server"`
	Plugins   Plugins   `toml:"plugins"`
	Conductor Conductor `toml:"conductor"`
	// Backends are the GPU backends beside the [conductor] table's (see
	// GPUBackends); default none. Each [[backends]] table is decoded over
	// DefaultBackend of its kind.
	Backends  []Backend  `toml:"backends"`
	Timings   Timings    `toml:"timings"`
	Providers []Provider `toml:"providers"` // default: one provider, "qwen" (see DefaultProvider); a file's [[providers]] replace it
	Agent     Agent      `toml:"agent"`
	Store     Store      `toml:"store"`
	OpenAI    OpenAI     `toml:"openai"`

	// Replies are the wake policy's reply texts by key, as text/template
	// sources rendered with [machines.ReplyData]; default
	// [machines.DefaultReplies]. A file's [replies] entries override single
	// keys; a key machines does not list is an error.
	Replies map[machines.ReplyKey]string `toml:"replies"`

	// Path is the absolute path of the file Load read; "" for
	// DefaultConfig. It is set by Load, never by the file.
	Path string `toml:"-"`
}

// Server is the host's own HTTP server.
type Server struct {
	Listen       string `toml:"listen"`         // host:port to listen on; default "127.0.0.1:8080"
	DataDir      string `toml:"data_dir"`       // where the host keeps its state; default "data", relative to the config file's directory
	MaxBodyBytes int64  `toml:"max_body_bytes"` // the largest request body accepted; default 1048576 (1 MiB)
	// AdminListen is the host:port of a second HTTP server that serves the
	// operators' surface (GET /metrics, the status page at GET /, and the
	// pod event streams the page follows) and nothing else; the main
	// listener then does not serve /metrics or the page. Default "": the
	// main listener serves them.
	AdminListen string `toml:"admin_listen"`
	// EventsKeepalive is how often an open pod event stream
	// (GET /api/pods/{name}/events) gets an SSE comment, in wall time, so
	// that proxies do not cut it as silent; default 15s.
	EventsKeepalive Duration `toml:"events_keepalive"`
	// MaxEventStreams is how many pod event streams may be open at once,
	// over both listeners; one more is refused with a 503 until one ends.
	// Each costs about 36 KB and a file descriptor for as long as its
	// client keeps it. Held OpenAI requests are not counted: each is a
	// request of the door, held at most [openai] hold_max. Default 1000:
	// about 36 MB, and room beside it for the turns, plugins and store
	// under a 4096 descriptor limit.
	MaxEventStreams int `toml:"max_event_streams"`
}

// Plugins says where the separate plugin binaries are.
type Plugins struct {
	// Dir is the directory of the plugin binaries; default "bin", relative
	// to the config file's directory. A plugin name with no file there that
	// wakehost has built in (the defaults of conductor.plugin and
	// providers[].plugin) runs from wakehost's own executable; a file there
	// takes precedence.
	Dir string `toml:"dir"`
}

// Conductor is the service that knows the GPU pods and wakes them: the
// GPU backend named "conductor" (see GPUBackends), of every provider whose
// backend is not set.
type Conductor struct {
	Plugin        string   `toml:"plugin"`         // plugin (a file name in Plugins.Dir, or built in) that talks to it; default "wake-plugin-conductor"
	URL           string   `toml:"url"`            // its base URL; default "http://127.0.0.1:8081"; required when a provider has a pod
	StartTimeout  Duration `toml:"start_timeout"`  // cap on one start (wake) request; default 3s (the conductor keeps waking after it)
	LookupTimeout Duration `toml:"lookup_timeout"` // cap on one pod lookup; default 3s
}

// Timings are the wake policy's durations; see [machines.Timings], whose
// defaults they take.
type Timings struct {
	WakeWindow        Duration `toml:"wake_window"`        // an ask within it waits, beyond it wakes again; default from machines.DefaultTimings
	LoadingCeiling    Duration `toml:"loading_ceiling"`    // loading this long is called stuck; default from machines.DefaultTimings
	WakeWatch         Duration `toml:"wake_watch"`         // a wake not ready by then is recorded never-ready; default from machines.DefaultTimings
	WatchPoll         Duration `toml:"watch_poll"`         // how often a watched wake's pod is read; default 5s
	ProbeInterval     Duration `toml:"probe_interval"`     // how often a watched wake's model is probed once its pod is RUNNING, and each probe's cap; default 1s
	ExpectedWake      Duration `toml:"expected_wake"`      // how long a wake usually takes, for the replies; default from machines.DefaultTimings
	PodIdleStop       Duration `toml:"pod_idle_stop"`      // how long the pod idles before it stops itself, for the replies; default from machines.DefaultTimings
	ReadySlack        Duration `toml:"ready_slack"`        // a readySince this much before the wake still counts; default from machines.DefaultTimings
	CompletionTimeout Duration `toml:"completion_timeout"` // cap on one completion request to a provider; default 120s
}

// Provider is one LLM endpoint, reached through a provider plugin.
type Provider struct {
	Name      string `toml:"name"`        // what agent.providers calls it: lowercase letters, digits, "_" and "-"; required
	Plugin    string `toml:"plugin"`      // plugin (a file name in Plugins.Dir, or built in); default "wake-plugin-provider-openai"
	Pod       string `toml:"pod"`         // the GPU backend's name for its pod; the endpoint is resolved through the backend. Set this or BaseURL
	Backend   string `toml:"backend"`     // with Pod: the name of the pod's GPU backend (a [[backends]] name); default "", the [conductor] table's
	BaseURL   string `toml:"base_url"`    // a literal endpoint, for a provider that never sleeps. Set this or Pod
	Path      string `toml:"path"`        // API path under the endpoint; default "/v1"
	Model     string `toml:"model"`       // model name sent with each request; default ""
	APIKeyEnv string `toml:"api_key_env"` // NAME of the environment variable holding the API key (never the key); "" for none
}

// Agent is how the host talks to the providers.
type Agent struct {
	Providers       []string `toml:"providers"`        // provider names, in fallback order; default ["qwen"]
	SystemPrompt    string   `toml:"system_prompt"`    // default "You are a helpful assistant."
	HistoryMessages int      `toml:"history_messages"` // earlier messages sent with each turn; 0 sends none; default 20
	HistoryBytes    int      `toml:"history_bytes"`    // the most bytes of earlier messages sent with each turn (the newest that fit); 0 sends none; default 262144 (256 KiB)
}

// Store is where the host keeps its state, and how long it keeps
// conversation history.
type Store struct {
	Backend            string   `toml:"backend"`              // "bbolt" (the file wake.db in data_dir, one host) or "postgres" (a database several replicas share); default "bbolt"
	DSNEnv             string   `toml:"dsn_env"`              // NAME of the environment variable holding the PostgreSQL connection string (never the string); default "WAKE_POSTGRES_DSN"
	Lease              Duration `toml:"lease"`                // postgres: how long a replica's hold on a wake's watch or a session's turn outlives its last renewal; default 10s
	HistoryMaxAge      Duration `toml:"history_max_age"`      // sessions whose last turn is older are pruned; 0 keeps any age; default 720h (30 days)
	HistoryMaxSessions int      `toml:"history_max_sessions"` // only the newest this many sessions are kept; 0 keeps any number; default 10000
	// SessionHistoryBytes bounds what one session keeps: the newest turns
	// whose messages take at most this many bytes as stored; at least
	// [agent] history_bytes; default 1048576 (1 MiB, 4 x history_bytes).
	SessionHistoryBytes int      `toml:"session_history_bytes"`
	PruneInterval       Duration `toml:"prune_interval"` // how often pruning runs; default 10m
}

// The store backends.
const (
	BackendBbolt    = "bbolt"
	BackendPostgres = "postgres"
)

// Defaults of a [[providers]] table's keys that have one.
const (
	DefaultProviderPlugin = "wake-plugin-provider-openai"
	DefaultProviderPath   = "/v1"
)

// DefaultConductorPlugin is conductor.plugin's default. It and
// DefaultProviderPlugin are the plugins built into wakehost: a name with no
// file in plugins.dir runs from the host's own executable.
const DefaultConductorPlugin = "wake-plugin-conductor"

// DefaultProvider is the provider DefaultConfig configures: the
// self-hosted model on the GPU pod "qwen", resolved through the conductor.
func DefaultProvider() Provider {
	return Provider{
		Name:      "qwen",
		Plugin:    DefaultProviderPlugin,
		Pod:       "qwen",
		Path:      DefaultProviderPath,
		Model:     "qwen",
		APIKeyEnv: "QWEN_API_KEY",
	}
}

// DefaultConfig returns the configuration used for every key wake.toml does
// not set. It is valid: the conductor URL defaults to the loopback
// ("http://127.0.0.1:8081", a port-forwarded or local conductor) so a fresh
// checkout starts; a deployment sets its conductor's address. The
// directories are relative until Load resolves them.
func DefaultConfig() Config {
	t := machines.DefaultTimings()
	return Config{
		Server: Server{
			Listen:          "127.0.0.1:8080",
			DataDir:         "data",
			MaxBodyBytes:    1 << 20,
			EventsKeepalive: Duration{15 * time.Second},
			MaxEventStreams: 1000,
		},
		Plugins: Plugins{Dir: "bin"},
		Conductor: Conductor{
			Plugin:        DefaultConductorPlugin,
			URL:           "http://127.0.0.1:8081",
			StartTimeout:  Duration{3 * time.Second},
			LookupTimeout: Duration{3 * time.Second},
		},
		Timings: Timings{
			WakeWindow:        Duration{t.WakeWindow},
			LoadingCeiling:    Duration{t.LoadingCeiling},
			WakeWatch:         Duration{t.WakeWatch},
			WatchPoll:         Duration{5 * time.Second},
			ProbeInterval:     Duration{time.Second},
			ExpectedWake:      Duration{t.ExpectedWake},
			PodIdleStop:       Duration{t.PodIdleStop},
			ReadySlack:        Duration{t.ReadySlack},
			CompletionTimeout: Duration{120 * time.Second},
		},
		Providers: []Provider{DefaultProvider()},
		Agent: Agent{
			Providers:       []string{"qwen"},
			SystemPrompt:    "You are a helpful assistant.",
			HistoryMessages: 20,
			HistoryBytes:    256 << 10,
		},
		Store: Store{
			Backend:            BackendBbolt,
			DSNEnv:             "WAKE_POSTGRES_DSN",
			Lease:              Duration{10 * time.Second},
			HistoryMaxAge:      Duration{30 * 24 * time.Hour},
			HistoryMaxSessions: 10000,
			PruneInterval:      Duration{10 * time.Minute},
			// Four times HistoryBytes: what a turn is sent, with room.
			SessionHistoryBytes: 1 << 20,
		},
		OpenAI:  DefaultOpenAI(),
		Replies: machines.DefaultReplies(),
	}
}

// MachineTimings returns the timings the wake policy decides by.
func (c Config) MachineTimings() machines.Timings {
	t := c.Timings
	return machines.Timings{
		WakeWindow:     t.WakeWindow.Duration,
		LoadingCeiling: t.LoadingCeiling.Duration,
		WakeWatch:      t.WakeWatch.Duration,
		ExpectedWake:   t.ExpectedWake.Duration,
		PodIdleStop:    t.PodIdleStop.Duration,
		ReadySlack:     t.ReadySlack.Duration,
	}
}

// MachinePolicy is the pod machine's policy the file gives: its timings,
// its parsed replies and how they name each pod's GPU backend.
func (c Config) MachinePolicy() (machines.Policy, error) {
	replies, err := c.ParsedReplies()
	if err != nil {
		return machines.Policy{}, err
	}
	backends := map[string]string{}
	for _, b := range c.GPUBackends() {
		for _, p := range c.Providers {
			if p.Pod != "" && BackendOf(p) == b.Name {
				backends[p.Pod] = b.Called()
			}
		}
	}
	return machines.Policy{Timings: c.MachineTimings(), Replies: replies, Backends: backends}, nil
}

// ParsedReplies parses the reply templates. For a Config from Load
// it cannot fail: validation already parsed and rendered them. Errors are
// *Error naming the key, e.g. "replies.still_waking".
func (c Config) ParsedReplies() (*machines.Replies, error) {
	r, errs := c.parseReplies()
	return r, join(errs)
}

// PluginPath returns the path of the plugin binary name: Plugins.Dir joined
// with name, absolute (Load resolves Plugins.Dir against the config file's
// directory; an unresolved relative Plugins.Dir is taken from the working
// directory).
func (c Config) PluginPath(name string) string { return filepath.Join(c.abs(c.Plugins.Dir), name) }

// DataDir returns Server.DataDir as an absolute path, resolved like
// PluginPath's directory.
func (c Config) DataDir() string { return c.abs(c.Server.DataDir) }

func (c Config) abs(p string) string {
	switch {
	case filepath.IsAbs(p):
		return filepath.Clean(p)
	case c.Path != "":
		return filepath.Join(filepath.Dir(c.Path), p)
	}
	if a, err := filepath.Abs(p); err == nil {
		return a
	}
	return p
}
