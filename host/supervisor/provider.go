package supervisor

import (
	"context"
	"errors"
	"fmt"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/wakeonchat/wakeonchat/plugins/pluginapi"
)

// errTooLarge is a completion whose request or answer crossed the plugin
// boundary's limit.
var errTooLarge = fmt.Sprintf("message over the plugin boundary's %d MiB limit", pluginapi.MaxMessageBytes>>20)

// Provider is a supervised Provider plugin. It implements
// pluginapi.Provider and is safe for concurrent use.
type Provider struct {
	launcher
}

var _ pluginapi.Provider = (*Provider)(nil)

// NewProvider returns a Provider plugin that is launched by Start or by the
// first call.
func NewProvider(spec Spec) *Provider {
	return &Provider{launcher{newProcess(spec, pluginapi.KindProvider)}}
}

// Complete calls the plugin once; it is never retried, not even after a
// crash (the payload may be what crashed the model). Every failure is a
// *pluginapi.CompletionError: the plugin's own classification (secrets
// scrubbed from its message); Aborted for the caller's cancellation or
// deadline; and, with Status 0 and neither flag (an unknown outcome),
// "provider plugin crashed" when the plugin died during the call,
// "message over the plugin boundary's 32 MiB limit" when the request or
// the answer is larger than pluginapi.MaxMessageBytes,
// "provider plugin unavailable" when it could not be launched, "provider
// plugin closed" after Close or when Close cut the call, "provider plugin
// failed" when the plugin
// broke its contract.
func (pr *Provider) Complete(ctx context.Context, endpoint string, req pluginapi.CompletionRequest) (string, error) {
	impl, gen, err := pr.p.get(ctx)
	switch {
	case errors.Is(err, ErrClosed):
		return "", &pluginapi.CompletionError{Message: "provider plugin closed"}
	case err != nil && ctx.Err() != nil:
		return "", &pluginapi.CompletionError{Aborted: true, Message: ctx.Err().Error()}
	case err != nil:
		pr.p.log.Error("provider plugin unavailable", "error", pr.p.scrub(err.Error()))
		return "", &pluginapi.CompletionError{Message: "provider plugin unavailable"}
	}
	content, err := impl.(pluginapi.Provider).Complete(ctx, endpoint, req)
	if err == nil {
		return content, nil
	}
	var ce *pluginapi.CompletionError
	switch {
	case errors.As(err, &ce):
		out := *ce
		out.Message = pr.p.scrub(ce.Message)
		return "", &out
	case pr.p.isClosed():
		// Close cut the call (the host is shutting down).
		return "", &pluginapi.CompletionError{Message: "provider plugin closed"}
	case pr.p.isCrash(ctx, gen, err):
		pr.p.crashed(gen, err)
		return "", &pluginapi.CompletionError{Message: "provider plugin crashed"}
	case status.Code(err) == codes.ResourceExhausted:
		// The request or the answer is over pluginapi.MaxMessageBytes; the
		// host's config keeps requests below it.
		return "", &pluginapi.CompletionError{Message: errTooLarge}
	default:
		pr.p.log.Error("provider plugin failed", "error", pr.p.scrub(err.Error()))
		return "", &pluginapi.CompletionError{Message: "provider plugin failed"}
	}
}
