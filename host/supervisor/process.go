package supervisor

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/wakeonchat/wakeonchat/plugins/pluginapi"
)

// defaultStartTimeout caps a launch and handshake when the caller's ctx
// has no sooner deadline. A plugin starts in tens of milliseconds.
const defaultStartTimeout = 10 * time.Second

// process is one plugin kind's subprocess, relaunched after a crash.
type process struct {
	spec  Spec
	kind  string // pluginapi.KindGPU or pluginapi.KindProvider
	log   *slog.Logger
	hlog  *hclogAdapter
	scrub func(string) string

	mu     sync.Mutex
	client *plugin.Client
	impl   any
	gen    uint64 // counts launches; a call remembers the one it used
	closed bool
}

func newProcess(spec Spec, kind string) *process {
	log := spec.logger().With("plugin", spec.Name)
	scrub := scrubber(spec.Secrets)
	return &process{spec: spec, kind: kind, log: log, hlog: newHclogAdapter(log, scrub), scrub: scrub}
}

// start launches the plugin now unless a live one is running.
func (p *process) start(ctx context.Context) error {
	_, _, err := p.get(ctx)
	return err
}

// get returns the live plugin and its generation, launching it first when
// there is none or the last one exited. Callers that arrive during a
// launch wait for it and share it.
func (p *process) get(ctx context.Context) (any, uint64, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil, 0, ErrClosed
	}
	if p.client != nil && !p.client.Exited() {
		return p.impl, p.gen, nil
	}
	if p.client != nil {
		p.log.Warn("plugin exited; relaunching")
		p.killLocked()
	}
	if err := p.launchLocked(ctx); err != nil {
		return nil, 0, err
	}
	return p.impl, p.gen, nil
}

// crashed records that a call on generation gen failed because the plugin
// died, so the next get relaunches it. A later generation is left alone:
// another caller already relaunched.
func (p *process) crashed(gen uint64, err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.gen != gen || p.client == nil {
		return
	}
	p.log.Warn("plugin crashed; it is relaunched on the next call", "error", p.scrub(err.Error()))
	p.killLocked()
}

// isCrash reports whether err from a call means the plugin died:
// gRPC Unavailable; Canceled while the caller's ctx is live (go-plugin
// closes the connection when it sees the process exit); or any other gRPC
// error while the process has exited. The caller's own cancellation is
// never a crash, and neither is data the plugin returned.
func (p *process) isCrash(ctx context.Context, gen uint64, err error) bool {
	if err == nil || ctx.Err() != nil {
		return false
	}
	st, ok := status.FromError(err)
	if !ok {
		return false
	}
	switch st.Code() {
	case codes.Unavailable, codes.Canceled:
		return true
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.gen == gen && p.client != nil && p.client.Exited()
}

func (p *process) ready() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return !p.closed && p.client != nil && !p.client.Exited()
}

func (p *process) close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closed = true
	p.killLocked()
	return nil
}

func (p *process) killLocked() {
	if p.client != nil {
		p.client.Kill()
	}
	p.client, p.impl = nil, nil
}

func (p *process) launchLocked(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("plugin %s: launch: %w", p.spec.Name, err)
	}
	if err := p.spec.validate(); err != nil {
		return err
	}
	info, err := os.Stat(p.spec.Path)
	if err != nil {
		return fmt.Errorf("plugin %s: %w", p.spec.Name, err) // *fs.PathError names the path
	}
	if info.IsDir() || info.Mode().Perm()&0o111 == 0 {
		return fmt.Errorf("plugin %s: %s is not an executable file", p.spec.Name, p.spec.Path)
	}

	timeout := defaultStartTimeout
	if d, ok := ctx.Deadline(); ok && time.Until(d) < timeout {
		timeout = max(time.Until(d), time.Millisecond)
	}
	cmd := exec.Command(p.spec.Path)
	cmd.Env = append([]string{}, p.spec.Env...)
	setPdeathsig(cmd)
	client := plugin.NewClient(&plugin.ClientConfig{
		HandshakeConfig:  pluginapi.Handshake,
		Plugins:          pluginapi.PluginMap,
		Cmd:              cmd,
		AllowedProtocols: []plugin.Protocol{plugin.ProtocolGRPC},
		AutoMTLS:         true,
		SkipHostEnv:      true,
		StartTimeout:     timeout,
		Logger:           p.hlog,
		// Whatever the plugin prints after Serve (it should not) is kept
		// as debug lines rather than discarded.
		SyncStdout: &lineWriter{log: p.hlog, level: hclog.Debug, args: []any{"stream", "stdout"}},
		SyncStderr: &lineWriter{log: p.hlog, level: hclog.Debug, args: []any{"stream", "stderr"}},
	})
	rpc, err := client.Client()
	if err != nil {
		client.Kill()
		p.log.Debug("plugin handshake failed", "detail", p.scrub(err.Error()))
		return &scrubbedError{
			msg: p.scrub(fmt.Sprintf("plugin %s: %s failed the go-plugin handshake: %s", p.spec.Name, p.spec.Path, handshakeProblem(err))),
			err: err,
		}
	}
	impl, err := rpc.Dispense(p.kind)
	if err != nil {
		client.Kill()
		return fmt.Errorf("plugin %s: %s does not serve %q: %w", p.spec.Name, p.spec.Path, p.kind, err)
	}
	p.client, p.impl = client, impl
	p.gen++
	p.log.Debug("plugin started", "pid", client.ID(), "launch", p.gen)
	return nil
}

// handshakeProblem is the one line that matters of go-plugin's multi-line
// launch error (the rest, a checklist about architectures and file modes,
// goes to the debug log).
func handshakeProblem(err error) string {
	first, _, _ := strings.Cut(err.Error(), "\n")
	if msg, ok := versionProblem(first); ok {
		return msg
	}
	line, ok := strings.CutPrefix(first, "Unrecognized remote plugin message: ")
	switch {
	case !ok:
		return first
	case strings.TrimSpace(line) == "":
		return "it printed no handshake line (it exited or wrote nothing to stdout; see its log lines)"
	}
	return fmt.Sprintf("it printed %.80q instead of a handshake line", line)
}
