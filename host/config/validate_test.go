package config

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/wakeonchat/wakeonchat/machines"
)

func TestValidate(t *testing.T) {
	min := func(m int) Duration { return Duration{time.Duration(m) * time.Minute} }
	tests := []struct {
		name   string
		change func(c *Config)
		want   []string // nil: valid
	}{
		{name: "defaults", change: func(c *Config) {}},

		// [server]
		{name: "listen on every interface", change: func(c *Config) { c.Server.Listen = ":8080" }},
		{name: "listen on IPv6", change: func(c *Config) { c.Server.Listen = "[::1]:8080" }},
		{name: "listen on a host name, any port", change: func(c *Config) { c.Server.Listen = "localhost:0" }},
		{
			name:   "listen without a port",
			change: func(c *Config) { c.Server.Listen = "127.0.0.1" },
			want:   []string{`server.listen: "127.0.0.1": must be host:port, such as "127.0.0.1:8080" or ":8080"`},
		},
		{
			name:   "listen port out of range",
			change: func(c *Config) { c.Server.Listen = "127.0.0.1:65536" },
			want:   []string{`server.listen: "127.0.0.1:65536": must be host:port, such as "127.0.0.1:8080" or ":8080"`},
		},
		{
			name:   "listen port by name",
			change: func(c *Config) { c.Server.Listen = "127.0.0.1:http" },
			want:   []string{`server.listen: "127.0.0.1:http": must be host:port, such as "127.0.0.1:8080" or ":8080"`},
		},
		{
			name:   "listen on a URL",
			change: func(c *Config) { c.Server.Listen = "http://x:80" },
			want:   []string{`server.listen: "http://x:80": must be host:port, such as "127.0.0.1:8080" or ":8080"`},
		},
		{name: "admin on another port", change: func(c *Config) { c.Server.AdminListen = "127.0.0.1:9090" }},
		{name: "admin and main on any free port", change: func(c *Config) { c.Server.Listen, c.Server.AdminListen = "127.0.0.1:0", "127.0.0.1:0" }},
		{
			name:   "admin on the main address",
			change: func(c *Config) { c.Server.AdminListen = c.Server.Listen },
			want:   []string{"server.admin_listen: must differ from server.listen (leave it empty to serve /metrics and the status page on server.listen)"},
		},
		{
			name:   "admin without a port",
			change: func(c *Config) { c.Server.AdminListen = "127.0.0.1" },
			want:   []string{`server.admin_listen: "127.0.0.1": must be host:port, such as "127.0.0.1:8080" or ":8080"`},
		},
		{
			name:   "events keepalive zero",
			change: func(c *Config) { c.Server.EventsKeepalive = Duration{0} },
			want:   []string{"server.events_keepalive: must be positive"},
		},
		{
			name:   "events keepalive negative",
			change: func(c *Config) { c.Server.EventsKeepalive = Duration{-time.Second} },
			want:   []string{"server.events_keepalive: must be positive"},
		},
		{
			name:   "no event streams",
			change: func(c *Config) { c.Server.MaxEventStreams = 0 },
			want:   []string{"server.max_event_streams: must be positive"},
		},
		{
			name:   "event streams negative",
			change: func(c *Config) { c.Server.MaxEventStreams = -1 },
			want:   []string{"server.max_event_streams: must be positive"},
		},
		{
			name:   "no data dir",
			change: func(c *Config) { c.Server.DataDir = "" },
			want:   []string{"server.data_dir: must not be empty"},
		},
		{
			name:   "max body zero",
			change: func(c *Config) { c.Server.MaxBodyBytes = 0 },
			want:   []string{"server.max_body_bytes: must be positive"},
		},

		// [plugins]
		{
			name:   "no plugins dir",
			change: func(c *Config) { c.Plugins.Dir = "" },
			want:   []string{"plugins.dir: must not be empty"},
		},

		// [conductor]
		{
			name:   "conductor plugin empty",
			change: func(c *Config) { c.Conductor.Plugin = "" },
			want:   []string{"conductor.plugin: must not be empty"},
		},
		{
			name:   "conductor plugin is a path",
			change: func(c *Config) { c.Conductor.Plugin = "../bin/conductor" },
			want:   []string{`conductor.plugin: "../bin/conductor": must be a file name in plugins.dir, not a path`},
		},
		{
			name:   "conductor plugin is ..",
			change: func(c *Config) { c.Conductor.Plugin = ".." },
			want:   []string{`conductor.plugin: "..": must be a file name in plugins.dir, not a path`},
		},
		{
			name:   "conductor plugin has a backslash",
			change: func(c *Config) { c.Conductor.Plugin = `bin\conductor` },
			want:   []string{`conductor.plugin: "bin\\conductor": must be a file name in plugins.dir, not a path`},
		},
		{
			name:   "conductor url required by a pod",
			change: func(c *Config) { c.Conductor.URL = "" },
			want:   []string{"conductor.url: must be set when a provider has a pod"},
		},
		{
			name: "conductor url not needed without a pod",
			change: func(c *Config) {
				c.Conductor.URL = ""
				c.Providers[0].Pod, c.Providers[0].BaseURL = "", "https://llm.internal"
			},
		},
		{
			name:   "conductor url with a path",
			change: func(c *Config) { c.Conductor.URL = "https://ops.internal/conductor/" },
		},
		{
			name:   "conductor url not http",
			change: func(c *Config) { c.Conductor.URL = "ftp://conductor.internal" },
			want:   []string{"conductor.url: must be an absolute http or https URL"},
		},
		{
			name:   "conductor url relative",
			change: func(c *Config) { c.Conductor.URL = "conductor.internal:8080" },
			want:   []string{"conductor.url: must be an absolute http or https URL"},
		},
		{
			name:   "conductor url without a host",
			change: func(c *Config) { c.Conductor.URL = "http:///api" },
			want:   []string{"conductor.url: must be an absolute http or https URL with a host"},
		},
		{
			name:   "conductor url that does not parse",
			change: func(c *Config) { c.Conductor.URL = "http://conductor internal" },
			want:   []string{"conductor.url: must be an absolute http or https URL (it does not parse)"},
		},
		{
			name:   "conductor url with credentials",
			change: func(c *Config) { c.Conductor.URL = "http://admin:hunter2@conductor.internal" },
			want:   []string{"conductor.url: must not contain credentials (the file holds no secrets; use the environment)"},
		},
		{
			name:   "conductor url with a query",
			change: func(c *Config) { c.Conductor.URL = "http://conductor.internal/?token=hunter2" },
			want:   []string{"conductor.url: must not have a query or fragment"},
		},
		{
			name:   "conductor url with an empty query",
			change: func(c *Config) { c.Conductor.URL = "http://conductor.internal/?" },
			want:   []string{"conductor.url: must not have a query or fragment"},
		},
		{
			name:   "conductor url with a fragment",
			change: func(c *Config) { c.Conductor.URL = "http://conductor.internal/#x" },
			want:   []string{"conductor.url: must not have a query or fragment"},
		},
		{
			name: "conductor timeouts",
			change: func(c *Config) {
				c.Conductor.StartTimeout = Duration{}
				c.Conductor.LookupTimeout = Duration{-time.Second}
			},
			want: []string{"conductor.start_timeout: must be positive", "conductor.lookup_timeout: must be positive"},
		},

		// [timings]
		{
			name:   "every timing zero",
			change: func(c *Config) { c.Timings = Timings{} },
			want: []string{
				"timings.wake_window: must be positive",
				"timings.loading_ceiling: must be positive",
				"timings.wake_watch: must be positive",
				"timings.watch_poll: must be positive",
				"timings.probe_interval: must be positive",
				"timings.expected_wake: must be positive",
				"timings.pod_idle_stop: must be positive",
				"timings.ready_slack: must be positive",
				"timings.completion_timeout: must be positive",
			},
		},
		{
			name:   "negative loading ceiling",
			change: func(c *Config) { c.Timings.LoadingCeiling = min(-1) },
			want:   []string{"timings.loading_ceiling: must be positive"},
		},
		{
			name:   "wake watch shorter than the window",
			change: func(c *Config) { c.Timings.WakeWatch = min(14) },
			want:   []string{"timings.wake_watch: must be at least timings.wake_window (15m0s)"},
		},
		{
			name:   "wake watch equal to the window",
			change: func(c *Config) { c.Timings.WakeWatch = min(15) },
		},
		{
			name:   "ready slack as long as the window",
			change: func(c *Config) { c.Timings.ReadySlack = min(15) },
			want:   []string{"timings.ready_slack: must be less than timings.wake_window (15m0s)"},
		},
		{
			name:   "watch poll longer than the watch",
			change: func(c *Config) { c.Timings.WatchPoll = min(36) },
			want:   []string{"timings.watch_poll: must not be longer than timings.wake_watch (35m0s)"},
		},
		{
			name:   "negative probe interval",
			change: func(c *Config) { c.Timings.ProbeInterval = Duration{-time.Second} },
			want:   []string{"timings.probe_interval: must be positive"},
		},
		{
			name:   "probe interval longer than the watch",
			change: func(c *Config) { c.Timings.ProbeInterval = min(36) },
			want:   []string{"timings.probe_interval: must not be longer than timings.wake_watch (35m0s)"},
		},

		// [[providers]]
		{
			name:   "no providers",
			change: func(c *Config) { c.Providers = nil },
			want: []string{
				"providers: at least one [[providers]] table is required",
				`agent.providers[0]: "qwen" is not the name of a provider`,
			},
		},
		{
			name:   "provider without a name",
			change: func(c *Config) { c.Providers[0].Name = "" },
			want: []string{
				"providers[0].name: must not be empty",
				`agent.providers[0]: "qwen" is not the name of a provider`,
			},
		},
		{
			name: "provider name with capitals",
			change: func(c *Config) {
				c.Providers[0].Name = "Qwen"
				c.Agent.Providers = []string{"Qwen"}
			},
			want: []string{`providers[0].name: "Qwen": must be lowercase letters, digits, "_" and "-"`},
		},
		{
			name:   "duplicate provider names",
			change: func(c *Config) { c.Providers = append(c.Providers, DefaultProvider()) },
			want:   []string{`providers[1].name: "qwen" is already the name of providers[0]`},
		},
		{
			name: "pod and base_url both",
			change: func(c *Config) {
				p := DefaultProvider()
				p.Name, p.BaseURL = "second", "https://llm.internal"
				c.Providers = append(c.Providers, p)
			},
			want: []string{"providers[1].pod: set exactly one of pod or base_url"},
		},
		{
			name:   "neither pod nor base_url",
			change: func(c *Config) { c.Providers[0].Pod = "" },
			want:   []string{"providers[0].pod: set exactly one of pod or base_url"},
		},
		{
			name: "pod names",
			change: func(c *Config) {
				c.Providers = nil
				c.Agent.Providers = nil
				for i, pod := range []string{"Qwen", "qwen_2", "-qwen", "qwen-", strings.Repeat("a", 64), "q", "qwen-2-72b", strings.Repeat("a", 63)} {
					p := DefaultProvider()
					p.Name, p.Pod = string(rune('a'+i)), pod
					c.Providers = append(c.Providers, p)
					c.Agent.Providers = append(c.Agent.Providers, p.Name)
				}
			},
			want: []string{
				`providers[0].pod: "Qwen": must be lowercase letters, digits and dashes, starting and ending with a letter or digit, at most 63`,
				`providers[1].pod: "qwen_2": must be lowercase letters, digits and dashes, starting and ending with a letter or digit, at most 63`,
				`providers[2].pod: "-qwen": must be lowercase letters, digits and dashes, starting and ending with a letter or digit, at most 63`,
				`providers[3].pod: "qwen-": must be lowercase letters, digits and dashes, starting and ending with a letter or digit, at most 63`,
				`providers[4].pod: "` + strings.Repeat("a", 64) + `": must be lowercase letters, digits and dashes, starting and ending with a letter or digit, at most 63`,
			},
		},
		{
			name: "base_url not http, with credentials, with a query",
			change: func(c *Config) {
				c.Providers = nil
				c.Agent.Providers = nil
				for i, u := range []string{"llm.internal:8000", "https://sk-123:x@llm.internal", "https://llm.internal/?api_key=sk-123", "http://10.0.0.5:8000/"} {
					p := Provider{Name: string(rune('a' + i)), Plugin: DefaultProviderPlugin, BaseURL: u}
					c.Providers = append(c.Providers, p)
					c.Agent.Providers = append(c.Agent.Providers, p.Name)
				}
			},
			want: []string{
				"providers[0].base_url: must be an absolute http or https URL",
				"providers[1].base_url: must not contain credentials (the file holds no secrets; use the environment)",
				"providers[2].base_url: must not have a query or fragment",
			},
		},
		{
			name: "provider plugin",
			change: func(c *Config) {
				p := DefaultProvider()
				p.Name, p.Plugin = "second", "/usr/local/bin/plugin"
				c.Providers[0].Plugin = ""
				c.Providers = append(c.Providers, p)
			},
			want: []string{
				"providers[0].plugin: must not be empty",
				`providers[1].plugin: "/usr/local/bin/plugin": must be a file name in plugins.dir, not a path`,
			},
		},
		{
			name:   "provider path without a slash",
			change: func(c *Config) { c.Providers[0].Path = "v1" },
			want:   []string{`providers[0].path: must start with "/" and have no query or fragment`},
		},
		{
			name:   "provider path with a query",
			change: func(c *Config) { c.Providers[0].Path = "/v1?key=sk-123" },
			want:   []string{`providers[0].path: must start with "/" and have no query or fragment`},
		},
		{
			name:   "no api key",
			change: func(c *Config) { c.Providers[0].APIKeyEnv = "" },
		},
		{
			name:   "api_key_env holding a key is not quoted back",
			change: func(c *Config) { c.Providers[0].APIKeyEnv = "sk-live-0123456789" },
			want:   []string{`providers[0].api_key_env: must be the name of an environment variable (letters, digits and "_", not starting with a digit), not the key itself`},
		},
		{
			name:   "api_key_env starting with a digit",
			change: func(c *Config) { c.Providers[0].APIKeyEnv = "1KEY" },
			want:   []string{`providers[0].api_key_env: must be the name of an environment variable (letters, digits and "_", not starting with a digit), not the key itself`},
		},

		// [agent]
		{
			name:   "no agent providers",
			change: func(c *Config) { c.Agent.Providers = nil },
			want:   []string{"agent.providers: must name at least one provider"},
		},
		{
			name:   "unknown and duplicate agent providers",
			change: func(c *Config) { c.Agent.Providers = []string{"qwen", "llama", "qwen"} },
			want: []string{
				`agent.providers[1]: "llama" is not the name of a provider`,
				`agent.providers[2]: "qwen" is already agent.providers[0]`,
			},
		},
		{
			name:   "no history",
			change: func(c *Config) { c.Agent.HistoryMessages = 0 },
		},
		{
			name:   "negative history",
			change: func(c *Config) { c.Agent.HistoryMessages = -1 },
			want:   []string{"agent.history_messages: must not be negative (0 sends no history)"},
		},
		{
			name:   "no history bytes",
			change: func(c *Config) { c.Agent.HistoryBytes = 0 },
		},
		{
			name:   "negative history bytes",
			change: func(c *Config) { c.Agent.HistoryBytes = -1 },
			want:   []string{"agent.history_bytes: must not be negative (0 sends no history)"},
		},

		{
			name:   "negative history bytes",
			change: func(c *Config) { c.Agent.HistoryBytes = -1 },
			want:   []string{"agent.history_bytes: must not be negative (0 sends no history)"},
		},
		{
			name:   "no history bytes",
			change: func(c *Config) { c.Agent.HistoryBytes = 0 },
		},
		{
			// 1 MiB + history + 28 bytes of prompt + 64 KiB is one byte short of 32 MiB.
			name: "the largest request just fits a plugin message",
			change: func(c *Config) {
				c.Store.SessionHistoryBytes = 32 << 20
				c.Agent.HistoryBytes = 32<<20 - 1<<20 - 64<<10 - 28 - 1
			},
		},
		{
			name: "the largest request is as large as a plugin message",
			change: func(c *Config) {
				c.Store.SessionHistoryBytes = 32 << 20
				c.Agent.HistoryBytes = 32<<20 - 1<<20 - 64<<10 - 28
			},
			want: []string{"agent.history_bytes: server.max_body_bytes (1048576) + agent.history_bytes (32440292) + agent.system_prompt (28 bytes) + 64 KiB must be less than 32 MiB, the largest message to a plugin"},
		},
		{
			// Summed as they are, the two would wrap around to a negative size.
			name: "a body limit past a plugin message",
			change: func(c *Config) {
				c.Server.MaxBodyBytes = math.MaxInt64
				c.Agent.HistoryBytes = 1 << 62
				c.Store.SessionHistoryBytes = 1 << 62
			},
			want: []string{"server.max_body_bytes: server.max_body_bytes (9223372036854775807) + agent.history_bytes (4611686018427387904) + agent.system_prompt (28 bytes) + 64 KiB must be less than 32 MiB, the largest message to a plugin"},
		},
		{
			name: "a system prompt past a plugin message",
			change: func(c *Config) {
				c.Agent.SystemPrompt = strings.Repeat("x", 32<<20)
				c.Agent.HistoryBytes = 1 << 62
				c.Store.SessionHistoryBytes = 1 << 62
			},
			want: []string{"agent.history_bytes: server.max_body_bytes (1048576) + agent.history_bytes (4611686018427387904) + agent.system_prompt (33554432 bytes) + 64 KiB must be less than 32 MiB, the largest message to a plugin"},
		},

		// [store]
		{
			name: "store limits off",
			change: func(c *Config) {
				c.Store.HistoryMaxAge = Duration{}
				c.Store.HistoryMaxSessions = 0
			},
		},
		{
			name: "store limits negative, no prune interval",
			change: func(c *Config) {
				c.Store.HistoryMaxAge = Duration{-time.Hour}
				c.Store.HistoryMaxSessions = -1
				c.Store.PruneInterval = Duration{}
			},
			want: []string{
				"store.history_max_age: must not be negative (0s keeps sessions of any age)",
				"store.history_max_sessions: must not be negative (0 keeps any number of sessions)",
				"store.prune_interval: must be positive",
			},
		},
		{
			name: "session history as large as what a turn is sent",
			change: func(c *Config) {
				c.Agent.HistoryBytes = 5000
				c.Store.SessionHistoryBytes = 5000
			},
		},
		{
			name: "session history smaller than what a turn is sent",
			change: func(c *Config) {
				c.Agent.HistoryBytes = 5000
				c.Store.SessionHistoryBytes = 4999
			},
			want: []string{"store.session_history_bytes: 4999: must be positive and at least agent.history_bytes (5000): a session must keep what a turn is sent"},
		},
		{
			name: "no session history",
			change: func(c *Config) {
				c.Agent.HistoryBytes = 0
				c.Store.SessionHistoryBytes = 0
			},
			want: []string{"store.session_history_bytes: 0: must be positive and at least agent.history_bytes (0): a session must keep what a turn is sent"},
		},
		{
			name: "postgres backend",
			change: func(c *Config) {
				c.Store.Backend = BackendPostgres
				c.Store.DSNEnv = "DATABASE_URL"
			},
		},
		{
			name: "store backend, dsn_env and lease wrong",
			change: func(c *Config) {
				c.Store.Backend = "sqlite"
				c.Store.DSNEnv = "postgres://u:p@db/wake"
				c.Store.Lease = Duration{}
			},
			want: []string{
				`store.backend: "sqlite": must be "bbolt" or "postgres"`,
				`store.dsn_env: must be the name of an environment variable (letters, digits and "_", not starting with a digit), not the connection string itself`,
				"store.lease: must be positive",
			},
		},
		{
			name:   "negative prune interval",
			change: func(c *Config) { c.Store.PruneInterval = Duration{-time.Minute} },
			want:   []string{"store.prune_interval: must be positive"},
		},

		// [replies]
		{
			name:   "reply template typo",
			change: func(c *Config) { c.Replies[machines.ReplyStillWaking] = "Still waking — {{.Elapsed}} min elapsed." },
			want: []string{
				`replies.still_waking: template: still_waking:1:19: executing "still_waking" at <.Elapsed>: can't evaluate field Elapsed in type machines.ReplyData`,
			},
		},
		{
			name:   "reply that does not parse",
			change: func(c *Config) { c.Replies[machines.ReplyWaking] = "Waking {{.ExpectedMinutes" },
			want:   []string{`replies.waking: template: waking:1: unclosed action`},
		},
		{
			name: "reply with a URL or markdown",
			change: func(c *Config) {
				c.Replies[machines.ReplyStuck] = "Stuck. See https://status.example.com for help."
				c.Replies[machines.ReplyRefused] = "Refused with **HTTP {{.Status}}**."
				c.Replies[machines.ReplyRewake] = "Waking again; check [the status page](status)."
			},
			want: []string{
				`replies.rewake: contains markdown ("[the status page](")`,
				`replies.stuck: contains a URL ("https://")`,
				`replies.refused: contains markdown ("**")`,
			},
		},
		{
			name:   "empty reply",
			change: func(c *Config) { c.Replies[machines.ReplyUnreadable] = "  " },
			want:   []string{"replies.unreadable: missing or empty"},
		},

		// Everything at once: every problem is reported, in order.
		{
			name: "several problems",
			change: func(c *Config) {
				c.Server.MaxBodyBytes = -1
				c.Timings.WakeWindow = Duration{}
				c.Agent.HistoryMessages = -5
			},
			want: []string{
				"server.max_body_bytes: must be positive",
				"timings.wake_window: must be positive",
				"agent.history_messages: must not be negative (0 sends no history)",
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := DefaultConfig()
			tt.change(&c)
			err := c.Validate()
			if diff := cmp.Diff(tt.want, messages(err)); diff != "" {
				t.Errorf("Validate (-want +got):\n%s", diff)
			}
			for _, e := range unjoin(err) {
				var ce *Error
				if !errors.As(e, &ce) || ce.Key == "" {
					t.Errorf("%v: not an *Error with a Key", e)
				}
			}
			if err != nil && strings.Contains(err.Error(), "sk-") {
				t.Errorf("error quotes a secret: %v", err)
			}
		})
	}
}
