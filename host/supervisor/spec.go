package supervisor

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/wakeonchat/wakeonchat/host/metrics"
)

// Spec says how to launch one plugin.
type Spec struct {
	// Name names the plugin in logs and errors, such as "conductor".
	Name string
	// Path is the plugin executable: a plugin binary, or wakehost itself
	// for a plugin built into it.
	Path string
	// Args are the arguments Path runs with: none for a plugin binary;
	// for a built-in plugin, those that put wakehost in plugin mode
	// ("plugin", the plugin's name). They are not secret.
	Args []string
	// Env is the plugin's whole environment, as KEY=VALUE entries. Nothing
	// else is inherited from the host (go-plugin adds its handshake
	// variables). See the pluginapi Env* constants for the contract.
	Env []string
	// Secrets are values to scrub from everything the plugin sends back as
	// text: its log lines (message and string attributes) and the messages
	// of the errors the supervisor returns. Each occurrence becomes
	// "[redacted]". Empty values are ignored.
	Secrets []string
	// Logger receives the plugin's log lines, each at its own level, and
	// the supervisor's own lines about the plugin. Nil discards them.
	Logger *slog.Logger
	// Metrics counts the plugin's relaunches and, for a GPU plugin, the
	// requests to the conductor. Nil counts nothing.
	Metrics *metrics.Metrics

	// firstRelaunch replaces firstRelaunchDelay in the relaunch schedule,
	// for the tests of real plugin processes that crash them several
	// times (QuickRelaunch in export_test.go); 0 for every other Spec.
	firstRelaunch time.Duration
}

// ErrClosed is returned by calls made after Close.
var ErrClosed = errors.New("plugin closed")

// ErrNotRunning is wrapped by the error of a call that finds the plugin
// exited with its relaunch more than a second away (or after the call's
// deadline). When the last relaunch failed, the error wraps that failure
// instead.
var ErrNotRunning = errors.New("plugin not running")

const redacted = "[redacted]"

func (s Spec) validate() error {
	if s.Path == "" {
		return fmt.Errorf("plugin %s: no path", s.Name)
	}
	for i, kv := range s.Env {
		if k, _, ok := strings.Cut(kv, "="); !ok || k == "" {
			// Never print the entry: it may be a secret.
			return fmt.Errorf("plugin %s: env entry %d is not KEY=VALUE", s.Name, i)
		}
	}
	return nil
}

func (s Spec) logger() *slog.Logger {
	if s.Logger == nil {
		return slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return s.Logger
}

// scrubber returns a function that replaces every secret with
// "[redacted]", longest first.
func scrubber(secrets []string) func(string) string {
	var pairs []string
	seen := map[string]bool{}
	var uniq []string
	for _, s := range secrets {
		if s != "" && !seen[s] {
			seen[s] = true
			uniq = append(uniq, s)
		}
	}
	if len(uniq) == 0 {
		return func(s string) string { return s }
	}
	// Longest first, so a secret that contains another is scrubbed whole.
	slices.SortStableFunc(uniq, func(a, b string) int { return len(b) - len(a) })
	for _, s := range uniq {
		pairs = append(pairs, s, redacted)
	}
	r := strings.NewReplacer(pairs...)
	return r.Replace
}

// scrubbedError is an error whose text was scrubbed; it still unwraps to
// the original for errors.Is and errors.As.
type scrubbedError struct {
	msg string
	err error
}

func (e *scrubbedError) Error() string { return e.msg }
func (e *scrubbedError) Unwrap() error { return e.err }

// launcher is what GPU and Provider share: Start, Ready and Close.
type launcher struct {
	p *process
}

// Start launches the plugin and completes the handshake now, unless it is
// already running. A missing binary is an error naming the path; a binary
// that does not answer the handshake is an error saying so. The launch is
// bounded by ctx's deadline, else by 10 s.
func (pl launcher) Start(ctx context.Context) error { return pl.p.start(ctx) }

// Ready reports whether the plugin is running and handshaken.
func (pl launcher) Ready() bool { return pl.p.ready() }

// Close kills the plugin. Later calls fail with ErrClosed.
func (pl launcher) Close() error { return pl.p.close() }
