package config

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestParseErrors covers what only a file can get wrong, and that errors
// carry the line of the key they are about.
func TestParseErrors(t *testing.T) {
	tests := []struct {
		name string
		file string
		want []string
	}{
		{
			name: "unknown key",
			file: "[timings]\nwake_window = \"15m\"\nwake_windw = \"10m\"\n",
			want: []string{`line 3: unknown key "timings.wake_windw"`},
		},
		{
			name: "unknown table: only the table is reported",
			file: "# comment\n\n[timing]\nwake_window = \"15m\"\nwake_watch = \"35m\"\n",
			want: []string{`line 3: unknown key "timing"`},
		},
		{
			name: "unknown keys in dotted and inline form",
			file: "server.port = 8080\nagent = { providers = [\"qwen\"], prompt = \"hi\" }\n",
			want: []string{
				`line 1: unknown key "server.port"`,
				`line 2: unknown key "agent.prompt"`,
			},
		},
		{
			name: "unknown implicit table gets the line of its first key",
			file: "\n[timings.extra.deep]\nx = 1\n",
			want: []string{`line 2: unknown key "timings.extra"`},
		},
		{
			name: "keys differ in case: unknown",
			file: "[Server]\nlisten = \"127.0.0.1:1\"\n[agent]\nHistory_Messages = 3\n",
			want: []string{
				`line 1: unknown key "Server"`,
				`line 4: unknown key "agent.History_Messages"`,
			},
		},
		{
			name: "same name in two cases: each line is its own",
			file: "[server]\nlisten = \"127.0.0.1:1\"\nLISTEN = \"127.0.0.1:2\"\n",
			want: []string{`line 3: unknown key "server.LISTEN"`},
		},
		{
			name: "admin_listen on the main address: named with its line",
			file: "[server]\nlisten = \"127.0.0.1:8080\"\nadmin_listen = \"127.0.0.1:8080\"\n",
			want: []string{`line 3: server.admin_listen: must differ from server.listen (leave it empty to serve /metrics and the status page on server.listen)`},
		},
		{
			name: "events_keepalive not positive: named with its line",
			file: "[server]\nlisten = \"127.0.0.1:8080\"\n\nevents_keepalive = \"0s\"\n",
			want: []string{`line 4: server.events_keepalive: must be positive`},
		},
		{
			name: "events_keepalive without a unit: named with its line",
			file: "[server]\nevents_keepalive = \"15\"\n",
			want: []string{`line 2: server.events_keepalive: invalid duration "15": want a number with a unit, such as "15m" or "90s"`},
		},
		{
			name: "unknown key in a provider",
			file: "[[providers]]\nname = \"qwen\"\npod = \"qwen\"\napi_key = \"not here\"\n",
			want: []string{`line 4: unknown key "providers[0].api_key"`},
		},
		{
			name: "unknown key in the second provider",
			file: "[[providers]]\nname = \"a\"\npod = \"a\"\n\n[[providers]]\nname = \"b\"\nbasee_url = \"http://b\"\n",
			want: []string{`line 7: unknown key "providers[1].basee_url"`},
		},
		{
			// The decoder records one position per key for all tables of an
			// array, so a key set in two of them gets no line.
			name: "the same unknown key in two providers",
			file: "[[providers]]\nname = \"a\"\nmodle = \"x\"\n[[providers]]\nname = \"b\"\nmodle = \"y\"\n",
			want: []string{
				`unknown key "providers[0].modle"`,
				`unknown key "providers[1].modle"`,
			},
		},
		{
			name: "quoted unknown key",
			file: "[replies]\n\"still waking\" = \"x\"\n",
			want: []string{`line 2: unknown key "replies.\"still waking\""`},
		},
		{
			name: "key set only by Load",
			file: "path = \"/etc/wake.toml\"\n",
			want: []string{`line 1: unknown key "path"`},
		},
		{
			name: "malformed TOML",
			file: "[server]\nlisten = \"127.0.0.1:8080\n",
			want: []string{`line 2, column 25: invalid TOML: strings cannot contain newlines`},
		},
		{
			name: "malformed table header",
			file: "[timings\nwake_window = \"1m\"\n",
			want: []string{`line 1, column 9: invalid TOML: expected '.' or ']' to end table name, but got '\n' instead`},
		},
		{
			name: "key defined twice",
			file: "[agent]\nhistory_messages = 1\nhistory_messages = 2\n",
			want: []string{`line 3, column 1: invalid TOML: Key 'agent.history_messages' has already been defined.`},
		},
		{
			name: "duration without a unit",
			file: "[timings]\n\nwake_window = \"15\"\n",
			want: []string{`line 3: timings.wake_window: invalid duration "15": want a number with a unit, such as "15m" or "90s"`},
		},
		{
			name: "duration as a number",
			file: "[timings]\nwake_window = 15\n",
			want: []string{`line 2: timings.wake_window: want a duration string such as "15m", got an integer`},
		},
		{
			name: "every wrong type, in file order",
			file: `[conductor]
lookup_timeout = 3.5
url = 8081
[server]
max_body_bytes = "1MiB"
listen = ["127.0.0.1:8080"]
[agent]
providers = "qwen"
history_messages = true
[plugins]
dir = 2026-01-01
[replies]
waking = { text = "hi" }
`,
			want: []string{
				`line 2: conductor.lookup_timeout: want a duration string such as "15m", got a float`,
				`line 3: conductor.url: want a string, got an integer`,
				`line 5: server.max_body_bytes: want an integer, got a string`,
				`line 6: server.listen: want a string, got an array`,
				`line 8: agent.providers: want an array, got a string`,
				`line 9: agent.history_messages: want an integer, got a boolean`,
				`line 11: plugins.dir: want a string, got a date-time`,
				`line 13: replies.waking: want a string, got a table`,
			},
		},
		{
			// The decoder alone would stop at one of them, picked by map order.
			name: "several wrong values in one table, in file order",
			file: "[timings]\nwake_window = 15\nwake_watch = \"35\"\nexpected_wake = \"9m\"\nready_slack = 1.5\nwatch_poll = \"soon\"\n",
			want: []string{
				`line 2: timings.wake_window: want a duration string such as "15m", got an integer`,
				`line 3: timings.wake_watch: invalid duration "35": want a number with a unit, such as "15m" or "90s"`,
				`line 5: timings.ready_slack: want a duration string such as "15m", got a float`,
				`line 6: timings.watch_poll: invalid duration "soon": want a number with a unit, such as "15m" or "90s"`,
			},
		},
		{
			name: "wrong types in [store]",
			file: "[store]\nhistory_max_age = 30\nhistory_max_sessions = \"many\"\nprune_interval = \"10\"\n",
			want: []string{
				`line 2: store.history_max_age: want a duration string such as "15m", got an integer`,
				`line 3: store.history_max_sessions: want an integer, got a string`,
				`line 4: store.prune_interval: invalid duration "10": want a number with a unit, such as "15m" or "90s"`,
			},
		},
		{
			name: "unknown reply key",
			file: "[replies]\nwaking = \"Waking.\"\n\nfoo = \"Foo.\"\n",
			want: []string{`line 4: unknown key "replies.foo"`},
		},
		{
			name: "reply key differing in case",
			file: "replies.Waking = \"Waking.\"\n",
			want: []string{`line 1: unknown key "replies.Waking"`},
		},
		{
			name: "a table where a value belongs, and the other way",
			file: "timings = \"15m\"\n[server.listen]\nhost = \"x\"\n",
			want: []string{
				`line 1: timings: want a table, got a string`,
				`line 2: server.listen: want a string, got a table`,
			},
		},
		{
			name: "wrong element types",
			file: "[agent]\nproviders = [\"qwen\", 2]\n[[providers]]\nname = \"qwen\"\n[[providers]]\nname = 7\n",
			want: []string{
				`line 2: agent.providers[1]: want a string, got an integer`,
				`providers[1].name: want a string, got an integer`,
			},
		},
		{
			name: "providers not an array",
			file: "[providers]\nname = \"qwen\"\n",
			want: []string{`line 1: providers: want an array of tables, got a table`},
		},
		{
			name: "reply typo in the file",
			file: "[replies]\nwaking = \"Waking.\"\nstill_waking = \"Still waking — {{.Elapsed}} min.\"\n",
			want: []string{
				`line 3: replies.still_waking: template: still_waking:1:19: executing "still_waking" at <.Elapsed>: can't evaluate field Elapsed in type machines.ReplyData`,
			},
		},
		{
			name: "multi-line reply with a URL: the line of its key, not of its end",
			file: "[replies]\nstuck = \"\"\"\nStuck.\n\nSee www.example.com.\n\"\"\"\n",
			want: []string{`line 2: replies.stuck: contains a URL ("www.")`},
		},
		{
			name: "a URL in a branch the sample data does not take",
			file: "[replies]\nwaking = \"Waking.\"\n\nrewake = '{{if eq .Status 0}}See https://status.example.{{end}}Ask again.'\n",
			want: []string{`line 4: replies.rewake: contains a URL ("https://")`},
		},
		{
			name: "markdown in a range's else",
			file: "[replies]\nstuck = '{{range .LoadingMinutes}}.{{else}}**Stuck.**{{end}}'\n",
			want: []string{`line 2: replies.stuck: contains markdown ("**")`},
		},
		{
			name: "validation errors after decoding, lines where the file has the key",
			file: `[timings]
wake_window = "40m"

[[providers]]
name = "qwen"
pod = "qwen"
base_url = "https://llm.internal"
`,
			want: []string{
				"timings.wake_watch: must be at least timings.wake_window (40m0s)", // wake_watch is not in the file,
				"line 6: providers[0].pod: set exactly one of pod or base_url",
			},
		},
		{
			name: "replaced providers leave agent.providers naming the old one",
			file: "[[providers]]\nname = \"llama\"\npod = \"llama\"\n",
			want: []string{`agent.providers[0]: "qwen" is not the name of a provider`},
		},
		{
			name: "an empty providers array",
			file: "providers = []\n",
			want: []string{
				"line 1: providers: at least one [[providers]] table is required",
				`agent.providers[0]: "qwen" is not the name of a provider`,
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Parse([]byte(tt.file), "/etc/wake")
			if diff := cmp.Diff(tt.want, messages(err)); diff != "" {
				t.Errorf("Parse errors (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(Config{}, c); diff != "" {
				t.Errorf("config on error (-want +got):\n%s", diff)
			}
			for _, e := range unjoin(err) {
				if _, ok := e.(*Error); !ok {
					t.Errorf("%v: a %T, not an *Error", e, e)
				}
			}
		})
	}
}

// Parse says the same about a file every time, though the decoder meets
// the keys of a table in map order.
func TestParseErrorsAreStable(t *testing.T) {
	file := []byte(`[conductor]
start_timeout = 3
lookup_timeout = "3"
url = 1
plugin = []
[timings]
wake_window = "x"
loading_ceiling = 1
wake_watch = 2.5
watch_poll = true
expected_wake = []
pod_idle_stop = {}
`)
	_, first := Parse(file, "/etc/wake")
	if got := len(messages(first)); got != 10 {
		t.Fatalf("Parse: %d errors, want 10:\n%v", got, first)
	}
	for range 30 {
		if _, err := Parse(file, "/etc/wake"); err == nil || err.Error() != first.Error() {
			t.Fatalf("Parse said\n%v\nthen\n%v", first, err)
		}
	}
}

func TestErrorString(t *testing.T) {
	tests := []struct {
		err  *Error
		want string
	}{
		{&Error{Key: "a.b", Err: errors.New("bad")}, "a.b: bad"},
		{&Error{Line: 3, Key: "a.b", Err: errors.New("bad")}, "line 3: a.b: bad"},
		{&Error{File: "/w.toml", Line: 3, Key: "a.b", Err: errors.New("bad")}, "/w.toml:3: a.b: bad"},
		{&Error{File: "/w.toml", Key: "a.b", Err: errors.New("bad")}, "/w.toml: a.b: bad"},
		{&Error{File: "/w.toml", Line: 3, Col: 7, Err: errors.New("invalid TOML: x")}, "/w.toml:3:7: invalid TOML: x"},
		{&Error{Line: 3, Col: 7, Err: errors.New("invalid TOML: x")}, "line 3, column 7: invalid TOML: x"},
		{&Error{Line: 9, Key: "x.y", Err: ErrUnknownKey}, `line 9: unknown key "x.y"`},
	}
	for _, tt := range tests {
		if got := tt.err.Error(); got != tt.want {
			t.Errorf("Error() = %q, want %q", got, tt.want)
		}
	}
	if !errors.Is(&Error{Key: "x", Err: ErrUnknownKey}, ErrUnknownKey) {
		t.Error("an unknown-key *Error is not ErrUnknownKey")
	}
}
