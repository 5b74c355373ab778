package pluginapi_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/wakeonchat/wakeonchat/plugins/pluginapi"
)

// fakeGPU is a hand-written fake: each method calls its function field and
// records the names it was called with.
type fakeGPU struct {
	mu       sync.Mutex
	names    []string
	getPod   func(ctx context.Context, name string) (pluginapi.Pod, error)
	startPod func(ctx context.Context, name string) (pluginapi.StartResult, error)
	stopPod  func(ctx context.Context, name string) (pluginapi.StartResult, error)
}

func (f *fakeGPU) record(op, name string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.names = append(f.names, op+" "+name)
}

func (f *fakeGPU) calls() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.names...)
}

func (f *fakeGPU) GetPod(ctx context.Context, name string) (pluginapi.Pod, error) {
	f.record("get", name)
	return f.getPod(ctx, name)
}

func (f *fakeGPU) StartPod(ctx context.Context, name string) (pluginapi.StartResult, error) {
	f.record("start", name)
	return f.startPod(ctx, name)
}

func (f *fakeGPU) StopPod(ctx context.Context, name string) (pluginapi.StartResult, error) {
	f.record("stop", name)
	return f.stopPod(ctx, name)
}

type fakeProvider struct {
	complete func(ctx context.Context, endpoint string, req pluginapi.CompletionRequest) (string, error)
}

func (f *fakeProvider) Complete(ctx context.Context, endpoint string, req pluginapi.CompletionRequest) (string, error) {
	return f.complete(ctx, endpoint, req)
}

// connect serves gpu and provider over real gRPC in this process and
// returns the host-side interfaces.
func connect(t *testing.T, gpu pluginapi.GPU, provider pluginapi.Provider) (pluginapi.GPU, pluginapi.Provider) {
	t.Helper()
	client, _ := plugin.TestPluginGRPCConn(t, false, map[string]plugin.Plugin{
		pluginapi.KindGPU:      &pluginapi.GPUPlugin{Impl: gpu},
		pluginapi.KindProvider: &pluginapi.ProviderPlugin{Impl: provider},
	})
	// Closing the client shuts the server down through go-plugin's
	// controller; stopping the server as well races inside go-plugin.
	t.Cleanup(func() { _ = client.Close() })
	g, err := client.Dispense(pluginapi.KindGPU)
	if err != nil {
		t.Fatalf("dispense gpu: %v", err)
	}
	p, err := client.Dispense(pluginapi.KindProvider)
	if err != nil {
		t.Fatalf("dispense provider: %v", err)
	}
	return g.(pluginapi.GPU), p.(pluginapi.Provider)
}

func TestGetPodRoundTrip(t *testing.T) {
	full := pluginapi.Pod{
		Name:       "qwen",
		Status:     "RUNNING",
		IsRunning:  true,
		ProxyURL:   "https://abc-8000.proxy.example/",
		PodID:      "kcbbg9igl0xdaz",
		ReadySince: time.Date(2026, 9, 9, 12, 33, 56, 0, time.UTC),
		Lookup:     pluginapi.LookupFound,
	}
	tests := []struct {
		name    string
		pod     pluginapi.Pod
		err     error
		wantPod pluginapi.Pod
		wantErr *pluginapi.LookupError
	}{
		{name: "every field", pod: full, wantPod: full},
		{name: "zero pod", pod: pluginapi.Pod{}, wantPod: pluginapi.Pod{}},
		{
			name:    "not found",
			pod:     pluginapi.Pod{Name: "qwen", Status: "", Lookup: pluginapi.LookupNotFound},
			wantPod: pluginapi.Pod{Name: "qwen", Lookup: pluginapi.LookupNotFound},
		},
		{
			name:    "unreadable keeps unknown words",
			pod:     pluginapi.Pod{Name: "qwen", Status: "WEIRD", Lookup: pluginapi.LookupUnreadable},
			wantPod: pluginapi.Pod{Name: "qwen", Status: "WEIRD", Lookup: pluginapi.LookupUnreadable},
		},
		{
			name:    "lookup error with status",
			err:     &pluginapi.LookupError{Status: 500, Message: "conductor answered status 500"},
			wantErr: &pluginapi.LookupError{Status: 500, Message: "conductor answered status 500"},
		},
		{
			name:    "lookup error without status",
			err:     &pluginapi.LookupError{Message: "conductor unreachable: ECONNREFUSED"},
			wantErr: &pluginapi.LookupError{Message: "conductor unreachable: ECONNREFUSED"},
		},
		{
			name:    "wrapped lookup error",
			err:     fmt.Errorf("get pod: %w", &pluginapi.LookupError{Status: 200, Message: "conductor answered malformed JSON"}),
			wantErr: &pluginapi.LookupError{Status: 200, Message: "conductor answered malformed JSON"},
		},
		{
			name:    "plain error becomes a lookup error",
			err:     errors.New("something broke"),
			wantErr: &pluginapi.LookupError{Message: "something broke"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fake := &fakeGPU{getPod: func(context.Context, string) (pluginapi.Pod, error) { return tt.pod, tt.err }}
			gpu, _ := connect(t, fake, nil)

			pod, err := gpu.GetPod(context.Background(), "qwen")

			if diff := cmp.Diff(tt.wantPod, pod); diff != "" {
				t.Errorf("pod (-want +got):\n%s", diff)
			}
			var gotErr *pluginapi.LookupError
			if err != nil && !errors.As(err, &gotErr) {
				t.Fatalf("error %v (%T) is not a *LookupError", err, err)
			}
			if diff := cmp.Diff(tt.wantErr, gotErr); diff != "" {
				t.Errorf("error (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff([]string{"get qwen"}, fake.calls()); diff != "" {
				t.Errorf("calls (-want +got):\n%s", diff)
			}
		})
	}
}

func TestStartStopRoundTrip(t *testing.T) {
	tests := []struct {
		name   string
		result pluginapi.StartResult
	}{
		{name: "accepted", result: pluginapi.StartResult{Requested: true, Status: 202}},
		{name: "refused", result: pluginapi.StartResult{Requested: false, Status: 409}},
		{name: "in flight", result: pluginapi.StartResult{Requested: true, TimedOut: true, TimeoutMs: 3000}},
		{name: "never sent", result: pluginapi.StartResult{Error: "ECONNREFUSED"}},
		{name: "sent, its connection cut", result: pluginapi.StartResult{Requested: true, Lost: true, Error: "ECONNRESET"}},
		{name: "every field", result: pluginapi.StartResult{Requested: true, Status: 599, TimedOut: true, TimeoutMs: 1 << 40, Lost: true, Error: "x"}},
		{name: "zero", result: pluginapi.StartResult{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fake := &fakeGPU{
				startPod: func(context.Context, string) (pluginapi.StartResult, error) { return tt.result, nil },
				stopPod:  func(context.Context, string) (pluginapi.StartResult, error) { return tt.result, nil },
			}
			gpu, _ := connect(t, fake, nil)

			start, err := gpu.StartPod(context.Background(), "qwen")
			if err != nil {
				t.Fatalf("StartPod: %v", err)
			}
			if diff := cmp.Diff(tt.result, start); diff != "" {
				t.Errorf("StartPod (-want +got):\n%s", diff)
			}
			stop, err := gpu.StopPod(context.Background(), "other-pod")
			if err != nil {
				t.Fatalf("StopPod: %v", err)
			}
			if diff := cmp.Diff(tt.result, stop); diff != "" {
				t.Errorf("StopPod (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff([]string{"start qwen", "stop other-pod"}, fake.calls()); diff != "" {
				t.Errorf("calls (-want +got):\n%s", diff)
			}
		})
	}
}

// A StartPod implementation that returns an error breaks the contract: the
// host sees a gRPC error (the plugin failed), not a StartResult.
func TestStartPodImplementationErrorIsPluginFailure(t *testing.T) {
	fake := &fakeGPU{
		startPod: func(context.Context, string) (pluginapi.StartResult, error) {
			return pluginapi.StartResult{Requested: true}, errors.New("boom")
		},
		stopPod: func(context.Context, string) (pluginapi.StartResult, error) {
			return pluginapi.StartResult{}, errors.New("boom")
		},
	}
	gpu, _ := connect(t, fake, nil)
	for _, call := range []struct {
		name string
		fn   func(context.Context, string) (pluginapi.StartResult, error)
	}{{"start", gpu.StartPod}, {"stop", gpu.StopPod}} {
		res, err := call.fn(context.Background(), "qwen")
		if err == nil {
			t.Fatalf("%s: no error, result %+v", call.name, res)
		}
		if got := status.Code(err); got != codes.Unknown {
			t.Errorf("%s: status code %v, want %v (err %v)", call.name, got, codes.Unknown, err)
		}
		if diff := cmp.Diff(pluginapi.StartResult{}, res); diff != "" {
			t.Errorf("%s: result (-want +got):\n%s", call.name, diff)
		}
	}
}

func TestCompleteRoundTrip(t *testing.T) {
	req := pluginapi.CompletionRequest{
		Model: "qwen2.5-72b",
		Messages: []pluginapi.Message{
			{Role: "system", Content: "You are Rig-E."},
			{Role: "user", Content: "héllo ✓\nline two"},
			{Role: "assistant", Content: ""},
		},
	}
	tests := []struct {
		name        string
		req         pluginapi.CompletionRequest
		content     string
		err         error
		wantContent string
		wantErr     *pluginapi.CompletionError
	}{
		{name: "answer", req: req, content: "Hi there.", wantContent: "Hi there."},
		{name: "empty answer, no messages", req: pluginapi.CompletionRequest{Model: "m"}, content: "", wantContent: ""},
		{
			name:    "http status",
			req:     req,
			err:     &pluginapi.CompletionError{Status: 502, Message: "HTTP 502 Bad Gateway"},
			wantErr: &pluginapi.CompletionError{Status: 502, Message: "HTTP 502 Bad Gateway"},
		},
		{
			name:    "transport failure",
			req:     req,
			err:     &pluginapi.CompletionError{TransportFailure: true, Message: "no response: ECONNRESET"},
			wantErr: &pluginapi.CompletionError{TransportFailure: true, Message: "no response: ECONNRESET"},
		},
		{
			name:    "aborted",
			req:     req,
			err:     &pluginapi.CompletionError{Aborted: true, Message: "timed out after 2m0s"},
			wantErr: &pluginapi.CompletionError{Aborted: true, Message: "timed out after 2m0s"},
		},
		{
			name:    "200 that died mid-body",
			req:     req,
			err:     &pluginapi.CompletionError{Status: 200, Message: "response body failed: EOF"},
			wantErr: &pluginapi.CompletionError{Status: 200, Message: "response body failed: EOF"},
		},
		{
			name:    "every flag",
			req:     req,
			err:     &pluginapi.CompletionError{Status: 200, TransportFailure: true, Aborted: true, Message: "all"},
			wantErr: &pluginapi.CompletionError{Status: 200, TransportFailure: true, Aborted: true, Message: "all"},
		},
		{
			name:    "wrapped",
			req:     req,
			err:     fmt.Errorf("complete: %w", &pluginapi.CompletionError{Status: 429, Message: "HTTP 429"}),
			wantErr: &pluginapi.CompletionError{Status: 429, Message: "HTTP 429"},
		},
		{
			name:    "plain error becomes a completion error",
			req:     req,
			err:     errors.New("provider exploded"),
			wantErr: &pluginapi.CompletionError{Message: "provider exploded"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var gotEndpoint string
			var gotReq pluginapi.CompletionRequest
			fake := &fakeProvider{complete: func(_ context.Context, endpoint string, req pluginapi.CompletionRequest) (string, error) {
				gotEndpoint, gotReq = endpoint, req
				return tt.content, tt.err
			}}
			_, provider := connect(t, nil, fake)

			content, err := provider.Complete(context.Background(), "https://pod-8000.proxy.example/v1", tt.req)

			if diff := cmp.Diff("https://pod-8000.proxy.example/v1", gotEndpoint); diff != "" {
				t.Errorf("endpoint (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.req, gotReq); diff != "" {
				t.Errorf("request (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantContent, content); diff != "" {
				t.Errorf("content (-want +got):\n%s", diff)
			}
			var gotErr *pluginapi.CompletionError
			if err != nil && !errors.As(err, &gotErr) {
				t.Fatalf("error %v (%T) is not a *CompletionError", err, err)
			}
			if diff := cmp.Diff(tt.wantErr, gotErr); diff != "" {
				t.Errorf("error (-want +got):\n%s", diff)
			}
		})
	}
}

// The host's deadline reaches the plugin's ctx.
func TestDeadlinePassesThrough(t *testing.T) {
	deadlines := make(chan time.Time, 3)
	record := func(ctx context.Context) {
		d, ok := ctx.Deadline()
		if !ok {
			d = time.Time{}
		}
		deadlines <- d
	}
	fake := &fakeGPU{
		getPod: func(ctx context.Context, _ string) (pluginapi.Pod, error) {
			record(ctx)
			return pluginapi.Pod{}, nil
		},
		startPod: func(ctx context.Context, _ string) (pluginapi.StartResult, error) {
			record(ctx)
			return pluginapi.StartResult{}, nil
		},
	}
	provider := &fakeProvider{complete: func(ctx context.Context, _ string, _ pluginapi.CompletionRequest) (string, error) {
		record(ctx)
		return "", nil
	}}
	gpu, prov := connect(t, fake, provider)

	deadline := time.Now().Add(30 * time.Second)
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	if _, err := gpu.GetPod(ctx, "qwen"); err != nil {
		t.Fatal(err)
	}
	if _, err := gpu.StartPod(ctx, "qwen"); err != nil {
		t.Fatal(err)
	}
	if _, err := prov.Complete(ctx, "http://x", pluginapi.CompletionRequest{}); err != nil {
		t.Fatal(err)
	}
	for _, op := range []string{"GetPod", "StartPod", "Complete"} {
		got := <-deadlines
		// gRPC sends the remaining time, so the plugin's deadline is the
		// host's to within the call's latency (either way: the plugin
		// adds the remaining time to its own clock on arrival).
		if diff := got.Sub(deadline).Abs(); diff > time.Second {
			t.Errorf("%s: plugin deadline %v, host deadline %v", op, got, deadline)
		}
	}
}

// Cancelling the host's ctx cancels the plugin's ctx, and the host gets
// context.Canceled (Complete: an Aborted *CompletionError). A host
// deadline that expires comes back as context.DeadlineExceeded.
func TestCancellationPassesThrough(t *testing.T) {
	tests := []struct {
		name     string
		call     func(ctx context.Context, gpu pluginapi.GPU, prov pluginapi.Provider) error
		deadline bool
		wantIs   error
		wantComp *pluginapi.CompletionError
	}{
		{
			name: "GetPod canceled",
			call: func(ctx context.Context, g pluginapi.GPU, _ pluginapi.Provider) error {
				_, err := g.GetPod(ctx, "qwen")
				return err
			},
			wantIs: context.Canceled,
		},
		{
			name: "StartPod canceled",
			call: func(ctx context.Context, g pluginapi.GPU, _ pluginapi.Provider) error {
				_, err := g.StartPod(ctx, "qwen")
				return err
			},
			wantIs: context.Canceled,
		},
		{
			name: "Complete canceled",
			call: func(ctx context.Context, _ pluginapi.GPU, p pluginapi.Provider) error {
				_, err := p.Complete(ctx, "http://x", pluginapi.CompletionRequest{})
				return err
			},
			wantComp: &pluginapi.CompletionError{Aborted: true, Message: "context canceled"},
		},
		{
			name: "GetPod deadline",
			call: func(ctx context.Context, g pluginapi.GPU, _ pluginapi.Provider) error {
				_, err := g.GetPod(ctx, "qwen")
				return err
			},
			deadline: true,
			wantIs:   context.DeadlineExceeded,
		},
		{
			name: "Complete deadline",
			call: func(ctx context.Context, _ pluginapi.GPU, p pluginapi.Provider) error {
				_, err := p.Complete(ctx, "http://x", pluginapi.CompletionRequest{})
				return err
			},
			deadline: true,
			wantComp: &pluginapi.CompletionError{Aborted: true, Message: "context deadline exceeded"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			entered := make(chan struct{}, 1)
			sawDone := make(chan error, 1)
			release := make(chan struct{})
			// The fake answers only after the host's call returned, so the
			// host sees its own cancellation, never a late answer.
			block := func(ctx context.Context) {
				entered <- struct{}{}
				<-ctx.Done()
				sawDone <- ctx.Err()
				<-release
			}
			fake := &fakeGPU{
				getPod: func(ctx context.Context, _ string) (pluginapi.Pod, error) {
					block(ctx)
					return pluginapi.Pod{}, nil
				},
				startPod: func(ctx context.Context, _ string) (pluginapi.StartResult, error) {
					block(ctx)
					return pluginapi.StartResult{}, nil
				},
			}
			provider := &fakeProvider{complete: func(ctx context.Context, _ string, _ pluginapi.CompletionRequest) (string, error) {
				block(ctx)
				return "", nil
			}}
			gpu, prov := connect(t, fake, provider)

			ctx, cancel := context.WithCancel(context.Background())
			if tt.deadline {
				ctx, cancel = context.WithTimeout(context.Background(), 50*time.Millisecond)
			}
			defer cancel()
			errc := make(chan error, 1)
			go func() { errc <- tt.call(ctx, gpu, prov) }()
			<-entered
			if !tt.deadline {
				cancel()
			}
			err := <-errc
			close(release)

			select {
			case pluginErr := <-sawDone:
				if pluginErr == nil {
					t.Error("plugin ctx done without an error")
				}
			case <-time.After(5 * time.Second):
				t.Fatal("the plugin's ctx was never cancelled")
			}
			if tt.wantIs != nil && !errors.Is(err, tt.wantIs) {
				t.Errorf("error %v, want errors.Is %v", err, tt.wantIs)
			}
			if tt.wantComp != nil {
				var ce *pluginapi.CompletionError
				if !errors.As(err, &ce) {
					t.Fatalf("error %v (%T) is not a *CompletionError", err, err)
				}
				if diff := cmp.Diff(tt.wantComp, ce); diff != "" {
					t.Errorf("error (-want +got):\n%s", diff)
				}
			}
		})
	}
}
