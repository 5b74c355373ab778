package supervisor

import (
	"context"
	"errors"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/wakeonchat/wakeonchat/plugins/pluginapi"
)

// ErrProbeUnsupported is wrapped by the error of a probe whose plugin
// serves no Probe.
var ErrProbeUnsupported = errors.New("provider plugin does not implement Probe")

var _ pluginapi.Prober = (*Provider)(nil)

// Probe calls the plugin's Probe once. It is never retried: the caller
// probes again a moment later, and a failed probe costs nothing but its
// time. What the model said, or why it said nothing, is the ProbeResult,
// its message scrubbed of secrets. An error means the probe learned nothing
// about the model; its text is a fixed phrase, safe to log, with the cause
// wrapped: "provider plugin probe: context deadline exceeded" (or
// canceled) for the caller's own ctx; "provider plugin crashed" when the
// plugin died during the call (it is relaunched, as after any crash);
// "provider plugin unavailable" when it could not be launched; "provider
// plugin closed" after Close or when Close cut the call; ErrProbeUnsupported
// when it serves no Probe; "provider plugin failed" when it broke its
// contract.
func (pr *Provider) Probe(ctx context.Context, endpoint string) (pluginapi.ProbeResult, error) {
	impl, gen, err := pr.p.get(ctx)
	switch {
	case errors.Is(err, ErrClosed):
		return pluginapi.ProbeResult{}, &scrubbedError{msg: "provider plugin closed", err: ErrClosed}
	case err != nil && ctx.Err() != nil:
		return pluginapi.ProbeResult{}, probeEnded(ctx.Err())
	case err != nil:
		return pluginapi.ProbeResult{}, &scrubbedError{msg: "provider plugin unavailable", err: err}
	}
	prober, ok := impl.(pluginapi.Prober)
	if !ok {
		return pluginapi.ProbeResult{}, ErrProbeUnsupported
	}
	r, err := prober.Probe(ctx, endpoint)
	switch {
	case err == nil:
		r.Message = pr.p.scrub(r.Message)
		return r, nil
	case ctx.Err() != nil:
		return pluginapi.ProbeResult{}, probeEnded(ctx.Err())
	case errors.Is(err, context.DeadlineExceeded):
		// The adapter says so a hair before ctx.Err may.
		return pluginapi.ProbeResult{}, probeEnded(context.DeadlineExceeded)
	case pr.p.isClosed():
		return pluginapi.ProbeResult{}, &scrubbedError{msg: "provider plugin closed", err: ErrClosed}
	case pr.p.isCrash(ctx, gen, err):
		pr.p.crashed(gen, err)
		return pluginapi.ProbeResult{}, &scrubbedError{msg: "provider plugin crashed", err: err}
	case status.Code(err) == codes.Unimplemented:
		return pluginapi.ProbeResult{}, ErrProbeUnsupported
	default:
		return pluginapi.ProbeResult{}, &scrubbedError{msg: "provider plugin failed", err: err}
	}
}

// probeEnded is a probe the caller's ctx ended.
func probeEnded(err error) error {
	return &scrubbedError{msg: "provider plugin probe: " + err.Error(), err: err}
}
