package resolve

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"time"

	"github.com/wakeonchat/wakeonchat/plugins/pluginapi"
)

// routeTTL is how long a plugin's route for an endpoint is reused before
// the plugin is asked again: the route holds the credentials, which the
// plugin may change (a relaunch with a new key); asking costs one unary
// call a minute, off every completion's path.
const routeTTL = time.Minute

// MaxIdleModelConns is how many idle connections to a model the host keeps
// for the completions it sends itself: one model endpoint takes every
// turn, many at once, so each keeps its connection rather than net/http's
// two.
const MaxIdleModelConns = 256

// RoutedPlugin is a provider plugin as the host dispenses it (protocol 4):
// its completions' route, and its own Stream for those it must carry.
type RoutedPlugin interface {
	pluginapi.Streamer
	pluginapi.Router
}

// Direct is a provider plugin whose completions the host sends to the model
// itself when the plugin gives a direct route (control in the plugin, bytes
// in the host): the request body and the model's answer never cross the
// plugin, and the answer is classified by the same pluginapi.OpenAIStream
// the plugin runs. A plugin of protocol 3, one that gives no route, one
// whose route is not direct (a model that needs translating) and one whose
// Route failed carry the completion through their Stream, as before. It is
// a pluginapi.Provider and Streamer, safe for concurrent use.
type Direct struct {
	plugin RoutedPlugin
	client *http.Client
	now    func() time.Time

	mu     sync.Mutex
	routes map[string]cachedRoute // by endpoint
}

type cachedRoute struct {
	route pluginapi.Route
	ok    bool // false: the plugin gives no direct route
	until time.Time
}

var (
	_ pluginapi.Provider = (*Direct)(nil)
	_ pluginapi.Streamer = (*Direct)(nil)
)

// NewDirect returns plugin's completions sent by the host where it may.
func NewDirect(plugin RoutedPlugin) *Direct {
	c := pluginapi.NewHTTPClient()
	t := c.Transport.(*http.Transport)
	t.MaxIdleConns, t.MaxIdleConnsPerHost = MaxIdleModelConns, MaxIdleModelConns
	t.IdleConnTimeout = 90 * time.Second
	return &Direct{plugin: plugin, client: c, now: time.Now, routes: map[string]cachedRoute{}}
}

// Complete is pluginapi.CompleteVia over Stream.
func (d *Direct) Complete(ctx context.Context, endpoint string, req pluginapi.CompletionRequest) (string, error) {
	return pluginapi.CompleteVia(ctx, d, endpoint, req)
}

// Stream sends the completion: straight to the model on a direct route,
// else through the plugin. Either way it is sent exactly once, and every
// failure is a *pluginapi.CompletionError classified alike.
func (d *Direct) Stream(ctx context.Context, req pluginapi.StreamRequest) (*pluginapi.StreamResponse, error) {
	if r, ok := d.route(ctx, req.Endpoint); ok {
		return pluginapi.OpenAIStream(ctx, d.client, r, req.Body)
	}
	return d.plugin.Stream(ctx, req)
}

// route is endpoint's direct route, from the cache or the plugin. A Route
// that failed is not cached: this completion goes through the plugin, which
// reports its own failure, and the next asks again.
func (d *Direct) route(ctx context.Context, endpoint string) (pluginapi.Route, bool) {
	now := d.now()
	d.mu.Lock()
	c, ok := d.routes[endpoint]
	d.mu.Unlock()
	if ok && now.Before(c.until) {
		return c.route, c.ok
	}
	r, err := d.plugin.Route(ctx, endpoint)
	switch {
	case errors.Is(err, pluginapi.ErrNoRoute):
		c = cachedRoute{until: now.Add(routeTTL)}
	case err != nil:
		return pluginapi.Route{}, false
	default:
		c = cachedRoute{route: r, ok: r.Direct && r.BaseURL != "", until: now.Add(routeTTL)}
	}
	d.mu.Lock()
	if len(d.routes) > 64 {
		clear(d.routes) // endpoints change with each boot of a pod: keep few
	}
	d.routes[endpoint] = c
	d.mu.Unlock()
	return c.route, c.ok
}
