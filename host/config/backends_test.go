package config

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// providersOn is [[providers]] tables for a file's backends: provider
// "p-POD" on each pod, on backend.
func providersOn(backend string, pods ...string) string {
	s := ""
	for _, pod := range pods {
		s += "\n[[providers]]\nname = \"p-" + pod + "\"\npod = \"" + pod + "\"\nbackend = \"" + backend + "\"\n"
	}
	return s + "\n[agent]\nproviders = [\"p-" + pods[0] + "\"]\n"
}

func TestParseBackends(t *testing.T) {
	sec := func(s int) Duration { return Duration{time.Duration(s) * time.Second} }
	tests := []struct {
		name string
		file string
		want []Backend
	}{
		{
			name: "none: the [conductor] table's alone",
			file: "",
		},
		{
			name: "command: the defaults of its kind",
			file: `[[backends]]
name = "box"
kind = "command"
start = ["docker", "start", "vllm"]
status = ["docker", "inspect", "vllm"]
` + providersOn("box", "qwen"),
			want: []Backend{{
				Name: "box", Kind: KindCommand, Plugin: DefaultCommandPlugin, StopAfterIdle: Duration{15 * time.Minute},
				Start: []string{"docker", "start", "vllm"}, Status: []string{"docker", "inspect", "vllm"},
				StatusBy: StatusByJSON, StatusDownCodes: []int{1, 2, 3},
				StartTimeout: sec(60), StopTimeout: sec(60), StatusTimeout: sec(10), PassEnv: []string{},
			}},
		},
		{
			name: "command: every key set",
			file: `[[backends]]
name = "box"
kind = "command"
plugin = "my-command"
stop_after_idle = "0s"
stop_unserved_after = "5m"
start = ["systemctl", "start", "vllm-{pod}"]
stop = ["systemctl", "stop", "vllm-{pod}"]
status = ["systemctl", "is-active", "--quiet", "vllm-{pod}"]
status_by = "exit"
status_down_codes = [3]
url = "http://10.0.0.7:8000/{pod}"
start_timeout = "90s"
stop_timeout = "30s"
status_timeout = "2s"
pass_env = ["PATH", "DBUS_SESSION_BUS_ADDRESS"]
` + providersOn("box", "qwen"),
			want: []Backend{{
				Name: "box", Kind: KindCommand, Plugin: "my-command", StopUnservedAfter: Duration{5 * time.Minute},
				Start: []string{"systemctl", "start", "vllm-{pod}"}, Stop: []string{"systemctl", "stop", "vllm-{pod}"},
				Status:   []string{"systemctl", "is-active", "--quiet", "vllm-{pod}"},
				StatusBy: StatusByExit, StatusDownCodes: []int{3}, URL: "http://10.0.0.7:8000/{pod}",
				StartTimeout: sec(90), StopTimeout: sec(30), StatusTimeout: sec(2),
				PassEnv: []string{"PATH", "DBUS_SESSION_BUS_ADDRESS"},
			}},
		},
		{
			name: "runpod: the defaults of its kind, and pods",
			file: `[[backends]]
name = "rp"
kind = "runpod"
api_key_env = "RUNPOD_API_KEY"
pods = { qwen = "xedezhzb9la3ye" }
` + providersOn("rp", "qwen"),
			want: []Backend{{
				Name: "rp", Kind: KindRunPod, Plugin: DefaultRunPodPlugin, StopAfterIdle: Duration{15 * time.Minute},
				APIKeyEnv: "RUNPOD_API_KEY", Pods: map[string]string{"qwen": "xedezhzb9la3ye"}, Port: 8000,
				URL: DefaultRunPodURL, ProxyURL: DefaultRunPodProxyURL, StartTimeout: sec(3), LookupTimeout: sec(3),
			}},
		},
		{
			name: "a second conductor",
			file: `[[backends]]
name = "lab"
kind = "conductor"
url = "http://lab:8080"
token_env = "LAB_TOKEN"
` + providersOn("lab", "qwen"),
			want: []Backend{{
				Name: "lab", Kind: KindConductor, Plugin: DefaultConductorPlugin, URL: "http://lab:8080",
				StartTimeout: sec(3), LookupTimeout: sec(3), TokenEnv: "LAB_TOKEN",
			}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Parse([]byte(tt.file), "/etc/wake")
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if diff := cmp.Diff(tt.want, c.Backends); diff != "" {
				t.Errorf("Backends (-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseBackendErrors(t *testing.T) {
	const command = "[[backends]]\nname = \"box\"\nkind = \"command\"\nstart = [\"s\"]\nstatus = [\"t\"]\n"
	const runpod = "[[backends]]\nname = \"rp\"\nkind = \"runpod\"\napi_key_env = \"K\"\n"
	tests := []struct {
		name string
		file string
		want []string
	}{
		{
			name: "unknown key",
			file: command + "colour = \"red\"\n" + providersOn("box", "qwen"),
			want: []string{`line 6: unknown key "backends[0].colour"`},
		},
		{
			name: "a key of another kind, with its line",
			file: command + "api_key_env = \"K\"\n" + providersOn("box", "qwen"),
			want: []string{`line 6: backends[0].api_key_env: not a key of a "command" backend (only of "runpod")`},
		},
		{
			name: "a runpod table with command and conductor keys",
			file: runpod + "token_env = \"T\"\nstart = [\"x\"]\n" + providersOn("rp", "qwen"),
			want: []string{
				`line 6: backends[0].start: not a key of a "runpod" backend (only of "command")`,
				`line 5: backends[0].token_env: not a key of a "runpod" backend (only of "conductor")`,
			},
		},
		{
			name: "values of the wrong type",
			file: runpod + "pods = \"qwen=abc\"\nport = \"8000\"\nstop_after_idle = 15\n" + providersOn("rp", "qwen"),
			want: []string{
				`line 5: backends[0].pods: want a table, got a string`,
				`line 6: backends[0].port: want an integer, got a string`,
				`line 7: backends[0].stop_after_idle: want a duration string such as "15m", got an integer`,
			},
		},
		{
			name: "no kind, no name",
			file: "[[backends]]\nplugin = \"x\"\n" + providersOn("conductor", "qwen"),
			want: []string{
				`backends[0].name: must not be empty`,
				`backends[0].kind: "": must be "conductor", "command" or "runpod"`,
			},
		},
		{
			// name is set in every table of the array: the decoder gives
			// it no line.
			name: "a bad name, a reserved one, a duplicate",
			file: command + "[[backends]]\nname = \"conductor\"\nkind = \"command\"\nstart = [\"s\"]\nstatus = [\"t\"]\n" +
				"[[backends]]\nname = \"box\"\nkind = \"command\"\nstart = [\"s\"]\nstatus = [\"t\"]\n" +
				"[[backends]]\nname = \"Box 2\"\nkind = \"command\"\nstart = [\"s\"]\nstatus = [\"t\"]\n" + providersOn("box", "qwen"),
			want: []string{
				`backends[1].name: "conductor" is the name of the [conductor] table's backend`,
				`backends[2].name: "box" is already the name of backends[0]`,
				`backends[3].name: "Box 2": must be lowercase letters, digits, "_" and "-"`,
			},
		},
		{
			name: "command: no start or status, an empty program, bad values",
			file: "[[backends]]\nname = \"box\"\nkind = \"command\"\nstop = [\"\", \"x\"]\nstatus_by = \"text\"\n" +
				"status_down_codes = [0, 3, 256]\nurl = \"ftp://x\"\nstart_timeout = \"0s\"\nstop_timeout = \"-1s\"\nstatus_timeout = \"0s\"\n" +
				"pass_env = [\"HOME\", \"A=B\", \"HOME\"]\nstop_after_idle = \"-1m\"\nstop_unserved_after = \"-1m\"\n" + providersOn("box", "qwen"),
			want: []string{
				`line 12: backends[0].stop_after_idle: must not be negative ("0s" never stops)`,
				`line 13: backends[0].stop_unserved_after: must not be negative ("0s" never stops)`,
				`backends[0].start: must be set: a command as an array of strings, such as ["systemctl", "start", "vllm"]`,
				`line 4: backends[0].stop: the program name (the array's first string) is empty`,
				`backends[0].status: must be set: a command as an array of strings, such as ["systemctl", "start", "vllm"]`,
				`line 5: backends[0].status_by: "text": must be "json" or "exit"`,
				`line 6: backends[0].status_down_codes[0]: 0: must be an exit code from 1 to 255`,
				`line 6: backends[0].status_down_codes[2]: 256: must be an exit code from 1 to 255`,
				`line 7: backends[0].url: must be an absolute http or https URL`,
				`line 8: backends[0].start_timeout: must be positive`,
				`line 9: backends[0].stop_timeout: must be positive`,
				`line 10: backends[0].status_timeout: must be positive`,
				`line 11: backends[0].pass_env[1]: must be the name of an environment variable (letters, digits and "_", not starting with a digit), not a value`,
				`line 11: backends[0].pass_env[2]: "HOME" is already pass_env[0]`,
			},
		},
		{
			name: "command: exit mode wants a url",
			file: command + "status_by = \"exit\"\n" + providersOn("box", "qwen"),
			want: []string{`backends[0].url: must be set when status_by is "exit": the exit code gives no URL`},
		},
		{
			name: "runpod: a key pasted for its variable, bad urls, port, pods",
			file: "[[backends]]\nname = \"rp\"\nkind = \"runpod\"\napi_key_env = \"rpa_SECRETKEY-123\"\nurl = \"https://user:pw@api\"\n" +
				"proxy_url = \"https://{id}-{port}.proxy.runpod.net?k=v\"\nport = 0\npods = { qwen = \"bad/id\", other = \"abc\", BAD = \"abc\" }\n" +
				"start_timeout = \"0s\"\nlookup_timeout = \"0s\"\n" + providersOn("rp", "qwen"),
			want: []string{
				`line 4: backends[0].api_key_env: must be the name of an environment variable (letters, digits and "_", not starting with a digit), not the key itself`,
				`line 5: backends[0].url: must not contain credentials (the file holds no secrets; use the environment)`,
				`line 6: backends[0].proxy_url: must not have a query or fragment`,
				`line 7: backends[0].port: 0: must be a port from 1 to 65535`,
				`line 9: backends[0].start_timeout: must be positive`,
				`line 10: backends[0].lookup_timeout: must be positive`,
				`line 8: backends[0].pods.BAD: "BAD": not a pod name (lowercase letters, digits and dashes)`,
				`line 8: backends[0].pods.other: no provider's pod on this backend is "other"`,
				`line 8: backends[0].pods.qwen: "bad/id": a RunPod pod id is 1 to 64 letters, digits, "_" or "-"`,
			},
		},
		{
			name: "runpod: no key variable",
			file: "[[backends]]\nname = \"rp\"\nkind = \"runpod\"\n" + providersOn("rp", "qwen"),
			want: []string{`backends[0].api_key_env: must be the name of an environment variable (letters, digits and "_", not starting with a digit), not the key itself`},
		},
		{
			name: "conductor: no url, a bad token variable",
			file: "[[backends]]\nname = \"lab\"\nkind = \"conductor\"\ntoken_env = \"\"\n" + providersOn("lab", "qwen"),
			want: []string{
				`backends[0].url: must be an absolute http or https URL`,
				`line 4: backends[0].token_env: must be the name of an environment variable (letters, digits and "_", not starting with a digit), not the token itself`,
			},
		},
		{
			// backend is set in more than one [[providers]] table: no line.
			name: "providers: an unknown backend, a backend for base_url, a pod on two backends",
			file: command + `
[[providers]]
name = "a"
pod = "qwen"
backend = "nowhere"

[[providers]]
name = "b"
base_url = "http://llm"
backend = "box"

[[providers]]
name = "c"
pod = "qwen"

[[providers]]
name = "d"
pod = "qwen"
backend = "box"

[agent]
providers = ["c"]
`,
			want: []string{
				`providers[0].backend: "nowhere" is not the name of a backend (a [[backends]] name, or "conductor")`,
				`providers[1].backend: only for a provider with a pod (this one has base_url)`,
				`providers[3].backend: pod "qwen" is on backend "conductor" (providers[2]): a pod has one backend`,
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte(tt.file), "/etc/wake")
			if diff := cmp.Diff(tt.want, messages(err)); diff != "" {
				t.Errorf("Parse errors (-want +got):\n%s", diff)
			}
		})
	}
}

func TestGPUBackends(t *testing.T) {
	c := DefaultConfig()
	c.Backends = []Backend{DefaultBackend(KindRunPod)}
	c.Backends[0].Name = "rp"
	got := c.GPUBackends()
	want := []Backend{
		{
			Name: "conductor", Kind: KindConductor, Plugin: DefaultConductorPlugin, URL: "http://127.0.0.1:8081",
			StartTimeout: Duration{3 * time.Second}, LookupTimeout: Duration{3 * time.Second}, TokenEnv: "RIG_WAKE_TOKEN", Table: "conductor",
		},
		c.Backends[0],
	}
	want[1].Table = "backends[0]"
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("GPUBackends (-want +got):\n%s", diff)
	}
	if c.Backends[0].Table != "" {
		t.Errorf("GPUBackends set Table on the config's own backend")
	}
}

// TestMachinePolicyNamesBackends: the replies name each pod's backend by
// its kind; a pod on the [conductor] table's backend is the conductor's.
func TestMachinePolicyNamesBackends(t *testing.T) {
	c := DefaultConfig()
	rp, box := DefaultBackend(KindRunPod), DefaultBackend(KindCommand)
	rp.Name, box.Name = "rp", "box"
	c.Backends = []Backend{rp, box}
	c.Providers = []Provider{
		{Name: "a", Pod: "qwen"},
		{Name: "b", Pod: "gpu", Backend: "rp"},
		{Name: "c", Pod: "home", Backend: "box"},
		{Name: "d", BaseURL: "http://10.0.0.5:8000"},
	}
	p, err := c.MachinePolicy()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"qwen": "the conductor", "gpu": "RunPod", "home": "the pod's machine"}
	if diff := cmp.Diff(want, p.Backends); diff != "" {
		t.Errorf("MachinePolicy().Backends (-want +got):\n%s", diff)
	}
	if p.Replies == nil || p.Timings != c.MachineTimings() {
		t.Errorf("MachinePolicy: replies %v, timings %+v, want the file's", p.Replies, p.Timings)
	}
}
