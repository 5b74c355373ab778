package config

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"regexp"
	"strconv"
	"strings"

	"github.com/wakeonchat/wakeonchat/machines"
	"github.com/wakeonchat/wakeonchat/plugins/pluginapi"
)

const (
	// maxPluginMessageBytes is the largest gRPC message the plugin boundary
	// carries.
	maxPluginMessageBytes = pluginapi.MaxMessageBytes
	// requestOverhead is room, in a completion request, for what is not
	// the message, the history or the system prompt.
	requestOverhead = 64 << 10
)

var (
	providerNamePattern = regexp.MustCompile(`^[a-z0-9_-]+$`)
	podNamePattern      = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]*[a-z0-9])?$`)
	envNamePattern      = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
	hostNamePattern     = regexp.MustCompile(`^[A-Za-z0-9]([A-Za-z0-9.-]*[A-Za-z0-9])?$`)
)

// Validate reports every problem with c, each an *Error naming its key,
// joined with errors.Join; nil when c is valid. It checks values on their
// own (durations positive, addresses and names well formed) and against
// each other (agent.providers names known providers, wake_watch is at least
// wake_window, the largest request fits a plugin message, ...), and parses
// and renders every reply template.
func (c Config) Validate() error { return join(c.validate()) }

func (c Config) validate() []*Error {
	var errs []*Error
	add := func(e *Error) { errs = append(errs, e) }

	// [server]
	if err := checkListen(c.Server.Listen); err != nil {
		add(&Error{Key: "server.listen", Err: err})
	}
	if c.Server.AdminListen != "" {
		if err := checkListen(c.Server.AdminListen); err != nil {
			add(&Error{Key: "server.admin_listen", Err: err})
		} else if c.Server.AdminListen == c.Server.Listen && !strings.HasSuffix(c.Server.Listen, ":0") {
			add(problem("server.admin_listen", "must differ from server.listen (leave it empty to serve /metrics and the status page on server.listen)"))
		}
	}
	if c.Server.DataDir == "" {
		add(problem("server.data_dir", "must not be empty"))
	}
	if c.Server.MaxBodyBytes <= 0 {
		add(problem("server.max_body_bytes", "must be positive"))
	}
	if c.Server.EventsKeepalive.Duration <= 0 {
		add(problem("server.events_keepalive", "must be positive"))
	}
	if c.Server.MaxEventStreams <= 0 {
		add(problem("server.max_event_streams", "must be positive"))
	}

	// [plugins]
	if c.Plugins.Dir == "" {
		add(problem("plugins.dir", "must not be empty"))
	}

	// [conductor]
	if err := checkPluginName(c.Conductor.Plugin); err != nil {
		add(&Error{Key: "conductor.plugin", Err: err})
	}
	needConductor := false
	for _, p := range c.Providers {
		needConductor = needConductor || p.Pod != "" && BackendOf(p) == ConductorBackend // on the [conductor] backend
	}
	switch {
	case c.Conductor.URL == "" && needConductor:
		add(problem("conductor.url", "must be set when a provider has a pod"))
	case c.Conductor.URL != "":
		if err := checkHTTPURL(c.Conductor.URL); err != nil {
			add(&Error{Key: "conductor.url", Err: err})
		}
	}
	positive := func(key string, d Duration) {
		if d.Duration <= 0 {
			add(problem(key, "must be positive"))
		}
	}
	positive("conductor.start_timeout", c.Conductor.StartTimeout)
	positive("conductor.lookup_timeout", c.Conductor.LookupTimeout)

	// [timings]
	t := c.Timings
	positive("timings.wake_window", t.WakeWindow)
	positive("timings.loading_ceiling", t.LoadingCeiling)
	positive("timings.wake_watch", t.WakeWatch)
	positive("timings.watch_poll", t.WatchPoll)
	positive("timings.probe_interval", t.ProbeInterval)
	positive("timings.expected_wake", t.ExpectedWake)
	positive("timings.pod_idle_stop", t.PodIdleStop)
	positive("timings.ready_slack", t.ReadySlack)
	positive("timings.completion_timeout", t.CompletionTimeout)
	if t.WakeWindow.Duration > 0 && t.WakeWatch.Duration > 0 && t.WakeWatch.Duration < t.WakeWindow.Duration {
		add(problem("timings.wake_watch", "must be at least timings.wake_window (%v)", t.WakeWindow.Duration))
	}
	if t.WakeWindow.Duration > 0 && t.ReadySlack.Duration > 0 && t.ReadySlack.Duration >= t.WakeWindow.Duration {
		add(problem("timings.ready_slack", "must be less than timings.wake_window (%v)", t.WakeWindow.Duration))
	}
	if t.WakeWatch.Duration > 0 && t.WatchPoll.Duration > t.WakeWatch.Duration {
		add(problem("timings.watch_poll", "must not be longer than timings.wake_watch (%v)", t.WakeWatch.Duration))
	}
	if t.WakeWatch.Duration > 0 && t.ProbeInterval.Duration > t.WakeWatch.Duration {
		add(problem("timings.probe_interval", "must not be longer than timings.wake_watch (%v)", t.WakeWatch.Duration))
	}

	// [[providers]]
	if len(c.Providers) == 0 {
		add(problem("providers", "at least one [[providers]] table is required"))
	}
	firstNamed := map[string]int{}
	for i, p := range c.Providers {
		key := func(k string) string { return fmt.Sprintf("providers[%d].%s", i, k) }
		switch {
		case p.Name == "":
			add(problem(key("name"), "must not be empty"))
		default:
			if !providerNamePattern.MatchString(p.Name) {
				add(problem(key("name"), "%q: must be lowercase letters, digits, \"_\" and \"-\"", p.Name))
			}
			if j, dup := firstNamed[p.Name]; dup {
				add(problem(key("name"), "%q is already the name of providers[%d]", p.Name, j))
			} else {
				firstNamed[p.Name] = i
			}
		}
		if err := checkPluginName(p.Plugin); err != nil {
			add(&Error{Key: key("plugin"), Err: err})
		}
		switch {
		case (p.Pod == "") == (p.BaseURL == ""):
			add(problem(key("pod"), "set exactly one of pod or base_url"))
		case p.Pod != "":
			if len(p.Pod) > 63 || !podNamePattern.MatchString(p.Pod) {
				add(problem(key("pod"), "%q: must be lowercase letters, digits and dashes, starting and ending with a letter or digit, at most 63", p.Pod))
			}
		default:
			if err := checkHTTPURL(p.BaseURL); err != nil {
				add(&Error{Key: key("base_url"), Err: err})
			}
		}
		if p.Path != "" && (!strings.HasPrefix(p.Path, "/") || strings.ContainsAny(p.Path, "?#")) {
			// Not quoted: a query might carry a key.
			add(problem(key("path"), "must start with \"/\" and have no query or fragment"))
		}
		if p.APIKeyEnv != "" && !envNamePattern.MatchString(p.APIKeyEnv) {
			// Not quoted: a key pasted here instead of its variable's name
			// must not reach a log.
			add(problem(key("api_key_env"), "must be the name of an environment variable (letters, digits and \"_\", not starting with a digit), not the key itself"))
		}
	}

	// [[backends]], and the providers' backends
	errs = append(errs, c.validateBackends()...)

	// [agent]
	if len(c.Agent.Providers) == 0 {
		add(problem("agent.providers", "must name at least one provider"))
	}
	seen := map[string]int{}
	for i, name := range c.Agent.Providers {
		key := fmt.Sprintf("agent.providers[%d]", i)
		if j, dup := seen[name]; dup {
			add(problem(key, "%q is already agent.providers[%d]", name, j))
			continue
		}
		seen[name] = i
		if _, ok := firstNamed[name]; !ok {
			add(problem(key, "%q is not the name of a provider", name))
		}
	}
	if c.Agent.HistoryMessages < 0 {
		add(problem("agent.history_messages", "must not be negative (0 sends no history)"))
	}
	if c.Agent.HistoryBytes < 0 {
		add(problem("agent.history_bytes", "must not be negative (0 sends no history)"))
	}
	// The largest request the host builds must fit a message to a plugin;
	// each term is capped at the limit so that the sum cannot overflow.
	if body, hist := c.Server.MaxBodyBytes, int64(c.Agent.HistoryBytes); body > 0 && hist >= 0 {
		prompt := int64(len(c.Agent.SystemPrompt))
		if min(body, maxPluginMessageBytes)+min(hist, maxPluginMessageBytes)+prompt+requestOverhead >= maxPluginMessageBytes {
			key := "agent.history_bytes" // the error is about the larger of the two
			if body > hist {
				key = "server.max_body_bytes"
			}
			add(problem(key, "server.max_body_bytes (%d) + agent.history_bytes (%d) + agent.system_prompt (%d bytes) + %d KiB must be less than %d MiB, the largest message to a plugin",
				body, hist, prompt, requestOverhead>>10, maxPluginMessageBytes>>20))
		}
	}

	// [store]
	switch c.Store.Backend {
	case BackendBbolt, BackendPostgres:
	default:
		add(problem("store.backend", "%q: must be %q or %q", c.Store.Backend, BackendBbolt, BackendPostgres))
	}
	if !envNamePattern.MatchString(c.Store.DSNEnv) {
		add(problem("store.dsn_env", "must be the name of an environment variable (letters, digits and \"_\", not starting with a digit), not the connection string itself"))
	}
	positive("store.lease", c.Store.Lease)
	if c.Store.HistoryMaxAge.Duration < 0 {
		add(problem("store.history_max_age", "must not be negative (0s keeps sessions of any age)"))
	}
	if c.Store.HistoryMaxSessions < 0 {
		add(problem("store.history_max_sessions", "must not be negative (0 keeps any number of sessions)"))
	}
	positive("store.prune_interval", c.Store.PruneInterval)
	if c.Store.SessionHistoryBytes < c.Agent.HistoryBytes || c.Store.SessionHistoryBytes <= 0 {
		add(problem("store.session_history_bytes", "%d: must be positive and at least agent.history_bytes (%d): a session must keep what a turn is sent",
			c.Store.SessionHistoryBytes, c.Agent.HistoryBytes))
	}

	// [openai]
	errs = append(errs, c.validateOpenAI()...)

	// [replies]
	_, replyErrs := c.parseReplies()
	errs = append(errs, replyErrs...)
	return errs
}

// parseReplies parses the reply templates, turning each *machines.ReplyError
// into an *Error about its key in [replies].
func (c Config) parseReplies() (*machines.Replies, []*Error) {
	r, err := machines.ParseReplies(c.Replies)
	if err == nil {
		return r, nil
	}
	var errs []*Error
	for _, e := range unjoin(err) {
		var re *machines.ReplyError
		if errors.As(e, &re) {
			errs = append(errs, &Error{Key: "replies." + string(re.Key), Err: re.Err})
		} else {
			errs = append(errs, &Error{Key: "replies", Err: e})
		}
	}
	return nil, errs
}

// checkListen accepts host:port with a numeric port; the host may be empty
// (every interface), an IP address or a host name.
func checkListen(s string) error {
	bad := fmt.Errorf("%q: must be host:port, such as \"127.0.0.1:8080\" or \":8080\"", s)
	host, port, err := net.SplitHostPort(s)
	if err != nil {
		return bad
	}
	if _, err := strconv.ParseUint(port, 10, 16); err != nil {
		return bad
	}
	if host == "" {
		return nil
	}
	if _, err := netip.ParseAddr(host); err == nil {
		return nil
	}
	if !hostNamePattern.MatchString(host) {
		return bad
	}
	return nil
}

// checkHTTPURL accepts an absolute http or https URL with a host and no
// credentials, query or fragment. The URL is never quoted in the error: it
// might hold a secret.
func checkHTTPURL(s string) error {
	u, err := url.Parse(s)
	switch {
	case err != nil:
		return errors.New("must be an absolute http or https URL (it does not parse)")
	case u.Scheme != "http" && u.Scheme != "https":
		return errors.New("must be an absolute http or https URL")
	case u.Host == "" || u.Hostname() == "":
		return errors.New("must be an absolute http or https URL with a host")
	case u.User != nil:
		return errors.New("must not contain credentials (the file holds no secrets; use the environment)")
	case u.RawQuery != "" || u.ForceQuery || u.Fragment != "" || strings.Contains(s, "#"):
		return errors.New("must not have a query or fragment")
	}
	return nil
}

// checkPluginName accepts a bare file name: no directory, no "..".
func checkPluginName(s string) error {
	switch {
	case s == "":
		return errors.New("must not be empty")
	case s == "." || s == ".." || strings.ContainsAny(s, `/\`) || strings.ContainsRune(s, 0):
		return fmt.Errorf("%q: must be a file name in plugins.dir, not a path", s)
	}
	return nil
}
