package pluginapi

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"time"
)

// Route is where a completion goes and how, as a provider plugin hands it to
// the host (protocol 4): control in the plugin, bytes in the host. The
// plugin resolves the endpoint and holds the credentials; for a model that
// speaks the OpenAI API the host then sends the request and relays the
// answer itself (OpenAIStream), so no byte of it crosses the plugin.
type Route struct {
	// Direct is true when the host may send the request itself: the model
	// speaks the OpenAI chat-completions API at BaseURL. False: the model
	// needs the plugin to translate, and every completion goes through the
	// plugin's Stream.
	Direct bool
	// BaseURL is the model API's base URL, such as https://host/v1: the
	// endpoint the host asked about, or the plugin's own.
	BaseURL string
	// Header holds the headers to add to every request (the API key's
	// Authorization among them). Their values are secrets: the host never
	// logs them, and OpenAIStream redacts them from what it reports.
	Header http.Header
	// Timeout caps a completion until its answer's head, and then each
	// wait for more of its body (a stream may last longer than Timeout; a
	// silence may not).
	Timeout time.Duration
}

// Router is what a provider plugin of protocol 4 answers besides Stream and
// Probe: the route of a completion to endpoint. A plugin that has none
// answers every Route with ErrNoRoute (on the wire, codes.Unimplemented),
// and the host sends every completion through Stream.
type Router interface {
	Route(ctx context.Context, endpoint string) (Route, error)
}

// ErrNoRoute is a Router's answer when completions must go through the
// plugin: a plugin of an earlier protocol, or one that does not implement
// Router.
var ErrNoRoute = errors.New("the provider plugin gives no route: completions go through it")

// secrets are r's header values, which OpenAIStream redacts from the
// model's error messages and bodies.
func (r Route) secrets() []string {
	var out []string
	for _, vs := range r.Header {
		for _, v := range vs {
			if v != "" {
				out = append(out, v)
				// A bearer token is also redacted alone, as a model may
				// echo it without its scheme.
				if tok, ok := strings.CutPrefix(v, "Bearer "); ok && tok != "" {
					out = append(out, tok)
				}
			}
		}
	}
	return out
}
