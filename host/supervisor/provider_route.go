package supervisor

import (
	"context"
	"errors"

	"github.com/wakeonchat/wakeonchat/plugins/pluginapi"
)

var _ pluginapi.Router = (*Provider)(nil)

// Route asks the plugin once where a completion to endpoint goes
// (protocol 4). pluginapi.ErrNoRoute means every completion goes through
// Stream: the plugin negotiated protocol 3, or gives no route. The route's
// header values are secrets: nothing here logs them. Any other error is a
// fixed phrase, safe to log, with the cause wrapped (see Probe's).
func (pr *Provider) Route(ctx context.Context, endpoint string) (pluginapi.Route, error) {
	impl, gen, err := pr.p.get(ctx)
	switch {
	case errors.Is(err, ErrClosed):
		return pluginapi.Route{}, &scrubbedError{msg: "provider plugin closed", err: ErrClosed}
	case err != nil:
		return pluginapi.Route{}, &scrubbedError{msg: "provider plugin unavailable", err: err}
	}
	router, ok := impl.(pluginapi.Router)
	if !ok {
		return pluginapi.Route{}, pluginapi.ErrNoRoute
	}
	r, err := router.Route(ctx, endpoint)
	switch {
	case err == nil, errors.Is(err, pluginapi.ErrNoRoute):
		return r, err
	case ctx.Err() != nil:
		return pluginapi.Route{}, &scrubbedError{msg: "provider plugin route: " + ctx.Err().Error(), err: ctx.Err()}
	case pr.p.isClosed():
		return pluginapi.Route{}, &scrubbedError{msg: "provider plugin closed", err: ErrClosed}
	case pr.p.isCrash(ctx, gen, err):
		pr.p.crashed(gen, err)
		return pluginapi.Route{}, &scrubbedError{msg: "provider plugin crashed", err: err}
	}
	return pluginapi.Route{}, &scrubbedError{msg: "provider plugin failed", err: err}
}
