package config

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/wakeonchat/wakeonchat/machines"
)

// The kinds of GPU backend ([[backends]] kind), each driven by its own GPU
// plugin.
const (
	// KindConductor is a pod behind the rig conductor's HTTP API
	// (wake-plugin-conductor); its pods stop themselves after idling.
	KindConductor = "conductor"
	// KindCommand is anything with a command line: the operator's start,
	// stop and status commands (wake-plugin-command).
	KindCommand = "command"
	// KindRunPod is a pod on RunPod, over RunPod's REST API
	// (wake-plugin-runpod).
	KindRunPod = "runpod"
)

// The default plugins of the kinds, each built into wakehost.
const (
	DefaultCommandPlugin = "wake-plugin-command"
	DefaultRunPodPlugin  = "wake-plugin-runpod"
)

// ConductorBackend is the name of the backend the [conductor] table
// configures: the backend of a provider whose backend is "" (or this).
const ConductorBackend = "conductor"

// DefaultTokenEnv is the variable a conductor backend's wake token is in
// unless token_env names another: the one the conductor plugin reads.
const DefaultTokenEnv = "RIG_WAKE_TOKEN"

// DefaultStopAfterIdle is stop_after_idle for the backends that do not stop
// themselves (command, runpod).
const DefaultStopAfterIdle = 15 * time.Minute

// Backend is one GPU backend: a [[backends]] table, or the [conductor]
// table's backend (Config.GPUBackends). Name, Kind and Plugin, and the
// stops, apply to every kind; each other key belongs to the kinds its
// comment names, and setting it in a table of another kind is an error.
// Parse fills a table's defaults from its kind (DefaultBackend); the zero
// value of a field is "off" (the stops) or "none".
type Backend struct {
	Name   string `toml:"name"`   // what providers[].backend calls it: lowercase letters, digits, "_" and "-"; required, not "conductor"
	Kind   string `toml:"kind"`   // "conductor", "command" or "runpod"; required
	Plugin string `toml:"plugin"` // plugin (a file name in plugins.dir, or built in); default wake-plugin-conductor, wake-plugin-command or wake-plugin-runpod by kind
	// StopAfterIdle is how long a pod of this backend may go without
	// answering or holding anything before the host stops it; 0 never
	// (default 0 for conductor, whose pods stop themselves, 15m for
	// command and runpod).
	StopAfterIdle Duration `toml:"stop_after_idle"`
	// StopUnservedAfter stops a woken pod that became ready and served
	// nobody this long after every user who asked has gone; 0 never
	// (default).
	StopUnservedAfter Duration `toml:"stop_unserved_after"`

	// URL: conductor, its base URL (required); command, the model
	// endpoint's base URL ({pod} replaced; required with status_by =
	// "exit"); runpod, the API's base URL (default
	// "https://api.runpod.io/v2").
	URL string `toml:"url"`
	// StartTimeout caps one start (and stop): default 3s (conductor,
	// runpod), 60s (command).
	StartTimeout Duration `toml:"start_timeout"`
	// LookupTimeout caps one pod read: conductor and runpod; default 3s.
	LookupTimeout Duration `toml:"lookup_timeout"`

	// TokenEnv (conductor) is the NAME of the variable holding the wake
	// token, passed to the plugin as RIG_WAKE_TOKEN; default
	// "RIG_WAKE_TOKEN".
	TokenEnv string `toml:"token_env"`

	// Start, Stop and Status (command) are the commands, each an argument
	// vector run without a shell; {pod} in an argument is the pod's name.
	// Start and Status are required; without Stop the pod is never
	// stopped by the host.
	Start  []string `toml:"start"`
	Stop   []string `toml:"stop"`
	Status []string `toml:"status"`
	// StatusBy (command) is how the status command answers: "json" (one
	// JSON object on standard output; default) or "exit" (its exit code).
	StatusBy string `toml:"status_by"`
	// StatusDownCodes (command, status_by = "exit") are the exit codes
	// that mean the pod is down; default [1, 2, 3].
	StatusDownCodes []int `toml:"status_down_codes"`
	// StopTimeout caps one stop command (command); default 60s.
	StopTimeout Duration `toml:"stop_timeout"`
	// StatusTimeout caps one status command (command); default 10s.
	StatusTimeout Duration `toml:"status_timeout"`
	// PassEnv (command) names the host's environment variables the
	// commands get (values never in wake.toml); "PATH" passes the host's
	// PATH, else the commands get a standard one. Default none.
	PassEnv []string `toml:"pass_env"`

	// APIKeyEnv (runpod) is the NAME of the variable holding the RunPod API
	// key (never the key); required.
	APIKeyEnv string `toml:"api_key_env"`
	// Pods (runpod) maps the providers' pod names to RunPod pod ids; a pod
	// not listed is its RunPod id itself. Default none.
	Pods map[string]string `toml:"pods"`
	// Port (runpod) is the pod's internal HTTP port of the model; default
	// 8000.
	Port int `toml:"port"`
	// ProxyURL (runpod) is the model's base URL for a running pod, {id}
	// and {port} filled in; default "https://{id}-{port}.proxy.runpod.net".
	ProxyURL string `toml:"proxy_url"`

	// Table is where the backend is configured, as errors name it:
	// "conductor" or "backends[N]". Set by GPUBackends, never by the file.
	Table string `toml:"-"`
}

// Status answer modes of a command backend (status_by).
const (
	StatusByJSON = "json"
	StatusByExit = "exit"
)

// Defaults of the RunPod backend.
const (
	DefaultRunPodURL      = "https://api.runpod.io/v2"
	DefaultRunPodProxyURL = "https://{id}-{port}.proxy.runpod.net"
	DefaultRunPodPort     = 8000
)

// DefaultBackend is a [[backends]] table of kind holding that kind's
// defaults: a file's table is decoded over it. An unknown kind gets none.
func DefaultBackend(kind string) Backend {
	three := Duration{3 * time.Second}
	switch kind {
	case KindConductor:
		return Backend{Kind: kind, Plugin: DefaultConductorPlugin, StartTimeout: three, LookupTimeout: three, TokenEnv: DefaultTokenEnv}
	case KindCommand:
		return Backend{
			Kind: kind, Plugin: DefaultCommandPlugin, StopAfterIdle: Duration{DefaultStopAfterIdle},
			StatusBy: StatusByJSON, StatusDownCodes: []int{1, 2, 3},
			StartTimeout: Duration{time.Minute}, StopTimeout: Duration{time.Minute}, StatusTimeout: Duration{10 * time.Second},
			PassEnv: []string{},
		}
	case KindRunPod:
		return Backend{
			Kind: kind, Plugin: DefaultRunPodPlugin, StopAfterIdle: Duration{DefaultStopAfterIdle},
			URL: DefaultRunPodURL, ProxyURL: DefaultRunPodProxyURL, Port: DefaultRunPodPort,
			StartTimeout: three, LookupTimeout: three, Pods: map[string]string{},
		}
	}
	return Backend{Kind: kind}
}

// backendKeyKinds says which kinds each kind-specific key of a [[backends]]
// table belongs to; a key not listed belongs to every kind.
var backendKeyKinds = map[string][]string{
	"url":               {KindConductor, KindCommand, KindRunPod},
	"lookup_timeout":    {KindConductor, KindRunPod},
	"token_env":         {KindConductor},
	"start":             {KindCommand},
	"stop":              {KindCommand},
	"status":            {KindCommand},
	"status_by":         {KindCommand},
	"status_down_codes": {KindCommand},
	"stop_timeout":      {KindCommand},
	"status_timeout":    {KindCommand},
	"pass_env":          {KindCommand},
	"api_key_env":       {KindRunPod},
	"pods":              {KindRunPod},
	"port":              {KindRunPod},
	"proxy_url":         {KindRunPod},
}

// kindProblem is the error about key, set in a table of kind, when the key
// is not one of kind's; nil when it is (or kind is not a kind).
func kindProblem(table, key, kind string) *Error {
	kinds, ok := backendKeyKinds[key]
	if !ok || !slices.Contains([]string{KindConductor, KindCommand, KindRunPod}, kind) || slices.Contains(kinds, kind) {
		return nil
	}
	return problem(table+"."+key, "not a key of a %q backend (only of %s)", kind, strings.Join(quoteAll(kinds), " and "))
}

func quoteAll(s []string) []string {
	q := make([]string, len(s))
	for i, v := range s {
		q[i] = fmt.Sprintf("%q", v)
	}
	return q
}

// GPUBackends are the GPU backends the host drives, each with Table set:
// first the [conductor] table's (named "conductor", kind "conductor",
// its token in RIG_WAKE_TOKEN, never stopped by the host), then the
// [[backends]] tables in the file's order.
func (c Config) GPUBackends() []Backend {
	all := []Backend{{
		Name: ConductorBackend, Kind: KindConductor, Plugin: c.Conductor.Plugin, URL: c.Conductor.URL,
		StartTimeout: c.Conductor.StartTimeout, LookupTimeout: c.Conductor.LookupTimeout,
		TokenEnv: DefaultTokenEnv, Table: "conductor",
	}}
	for i, b := range c.Backends {
		b.Table = fmt.Sprintf("backends[%d]", i)
		all = append(all, b)
	}
	return all
}

// BackendOf is the name of the backend of the provider p's pod: its
// backend, or "conductor" when that is "".
func BackendOf(p Provider) string {
	if p.Backend == "" {
		return ConductorBackend
	}
	return p.Backend
}

// Called is how the replies name a backend of b's kind ({{.Backend}}):
// "the conductor", "RunPod" or, for a command backend, "the pod's machine".
func (b Backend) Called() string {
	switch b.Kind {
	case KindRunPod:
		return "RunPod"
	case KindCommand:
		return "the pod's machine"
	}
	return machines.DefaultBackend
}

// LookupCap is the backend's own cap on one pod read: lookup_timeout, or
// for a command backend status_timeout.
func (b Backend) LookupCap() time.Duration {
	if b.Kind == KindCommand {
		return b.StatusTimeout.Duration
	}
	return b.LookupTimeout.Duration
}

var runPodIDPattern = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// validateBackends checks the [[backends]] tables and the providers'
// backends.
func (c Config) validateBackends() []*Error {
	var errs []*Error
	add := func(e *Error) { errs = append(errs, e) }
	named := map[string]int{}
	for i, b := range c.Backends {
		key := func(k string) string { return fmt.Sprintf("backends[%d].%s", i, k) }
		switch {
		case b.Name == "":
			add(problem(key("name"), "must not be empty"))
		case !providerNamePattern.MatchString(b.Name):
			add(problem(key("name"), "%q: must be lowercase letters, digits, \"_\" and \"-\"", b.Name))
		case b.Name == ConductorBackend:
			add(problem(key("name"), "%q is the name of the [conductor] table's backend", b.Name))
		default:
			if j, dup := named[b.Name]; dup {
				add(problem(key("name"), "%q is already the name of backends[%d]", b.Name, j))
			} else {
				named[b.Name] = i
			}
		}
		if err := checkPluginName(b.Plugin); err != nil {
			add(&Error{Key: key("plugin"), Err: err})
		}
		if b.StopAfterIdle.Duration < 0 {
			add(problem(key("stop_after_idle"), "must not be negative (\"0s\" never stops)"))
		}
		if b.StopUnservedAfter.Duration < 0 {
			add(problem(key("stop_unserved_after"), "must not be negative (\"0s\" never stops)"))
		}
		positive := func(k string, d Duration) {
			if d.Duration <= 0 {
				add(problem(key(k), "must be positive"))
			}
		}
		envName := func(k, v, what string) {
			if !envNamePattern.MatchString(v) {
				// Not quoted: a secret pasted here must not reach a log.
				add(problem(key(k), "must be the name of an environment variable (letters, digits and \"_\", not starting with a digit), not %s itself", what))
			}
		}
		switch b.Kind {
		case KindConductor:
			if err := checkHTTPURL(b.URL); err != nil {
				add(&Error{Key: key("url"), Err: err})
			}
			positive("start_timeout", b.StartTimeout)
			positive("lookup_timeout", b.LookupTimeout)
			envName("token_env", b.TokenEnv, "the token")
		case KindCommand:
			checkArgv := func(k string, argv []string, required bool) {
				switch {
				case len(argv) == 0 && required:
					add(problem(key(k), "must be set: a command as an array of strings, such as [\"systemctl\", \"start\", \"vllm\"]"))
				case len(argv) > 0 && argv[0] == "":
					add(problem(key(k), "the program name (the array's first string) is empty"))
				}
			}
			checkArgv("start", b.Start, true)
			checkArgv("stop", b.Stop, false)
			checkArgv("status", b.Status, true)
			switch b.StatusBy {
			case StatusByJSON, StatusByExit:
			default:
				add(problem(key("status_by"), "%q: must be %q or %q", b.StatusBy, StatusByJSON, StatusByExit))
			}
			for j, code := range b.StatusDownCodes {
				if code < 1 || code > 255 {
					add(problem(fmt.Sprintf("%s[%d]", key("status_down_codes"), j), "%d: must be an exit code from 1 to 255", code))
				}
			}
			switch {
			case b.URL == "" && b.StatusBy == StatusByExit:
				add(problem(key("url"), "must be set when status_by is %q: the exit code gives no URL", StatusByExit))
			case b.URL != "":
				if err := checkHTTPURL(strings.ReplaceAll(b.URL, "{pod}", "pod")); err != nil {
					add(&Error{Key: key("url"), Err: err})
				}
			}
			positive("start_timeout", b.StartTimeout)
			positive("stop_timeout", b.StopTimeout)
			positive("status_timeout", b.StatusTimeout)
			seen := map[string]int{}
			for j, name := range b.PassEnv {
				k := fmt.Sprintf("pass_env[%d]", j)
				if !envNamePattern.MatchString(name) {
					add(problem(key(k), "must be the name of an environment variable (letters, digits and \"_\", not starting with a digit), not a value"))
				} else if d, dup := seen[name]; dup {
					add(problem(key(k), "%q is already pass_env[%d]", name, d))
				} else {
					seen[name] = j
				}
			}
		case KindRunPod:
			envName("api_key_env", b.APIKeyEnv, "the key")
			if err := checkHTTPURL(b.URL); err != nil {
				add(&Error{Key: key("url"), Err: err})
			}
			if err := checkHTTPURL(strings.NewReplacer("{id}", "podid", "{port}", "8000").Replace(b.ProxyURL)); err != nil {
				add(&Error{Key: key("proxy_url"), Err: err})
			}
			if b.Port < 1 || b.Port > 65535 {
				add(problem(key("port"), "%d: must be a port from 1 to 65535", b.Port))
			}
			positive("start_timeout", b.StartTimeout)
			positive("lookup_timeout", b.LookupTimeout)
			for _, pod := range sortedKeys(b.Pods) {
				k := key("pods." + pod)
				switch id := b.Pods[pod]; {
				case !podNamePattern.MatchString(pod) || len(pod) > 63:
					add(problem(k, "%q: not a pod name (lowercase letters, digits and dashes)", pod))
				case !runPodIDPattern.MatchString(id):
					add(problem(k, "%q: a RunPod pod id is 1 to 64 letters, digits, \"_\" or \"-\"", id))
				case !slices.ContainsFunc(c.Providers, func(p Provider) bool { return p.Pod == pod && p.Backend == b.Name }):
					add(problem(k, "no provider's pod on this backend is %q", pod))
				}
			}
		default:
			add(problem(key("kind"), "%q: must be %q, %q or %q", b.Kind, KindConductor, KindCommand, KindRunPod))
		}
	}

	// Each provider's pod is on a backend that exists, one per pod.
	podAt := map[string]int{}
	for i, p := range c.Providers {
		key := fmt.Sprintf("providers[%d].backend", i)
		switch _, known := named[p.Backend]; {
		case p.Backend != "" && p.Pod == "":
			add(problem(key, "only for a provider with a pod (this one has base_url)"))
			continue
		case p.Backend != "" && p.Backend != ConductorBackend && !known:
			add(problem(key, "%q is not the name of a backend (a [[backends]] name, or %q)", p.Backend, ConductorBackend))
			continue
		case p.Pod == "":
			continue
		}
		if j, ok := podAt[p.Pod]; !ok {
			podAt[p.Pod] = i
		} else if BackendOf(c.Providers[j]) != BackendOf(p) {
			add(problem(key, "pod %q is on backend %q (providers[%d]): a pod has one backend", p.Pod, BackendOf(c.Providers[j]), j))
		}
	}
	return errs
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
