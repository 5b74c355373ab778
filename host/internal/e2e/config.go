package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Config is the wake.toml of a test host: it listens on a free loopback
// port and serves one provider, qwen, on the conductor's pod qwen, with the
// model qwen. A zero field leaves wake.toml's default, except APIKeyEnv,
// which is always written ("" configures no key).
type Config struct {
	// DataDir is [server] data_dir; "" for "data" next to the wake.toml.
	DataDir string
	// AdminListen is [server] admin_listen; "" leaves it unset.
	AdminListen string
	// EventsKeepalive is [server] events_keepalive; 0 leaves it unset.
	EventsKeepalive time.Duration

	// [conductor]
	ConductorPlugin string
	ConductorURL    string
	LookupTimeout   time.Duration
	StartTimeout    time.Duration

	// [timings]
	CompletionTimeout time.Duration
	WatchPoll         time.Duration

	// [store]: StoreDSNEnv set makes the backend "postgres", its
	// connection string in that variable.
	StoreDSNEnv string
	StoreLease  time.Duration
	// SessionHistoryBytes is [store] session_history_bytes and HistoryBytes
	// [agent] history_bytes; 0 leaves each unset.
	SessionHistoryBytes int
	HistoryBytes        int

	// [[providers]] qwen
	ProviderPlugin string
	APIKeyEnv      string

	// [openai] cold_start; "" leaves it unset (reply).
	ColdStart string
}

// WriteConfig writes c as wake.toml into a fresh temporary directory and
// returns its path.
func WriteConfig(t testing.TB, c Config) string {
	t.Helper()
	dir := t.TempDir()
	if c.DataDir == "" {
		c.DataDir = filepath.Join(dir, "data")
	}
	path := filepath.Join(dir, "wake.toml")
	if err := os.WriteFile(path, []byte(c.TOML()), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TOML is c as wake.toml's text.
func (c Config) TOML() string {
	var b strings.Builder
	q := strconv.Quote
	set := func(key, value string) {
		if value != "" {
			fmt.Fprintf(&b, "%s = %s\n", key, q(value))
		}
	}
	duration := func(key string, d time.Duration) {
		if d != 0 {
			set(key, d.String())
		}
	}
	b.WriteString("[server]\n")
	set("listen", "127.0.0.1:0")
	set("data_dir", c.DataDir)
	set("admin_listen", c.AdminListen)
	duration("events_keepalive", c.EventsKeepalive)
	b.WriteString("\n[conductor]\n")
	set("plugin", c.ConductorPlugin)
	set("url", c.ConductorURL)
	duration("lookup_timeout", c.LookupTimeout)
	duration("start_timeout", c.StartTimeout)
	if c.CompletionTimeout != 0 || c.WatchPoll != 0 {
		b.WriteString("\n[timings]\n")
		duration("completion_timeout", c.CompletionTimeout)
		duration("watch_poll", c.WatchPoll)
	}
	if c.HistoryBytes != 0 {
		fmt.Fprintf(&b, "\n[agent]\nhistory_bytes = %d\n", c.HistoryBytes)
	}
	if c.StoreDSNEnv != "" || c.SessionHistoryBytes != 0 {
		b.WriteString("\n[store]\n")
		if c.StoreDSNEnv != "" {
			set("backend", "postgres")
			set("dsn_env", c.StoreDSNEnv)
			duration("lease", c.StoreLease)
		}
		if c.SessionHistoryBytes != 0 {
			fmt.Fprintf(&b, "session_history_bytes = %d\n", c.SessionHistoryBytes)
		}
	}
	if c.ColdStart != "" {
		b.WriteString("\n[openai]\n")
		set("cold_start", c.ColdStart)
	}
	b.WriteString("\n[[providers]]\n")
	set("name", "qwen")
	set("plugin", c.ProviderPlugin)
	set("pod", "qwen")
	set("model", "qwen")
	fmt.Fprintf(&b, "api_key_env = %s\n", q(c.APIKeyEnv))
	return b.String()
}
