package supervisor

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"

	"github.com/wakeonchat/wakeonchat/plugins/pluginapi"
)

// defaultStartTimeout caps a launch and handshake when the caller's ctx
// has no sooner deadline. A plugin starts in tens of milliseconds.
const defaultStartTimeout = 10 * time.Second

// launchPlugin launches the plugin binary with go-plugin, handshakes and
// dispenses p.kind. The launch is bounded by ctx's deadline, else by
// defaultStartTimeout.
func (p *process) launchPlugin(ctx context.Context) (*instance, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("plugin %s: launch: %w", p.spec.Name, err)
	}
	if err := p.spec.validate(); err != nil {
		return nil, err
	}
	if err := CheckExecutable(p.spec.Name, p.spec.Path); err != nil {
		return nil, err
	}

	timeout := defaultStartTimeout
	if d, ok := ctx.Deadline(); ok && time.Until(d) < timeout {
		timeout = max(time.Until(d), time.Millisecond)
	}
	cmd := exec.Command(p.spec.Path, p.spec.Args...)
	hlog := newHclogAdapter(p.log, p.scrub)
	// The plugin logs nothing the host's logger would drop.
	cmd.Env = append(append([]string{}, p.spec.Env...), pluginapi.EnvLogLevel+"="+hlog.GetLevel().String())
	setProcAttr(cmd)
	watched := &exitWatch{GRPCPlugin: pluginapi.PluginMap[p.kind].(plugin.GRPCPlugin)}
	set := plugin.PluginSet{p.kind: watched}
	versions := map[int]plugin.PluginSet{}
	for v := pluginapi.MinProtocolVersion; v <= pluginapi.ProtocolVersion; v++ {
		versions[v] = set // one adapter: it calls only what the version has
	}
	client := plugin.NewClient(&plugin.ClientConfig{
		HandshakeConfig:  pluginapi.Handshake,
		VersionedPlugins: versions,
		Cmd:              cmd,
		AllowedProtocols: []plugin.Protocol{plugin.ProtocolGRPC},
		AutoMTLS:         true,
		SkipHostEnv:      true,
		StartTimeout:     timeout,
		Logger:           hlog,
		// The plugin boundary's limit, on purpose and both ways (go-plugin
		// would allow 2 GiB; the plugins' servers allow the same 32 MiB).
		GRPCDialOptions: []grpc.DialOption{grpc.WithDefaultCallOptions(
			grpc.MaxCallRecvMsgSize(pluginapi.MaxMessageBytes),
			grpc.MaxCallSendMsgSize(pluginapi.MaxMessageBytes),
		)},
		// Whatever the plugin prints after Serve (it should not) is kept
		// as debug lines rather than discarded.
		SyncStdout: &lineWriter{log: hlog, level: hclog.Debug, args: []any{"stream", "stdout"}},
		SyncStderr: &lineWriter{log: hlog, level: hclog.Debug, args: []any{"stream", "stderr"}},
	})
	started := time.Now()
	rpc, err := client.Client()
	if err != nil {
		client.Kill()
		p.log.Debug("plugin handshake failed", "detail", p.scrub(err.Error()))
		return nil, &scrubbedError{
			msg: p.scrub(fmt.Sprintf("plugin %s: %s failed the go-plugin handshake: %s", p.spec.Name, p.spec.Path, handshakeProblem(err))),
			err: err,
		}
	}
	impl, err := rpc.Dispense(p.kind)
	if err != nil {
		client.Kill()
		return nil, fmt.Errorf("plugin %s: %s does not serve %q: %w", p.spec.Name, p.spec.Path, p.kind, err)
	}
	if pr, ok := impl.(protocol3Provider); ok && p.kind == pluginapi.KindProvider && client.NegotiatedVersion() < 4 {
		// Protocol 3 has no Route: every completion goes through Stream.
		impl = protocol3{pr}
	}
	inst := &instance{impl: impl, pid: client.ID(), started: started}
	inst.exited, inst.kill = exitSignal(watched.ctx, client.Kill)
	return inst, nil
}

// CheckExecutable returns the error a launch of the plugin name from path
// fails with before it starts anything, nil when there is none: path is
// missing or cannot be read (the error names it), or is not an executable
// file. wakehost check reports it without launching anything.
func CheckExecutable(name, path string) error {
	info, err := os.Stat(path)
	if err != nil {
		return fmt.Errorf("plugin %s: %w", name, err) // *fs.PathError names the path
	}
	if info.IsDir() || info.Mode().Perm()&0o111 == 0 {
		return fmt.Errorf("plugin %s: %s is not an executable file", name, path)
	}
	return nil
}

// exitSignal is an instance's exited and kill: exited is closed when
// go-plugin says the process exited (it cancels ctx) or when kill returns,
// whichever comes first. go-plugin's Kill returns once the process has
// exited, but it cancels ctx a moment later, after its own goroutines are
// done: a caller that killed a crashed plugin and looks again must not find
// it live in that moment (it would call the dead process again, and fail
// as if it had crashed twice).
func exitSignal(ctx context.Context, stop func()) (<-chan struct{}, func()) {
	exited := make(chan struct{})
	var once sync.Once
	gone := func() { once.Do(func() { close(exited) }) }
	context.AfterFunc(ctx, gone)
	return exited, func() {
		stop()
		gone()
	}
}

// exitWatch is a plugin kind of pluginapi's that keeps the context go-plugin
// gives its GRPCClient: go-plugin cancels it when the plugin process exits,
// which is how the supervisor learns of an exit without a call.
type exitWatch struct {
	plugin.NetRPCUnsupportedPlugin
	plugin.GRPCPlugin
	ctx context.Context
}

func (w *exitWatch) GRPCClient(ctx context.Context, broker *plugin.GRPCBroker, c *grpc.ClientConn) (any, error) {
	w.ctx = ctx
	return w.GRPCPlugin.GRPCClient(ctx, broker, c)
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

// protocol3Provider is what a provider plugin of protocol 3 serves.
type protocol3Provider interface {
	pluginapi.Provider
	pluginapi.Streamer
	pluginapi.Prober
}

// protocol3 is a provider plugin that negotiated protocol 3: the adapter
// without its Route, which the plugin does not serve.
type protocol3 struct{ protocol3Provider }
