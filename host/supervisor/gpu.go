package supervisor

import (
	"context"
	"errors"
	"fmt"

	"github.com/wakeonchat/wakeonchat/host/metrics"
	"github.com/wakeonchat/wakeonchat/plugins/pluginapi"
)

// ErrCrashedDuringCall is a StartPod or StopPod whose plugin died during the
// call: the request may or may not have reached the provider.
var ErrCrashedDuringCall = errors.New("the plugin stopped during the call")

// GPU is a supervised GPU plugin. It implements pluginapi.GPU and is safe
// for concurrent use.
type GPU struct {
	launcher
}

var _ pluginapi.GPU = (*GPU)(nil)

// NewGPU returns a GPU plugin that is launched by Start or by the first
// call.
func NewGPU(spec Spec) *GPU {
	return &GPU{launcher{newProcess(spec, pluginapi.KindGPU)}}
}

// GetPod calls the plugin's GetPod. A lookup failure is the plugin's
// *pluginapi.LookupError, unchanged except that secrets are scrubbed from
// its message. When the plugin crashed, it is relaunched and GetPod is
// retried once; a second crash, a failed launch, or a closed GPU is an
// error. The caller's cancellation is an error wrapping ctx's.
func (g *GPU) GetPod(ctx context.Context, name string) (pluginapi.Pod, error) {
	pod, err := g.getPod(ctx, name)
	g.p.spec.Metrics.ConductorRequest(metrics.KindGet, getResult(ctx, pod, err))
	return pod, err
}

func (g *GPU) getPod(ctx context.Context, name string) (pluginapi.Pod, error) {
	for attempt := 1; ; attempt++ {
		impl, gen, err := g.p.get(ctx)
		if err != nil {
			return pluginapi.Pod{}, err
		}
		pod, err := impl.(pluginapi.GPU).GetPod(ctx, name)
		if err == nil {
			return pod, nil
		}
		if g.p.isClosed() && ctx.Err() == nil {
			return pluginapi.Pod{}, fmt.Errorf("gpu plugin %s: GetPod: %w", g.p.spec.Name, ErrClosed)
		}
		if !g.p.isCrash(ctx, gen, err) {
			return pluginapi.Pod{}, g.scrubError(err)
		}
		g.p.crashed(gen, err)
		if attempt == 2 {
			return pluginapi.Pod{}, &scrubbedError{
				msg: g.p.scrub(fmt.Sprintf("gpu plugin %s crashed twice during GetPod: %v", g.p.spec.Name, err)),
				err: err,
			}
		}
	}
}

func (g *GPU) scrubError(err error) error {
	var le *pluginapi.LookupError
	if errors.As(err, &le) {
		return &pluginapi.LookupError{Status: le.Status, Message: g.p.scrub(le.Message)}
	}
	return &scrubbedError{msg: g.p.scrub(err.Error()), err: err}
}

// StartPod calls the plugin's StartPod once (never retried: a wake must
// not be sent twice). Its outcome is a StartResult: Error "plugin
// unavailable" when the plugin could not be launched (nothing was sent),
// "plugin closed" after Close or when Close cut the call, "plugin error"
// when the plugin broke its contract by failing the call. It is an error
// when the plugin's answer, and so whether the request went out, is
// unknown: the caller's own cancellation or deadline, or
// ErrCrashedDuringCall when the plugin died with the request in its hands.
func (g *GPU) StartPod(ctx context.Context, name string) (pluginapi.StartResult, error) {
	return g.lifecycle(ctx, metrics.KindStart, name, pluginapi.GPU.StartPod)
}

// StopPod calls the plugin's StopPod once, with StartPod's rules.
func (g *GPU) StopPod(ctx context.Context, name string) (pluginapi.StartResult, error) {
	return g.lifecycle(ctx, metrics.KindStop, name, pluginapi.GPU.StopPod)
}

func (g *GPU) lifecycle(ctx context.Context, op, name string,
	call func(pluginapi.GPU, context.Context, string) (pluginapi.StartResult, error),
) (pluginapi.StartResult, error) {
	r, pluginFailed, err := g.lifecycleCall(ctx, op, name, call)
	g.p.spec.Metrics.ConductorRequest(op, startResult(r, pluginFailed, err))
	return r, err
}

// lifecycleCall makes the call. pluginFailed is true when the result is
// the supervisor's own word for a plugin that could not be asked or broke
// its contract (see StartPod), never when the result is the plugin's.
func (g *GPU) lifecycleCall(ctx context.Context, op, name string,
	call func(pluginapi.GPU, context.Context, string) (pluginapi.StartResult, error),
) (r pluginapi.StartResult, pluginFailed bool, err error) {
	impl, gen, err := g.p.get(ctx)
	switch {
	case errors.Is(err, ErrClosed):
		return pluginapi.StartResult{Error: errPluginClosed}, true, nil
	case err != nil && ctx.Err() != nil:
		return pluginapi.StartResult{}, false, fmt.Errorf("gpu plugin %s: %s pod: %w", g.p.spec.Name, op, ctx.Err())
	case err != nil:
		g.p.log.Error("gpu plugin unavailable", "op", op, "pod", name, "error", g.p.scrub(err.Error()))
		return pluginapi.StartResult{Error: errPluginUnavailable}, true, nil
	}
	r, err = call(impl.(pluginapi.GPU), ctx, name)
	switch {
	case err == nil:
		r.Error = g.p.scrub(r.Error)
		return r, false, nil
	case ctx.Err() != nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded):
		// The caller's ctx ended (the adapter says so a hair before ctx.Err
		// may): whether the request went out is unknown.
		return pluginapi.StartResult{}, false, fmt.Errorf("gpu plugin %s: %s pod: %w", g.p.spec.Name, op, err)
	case g.p.isClosed():
		return pluginapi.StartResult{Error: errPluginClosed}, true, nil
	case g.p.isCrash(ctx, gen, err):
		g.p.crashed(gen, err)
		return pluginapi.StartResult{}, false, fmt.Errorf("gpu plugin %s: %s pod: %w", g.p.spec.Name, op, ErrCrashedDuringCall)
	default:
		g.p.log.Error("gpu plugin failed a call it must not fail", "op", op, "pod", name, "error", g.p.scrub(err.Error()))
		return pluginapi.StartResult{Error: errPluginError}, true, nil
	}
}

// The plugin's own words for a start it could not make (see StartPod).
const (
	errPluginUnavailable = "plugin unavailable"
	errPluginClosed      = "plugin closed"
	errPluginError       = "plugin error"
)

// getResult is a GetPod's result label for the conductor metric.
func getResult(ctx context.Context, pod pluginapi.Pod, err error) string {
	var le *pluginapi.LookupError
	switch {
	case err == nil && pod.Lookup == pluginapi.LookupNotFound:
		return metrics.ConductorNotFound
	case err == nil && pod.Lookup == pluginapi.LookupUnreadable:
		return metrics.ConductorUnreadable
	case err == nil:
		return metrics.ConductorFound
	case errors.As(err, &le):
		return metrics.ConductorLookupFailed
	case ctx.Err() != nil:
		return metrics.ConductorCanceled
	}
	return metrics.ConductorPluginError
}

// startResult is a StartPod's (or StopPod's) result label for the
// conductor metric. pluginFailed is lifecycleCall's: the supervisor built
// r because the plugin could not be asked or broke its contract.
func startResult(r pluginapi.StartResult, pluginFailed bool, err error) string {
	switch {
	case err != nil: // whether it went out is unknown
		return metrics.ConductorLost
	case r.Requested && r.Lost: // written whole, then its connection was cut
		return metrics.ConductorLost
	case r.Requested && r.TimedOut:
		return metrics.ConductorInFlight
	case r.Requested:
		return metrics.ConductorAccepted
	case pluginFailed:
		return metrics.ConductorPluginError
	case r.Status != 0:
		return metrics.ConductorRefused
	}
	return metrics.ConductorNotSent
}
