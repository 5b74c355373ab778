package command

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/wakeonchat/wakeonchat/plugins/pluginapi"
)

// Defaults for the zero Config fields.
const (
	DefaultStartTimeout  = 60 * time.Second
	DefaultStopTimeout   = 60 * time.Second
	DefaultStatusTimeout = 10 * time.Second
)

// DefaultDownCodes are the exit codes of a status command in exit mode
// that mean EXITED when Config.DownCodes is nil: the LSB init-script
// status action's 1 (dead, a pid file exists), 2 (dead, a lock file
// exists) and 3 (not running). systemctl is-active exits 3 for a unit that
// is not active, but also 1 when it cannot reach systemd at all: with it,
// use just 3.
var DefaultDownCodes = []int{1, 2, 3}

// MaxStatusOutput caps what a status command may print: 64 KiB. More is
// the lookup error "output larger than 64 KiB", and the command is killed.
const MaxStatusOutput = 64 << 10

// PodPlaceholder in a command's argument or in Config.URL is replaced by
// the pod name (a pluginapi.ValidPodName, so it never starts with a dash
// and needs no quoting in a shell word).
const PodPlaceholder = "{pod}"

// StatusBy is how a status command's answer is read.
type StatusBy string

const (
	// StatusByJSON: the command prints one JSON object,
	// {"status":"RUNNING","url":"http://…","readySince":"…"}, and exits 0.
	StatusByJSON StatusBy = "json"
	// StatusByExit: the command's exit code is the answer: 0 RUNNING (at
	// Config.URL); one of Config.DownCodes EXITED (by default 1, 2 and 3,
	// the LSB status action's "not running" codes); anything else, or a
	// signal, cannot be read.
	StatusByExit StatusBy = "exit"
)

// Config configures a Runner. Its zero value is not usable: Start and
// Status are required; every other field has a default. FromEnv reads one
// from the plugin's environment.
type Config struct {
	// Start, Stop and Status are the commands, as argument vectors run
	// without a shell: Start[0] is the program (looked up in Env's PATH
	// when it has no slash), the rest its arguments, each with {pod}
	// replaced by the pod name. A shell runs only when the operator writes
	// one: ["sh","-c","docker start vllm-$0","{pod}"]. Start and Status are
	// required; a nil Stop makes StopPod answer Error "no stop command".
	Start, Stop, Status []string
	// StatusBy says how Status's answer is read. Empty means StatusByJSON.
	StatusBy StatusBy
	// DownCodes are the exit codes that mean EXITED with StatusByExit,
	// each 1 to 255. Nil means DefaultDownCodes; it must be nil with
	// StatusByJSON.
	DownCodes []int
	// URL is the model endpoint's base URL (http or https, {pod} replaced).
	// Required with StatusByExit, where every RUNNING pod has it; with
	// StatusByJSON it is the URL of a RUNNING answer that has none, and
	// may be empty.
	URL string
	// StartTimeout, StopTimeout and StatusTimeout cap one command each;
	// on the cap its whole process group is killed. Zero means
	// DefaultStartTimeout (60s), DefaultStopTimeout (60s) and
	// DefaultStatusTimeout (10s).
	StartTimeout, StopTimeout, StatusTimeout time.Duration
	// Env is the whole environment of every command, as NAME=value
	// strings: nothing of the plugin's own environment reaches a command
	// unless it is here. Nil or empty means none at all (a command named
	// without a slash is then looked up in DefaultPath). FromEnv makes it
	// PATH plus the variables WAKE_COMMAND_PASS_ENV names.
	Env []string
	// Unset lists variables the operator named for the commands that were
	// not set: New logs them once (names only), as a hint.
	Unset []string
	// Logger gets one line per start and stop outcome. Nil means none.
	Logger hclog.Logger
}

// Runner is a pluginapi.GPU that runs the operator's commands. It is safe
// for concurrent use: every call runs its own process.
type Runner struct {
	start, stop, status command
	statusBy            StatusBy
	down                map[int]bool // exit codes that mean EXITED
	url                 string
	env                 []string
	path                string // the PATH commands are looked up in
	log                 hclog.Logger
	waitDelay           time.Duration // the package's waitDelay; a test may shorten it (SetWaitDelay in export_test.go)
}

// command is one configured command and its time cap.
type command struct {
	what    string // "start", "stop", "status": for messages
	argv    []string
	timeout time.Duration
}

var _ pluginapi.GPU = (*Runner)(nil)

// New validates cfg and returns a Runner. Errors name the variable of
// FromEnv's contract they are about.
func New(cfg Config) (*Runner, error) {
	if cfg.Start == nil {
		return nil, fmt.Errorf("%s: required", EnvStart)
	}
	if cfg.Status == nil {
		return nil, fmt.Errorf("%s: required", EnvStatus)
	}
	for _, c := range []struct {
		name string
		argv []string
	}{{EnvStart, cfg.Start}, {EnvStop, cfg.Stop}, {EnvStatus, cfg.Status}} {
		if c.argv != nil && (len(c.argv) == 0 || c.argv[0] == "") {
			return nil, fmt.Errorf("%s: the program name (the array's first string) is empty", c.name)
		}
	}
	if cfg.StartTimeout < 0 || cfg.StopTimeout < 0 || cfg.StatusTimeout < 0 {
		return nil, errors.New("command timeouts must not be negative")
	}
	switch cfg.StatusBy {
	case "":
		cfg.StatusBy = StatusByJSON
	case StatusByJSON, StatusByExit:
	default:
		return nil, fmt.Errorf("%s: must be %q or %q", EnvStatusBy, StatusByJSON, StatusByExit)
	}
	if cfg.DownCodes != nil && cfg.StatusBy != StatusByExit {
		return nil, fmt.Errorf("%s: only with %s=%s", EnvStatusDownCodes, EnvStatusBy, StatusByExit)
	}
	down := map[int]bool{}
	codes := cfg.DownCodes
	if codes == nil {
		codes = DefaultDownCodes
	}
	for _, c := range codes {
		if c < 1 || c > 255 {
			return nil, fmt.Errorf("%s: %d is not an exit code from 1 to 255", EnvStatusDownCodes, c)
		}
		down[c] = true
	}
	if cfg.URL == "" && cfg.StatusBy == StatusByExit {
		return nil, fmt.Errorf("%s: required with %s=%s", EnvURL, EnvStatusBy, StatusByExit)
	}
	if cfg.URL != "" && !validURL(strings.ReplaceAll(cfg.URL, PodPlaceholder, "pod")) {
		// The URL may carry credentials: say what is wrong without it.
		return nil, fmt.Errorf("%s: must be an absolute http or https url", EnvURL)
	}
	r := &Runner{
		start:     command{"start", cfg.Start, cmp.Or(cfg.StartTimeout, DefaultStartTimeout)},
		stop:      command{"stop", cfg.Stop, cmp.Or(cfg.StopTimeout, DefaultStopTimeout)},
		status:    command{"status", cfg.Status, cmp.Or(cfg.StatusTimeout, DefaultStatusTimeout)},
		statusBy:  cfg.StatusBy,
		down:      down,
		url:       cfg.URL,
		env:       append(make([]string, 0, len(cfg.Env)), cfg.Env...), // never nil: see run
		path:      DefaultPath,
		log:       cfg.Logger,
		waitDelay: waitDelay,
	}
	for _, kv := range cfg.Env {
		if v, ok := strings.CutPrefix(kv, EnvPath+"="); ok {
			r.path = v
		}
	}
	if r.log == nil {
		r.log = hclog.NewNullLogger()
	}
	if len(cfg.Unset) > 0 {
		r.log.Warn(EnvPassEnv+" names variables the plugin was not given; the commands run without them",
			"names", strings.Join(cfg.Unset, ","))
	}
	return r, nil
}

// validURL reports whether s is an absolute http or https URL without a
// query or fragment.
func validURL(s string) bool {
	u, err := url.Parse(s)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != "" &&
		u.RawQuery == "" && u.Fragment == "" && !u.ForceQuery
}

// argv is c's argument vector for pod.
func (c command) argvFor(pod string) []string {
	out := make([]string, len(c.argv))
	for i, a := range c.argv {
		out[i] = strings.ReplaceAll(a, PodPlaceholder, pod)
	}
	return out
}

// StartPod runs the start command for pod. It never returns an error
// (design D2, #684):
//
//   - exit 0: Requested true (Status 0: there is no HTTP answer).
//   - the time cap, or the caller's deadline or cancellation, while the
//     command ran: its process group is killed, and the result is
//     Requested true, TimedOut true, TimeoutMs (the cap, or how long it ran
//     before the cancellation). The start may have reached the backend
//     (a cloud CLI, systemctl and docker all leave the operation running
//     when the client dies), so it is in flight and the host watches.
//   - a non-zero exit: Requested false, Error "exit status N" (or
//     "signal: killed", …): a definite failure, which the host records as
//     start-failed and logs as "wake failed for pod P: exit status N".
//     It is not a refusal: a refusal carries an HTTP status, which a
//     command does not have.
//   - the command could not run: Requested false, Error "not found" (no
//     such program in PATH, or no such file), "permission denied",
//     "exec format error" or "exec failed"; "canceled" or "timeout" when
//     the caller's context ended before it started.
//   - an invalid pod name: Error "invalid pod name", nothing run.
func (r *Runner) StartPod(ctx context.Context, name string) (pluginapi.StartResult, error) {
	res := r.act(ctx, r.start, name)
	r.logOutcome("start", name, res)
	return res, nil
}

// StopPod runs the stop command for pod, with StartPod's rules. Without a
// stop command it answers Error "no stop command".
func (r *Runner) StopPod(ctx context.Context, name string) (pluginapi.StartResult, error) {
	res := pluginapi.StartResult{Error: "no stop command"}
	if r.stop.argv != nil {
		res = r.act(ctx, r.stop, name)
	}
	r.logOutcome("stop", name, res)
	return res, nil
}

func (r *Runner) act(ctx context.Context, c command, name string) pluginapi.StartResult {
	if !pluginapi.ValidPodName(name) {
		return pluginapi.StartResult{Error: "invalid pod name"}
	}
	o := r.run(ctx, c, name, nil)
	switch {
	case o.notRun != "":
		return pluginapi.StartResult{Error: o.notRun}
	case o.cut:
		return pluginapi.StartResult{Requested: true, TimedOut: true, TimeoutMs: o.waited.Milliseconds()}
	case o.state.Success():
		return pluginapi.StartResult{Requested: true}
	}
	return pluginapi.StartResult{Error: o.state.String()}
}

// logOutcome writes the one line per start or stop outcome. Failures are
// warnings: the host logs the alertable line (#684). A command's
// arguments and output are never logged: they may hold secrets.
func (r *Runner) logOutcome(action, name string, res pluginapi.StartResult) {
	switch {
	case res.TimedOut:
		r.log.Info(action+" requested: in flight (the command timed out and was killed; what it asked for may go on)",
			"pod", name, "timeout_ms", res.TimeoutMs)
	case res.Requested:
		r.log.Info(action+" command succeeded", "pod", name)
	default:
		r.log.Warn(action+" command failed", "pod", name, "error", res.Error)
	}
}
