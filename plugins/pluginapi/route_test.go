package pluginapi_test

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/wakeonchat/wakeonchat/plugins/pluginapi"
)

// routedProvider is a Provider that gives route.
type routedProvider struct {
	fakeProvider
	route func(ctx context.Context, endpoint string) (pluginapi.Route, error)
}

func (p *routedProvider) Route(ctx context.Context, endpoint string) (pluginapi.Route, error) {
	return p.route(ctx, endpoint)
}

// A route crosses the plugin boundary whole; a plugin with none, or that
// says it has none, is ErrNoRoute to the host.
func TestRouteRoundTrip(t *testing.T) {
	t.Parallel()
	want := pluginapi.Route{Direct: true, BaseURL: "https://pod-8000.example/v1", Timeout: 90 * time.Second,
		Header: http.Header{"Authorization": {"Bearer k"}, "X-Extra": {"a", "b"}}}
	tests := []struct {
		name    string
		impl    pluginapi.Provider
		want    pluginapi.Route
		wantErr error
	}{
		{"a route", &routedProvider{route: func(_ context.Context, endpoint string) (pluginapi.Route, error) {
			r := want
			r.BaseURL = endpoint
			return r, nil
		}}, want, nil},
		{"a route that is not direct", &routedProvider{route: func(context.Context, string) (pluginapi.Route, error) {
			return pluginapi.Route{}, nil
		}}, pluginapi.Route{}, nil},
		{"no Router", &fakeProvider{}, pluginapi.Route{}, pluginapi.ErrNoRoute},
		{"ErrNoRoute", &routedProvider{route: func(context.Context, string) (pluginapi.Route, error) {
			return pluginapi.Route{}, pluginapi.ErrNoRoute
		}}, pluginapi.Route{}, pluginapi.ErrNoRoute},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, p := connect(t, &fakeGPU{}, tt.impl)
			got, err := p.(pluginapi.Router).Route(context.Background(), "https://pod-8000.example/v1")
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("route (-want +got):\n%s", diff)
			}
		})
	}
	// A Route that fails breaks the contract: the host sees a failed call,
	// not a route.
	_, p := connect(t, &fakeGPU{}, &routedProvider{route: func(context.Context, string) (pluginapi.Route, error) {
		return pluginapi.Route{}, errors.New("broken")
	}})
	if _, err := p.(pluginapi.Router).Route(context.Background(), "x"); err == nil || errors.Is(err, pluginapi.ErrNoRoute) {
		t.Errorf("a failing Route: %v, want a call failure", err)
	}
}
