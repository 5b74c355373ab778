package supervisor_test

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/wakeonchat/wakeonchat/host/supervisor"
	"github.com/wakeonchat/wakeonchat/plugins/pluginapi"
)

// A provider plugin of protocol 4 hands the host its route; the values of
// its headers (secrets) reach the host as they are, and nothing else.
func TestRouteFromAProtocol4Plugin(t *testing.T) {
	t.Parallel()
	p := supervisor.NewProvider(testSpec(t, nil))
	t.Cleanup(func() { _ = p.Close() })
	ctx := context.Background()

	got, err := p.Route(ctx, "http://127.0.0.1:9/v1")
	if err != nil {
		t.Fatal(err)
	}
	want := pluginapi.Route{Direct: true, BaseURL: "http://127.0.0.1:9/v1", Timeout: 7 * time.Second,
		Header: http.Header{"X-Test": {hostSecret}}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("route (-want +got):\n%s", diff)
	}
	if _, err := p.Route(ctx, "http://127.0.0.1:9/plugin"); !errors.Is(err, pluginapi.ErrNoRoute) {
		t.Errorf("a plugin that gives no route: %v, want ErrNoRoute", err)
	}
}

// A provider plugin built against protocol 3 still passes the handshake:
// it has no route, and its completions go through its Stream.
func TestProtocol3PluginCompletesThroughItsStream(t *testing.T) {
	t.Parallel()
	spec := testSpec(t, nil)
	spec.Path = protocol3Bin
	p := supervisor.NewProvider(spec)
	t.Cleanup(func() { _ = p.Close() })
	ctx := context.Background()

	if _, err := p.Route(ctx, "http://127.0.0.1:9/v1"); !errors.Is(err, pluginapi.ErrNoRoute) {
		t.Fatalf("route of a protocol 3 plugin: %v, want ErrNoRoute", err)
	}
	got, err := p.Complete(ctx, "http://127.0.0.1:9/v1", pluginapi.CompletionRequest{
		Model: "m", Messages: []pluginapi.Message{{Role: "user", Content: "hi"}}})
	if err != nil || got != "echo: hi" {
		t.Errorf("complete: %q, %v; want the plugin's echo", got, err)
	}
}
