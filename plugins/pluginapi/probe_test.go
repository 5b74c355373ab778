package pluginapi_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/wakeonchat/wakeonchat/plugins/pluginapi"
)

// fakeProber is a Provider that also probes: probe answers, and every
// endpoint it is asked about is kept.
type fakeProber struct {
	fakeProvider
	probe     func(ctx context.Context, endpoint string) (pluginapi.ProbeResult, error)
	endpoints chan string
}

func (f *fakeProber) Probe(ctx context.Context, endpoint string) (pluginapi.ProbeResult, error) {
	f.endpoints <- endpoint
	return f.probe(ctx, endpoint)
}

// prober dispenses the host side of provider and returns it as a Prober.
func prober(t *testing.T, provider pluginapi.Provider) pluginapi.Prober {
	t.Helper()
	_, p := connect(t, &fakeGPU{}, provider)
	pr, ok := p.(pluginapi.Prober)
	if !ok {
		t.Fatalf("the host side of a Provider plugin (%T) is no Prober", p)
	}
	return pr
}

// Every field of a ProbeResult crosses the boundary as it was, and so does
// the endpoint.
func TestProbeRoundTrip(t *testing.T) {
	tests := []struct {
		name   string
		result pluginapi.ProbeResult
	}{
		{name: "answered", result: pluginapi.ProbeResult{Answered: true, Status: 200}},
		{name: "gateway page", result: pluginapi.ProbeResult{Status: 502, Message: "HTTP 502 Bad Gateway"}},
		{name: "no response", result: pluginapi.ProbeResult{TransportFailure: true, Message: "no response: ECONNREFUSED"}},
		{name: "timed out", result: pluginapi.ProbeResult{Aborted: true, Message: "timed out after 1s"}},
		{name: "every field", result: pluginapi.ProbeResult{Answered: true, Status: 599, TransportFailure: true, Aborted: true, Message: "x"}},
		{name: "zero", result: pluginapi.ProbeResult{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fake := &fakeProber{
				probe:     func(context.Context, string) (pluginapi.ProbeResult, error) { return tt.result, nil },
				endpoints: make(chan string, 1),
			}
			pr := prober(t, fake)

			got, err := pr.Probe(context.Background(), "https://qwen-8000.proxy.example/v1")

			if err != nil {
				t.Fatalf("Probe: %v", err)
			}
			if diff := cmp.Diff(tt.result, got); diff != "" {
				t.Errorf("Probe (-want +got):\n%s", diff)
			}
			if got := <-fake.endpoints; got != "https://qwen-8000.proxy.example/v1" {
				t.Errorf("the plugin probed %q", got)
			}
		})
	}
}

// A Provider that is no Prober (built against protocol 2's interfaces and
// rebuilt without adding Probe) answers codes.Unimplemented: the host
// sees a plugin failure, not a model that does not answer.
func TestProbeUnimplemented(t *testing.T) {
	pr := prober(t, &fakeProvider{})

	got, err := pr.Probe(context.Background(), "http://x/v1")

	if code := status.Code(errors.Unwrap(err)); code != codes.Unimplemented {
		t.Errorf("Probe: error %v (code %v), want codes.Unimplemented", err, code)
	}
	if diff := cmp.Diff(pluginapi.ProbeResult{}, got); diff != "" {
		t.Errorf("result (-want +got):\n%s", diff)
	}
}

// A Probe implementation that returns an error breaks the contract: the
// host sees a gRPC error, not a ProbeResult.
func TestProbeImplementationErrorIsPluginFailure(t *testing.T) {
	fake := &fakeProber{
		probe: func(context.Context, string) (pluginapi.ProbeResult, error) {
			return pluginapi.ProbeResult{Answered: true}, errors.New("boom")
		},
		endpoints: make(chan string, 1),
	}
	pr := prober(t, fake)

	got, err := pr.Probe(context.Background(), "http://x/v1")

	if code := status.Code(errors.Unwrap(err)); code != codes.Unknown {
		t.Errorf("Probe: error %v (code %v), want codes.Unknown", err, code)
	}
	if diff := cmp.Diff(pluginapi.ProbeResult{}, got); diff != "" {
		t.Errorf("result (-want +got):\n%s", diff)
	}
}

// The host's deadline reaches the plugin's ctx, and a deadline that passes
// while the plugin hangs comes back as context.DeadlineExceeded, at the
// deadline: a plugin that never answers cannot hold the host's probe.
func TestProbeDeadline(t *testing.T) {
	deadlines := make(chan time.Time, 1)
	release := make(chan struct{})
	fake := &fakeProber{
		probe: func(ctx context.Context, _ string) (pluginapi.ProbeResult, error) {
			d, _ := ctx.Deadline()
			deadlines <- d
			<-release // whatever ctx says
			return pluginapi.ProbeResult{Answered: true}, nil
		},
		endpoints: make(chan string, 1),
	}
	pr := prober(t, fake)
	t.Cleanup(func() { close(release) }) // before the connection closes
	deadline := time.Now().Add(200 * time.Millisecond)
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()

	_, err := pr.Probe(ctx, "http://x/v1")

	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Probe past its deadline: %v, want context.DeadlineExceeded", err)
	}
	if got := <-deadlines; got.Sub(deadline).Abs() > time.Second {
		t.Errorf("plugin deadline %v, host deadline %v", got, deadline)
	}
}
