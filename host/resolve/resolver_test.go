package resolve

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/wakeonchat/wakeonchat/plugins/pluginapi"
)

func readyResolution(endpoint string) Resolution {
	return Resolution{Pod: "qwen", Status: pluginapi.StatusRunning, PodID: "abc", Lookup: pluginapi.LookupFound, IsRunning: true, Endpoint: endpoint}
}

func TestResolverCurrentReusesReadyResolution(t *testing.T) {
	gpu := &fakeGPU{getPod: podScript(podAnswer{pod: running(oldProxy)})}
	r := NewResolver(gpu, "qwen", apiPath)

	for turn := 1; turn <= 3; turn++ {
		got, err := r.Current(context.Background())
		if err != nil {
			t.Fatalf("turn %d: Current: %v", turn, err)
		}
		if diff := cmp.Diff(readyResolution(oldURL), got); diff != "" {
			t.Errorf("turn %d: Current (-want +got):\n%s", turn, diff)
		}
	}
	if diff := cmp.Diff([]string{"qwen"}, gpu.getNames); diff != "" {
		t.Errorf("GetPod calls (-want +got):\n%s", diff)
	}
}

func TestResolverNotReady(t *testing.T) {
	tests := []struct {
		name string
		pod  pluginapi.Pod
		want NotReadyError
	}{
		{
			name: "exited",
			pod:  exited(),
			want: NotReadyError{Pod: "qwen", Status: "EXITED", Lookup: pluginapi.LookupFound, PodID: "abc", Retryable: true, UserMessage: AsleepMessage},
		},
		{
			name: "empty lookup means found",
			pod:  pluginapi.Pod{Status: "CREATED", PodID: "def"},
			want: NotReadyError{Pod: "qwen", Status: "CREATED", Lookup: pluginapi.LookupFound, PodID: "def", Retryable: true, UserMessage: AsleepMessage},
		},
		{
			name: "running without a proxy url",
			pod:  pluginapi.Pod{Status: pluginapi.StatusRunning, IsRunning: true, PodID: "abc"},
			want: NotReadyError{Pod: "qwen", Status: pluginapi.StatusRunning, Lookup: pluginapi.LookupFound, PodID: "abc", Retryable: true, UserMessage: AsleepMessage},
		},
		{
			name: "unreadable, even with a proxy url",
			pod:  pluginapi.Pod{Status: pluginapi.StatusRunning, IsRunning: true, ProxyURL: oldProxy, Lookup: pluginapi.LookupUnreadable},
			want: NotReadyError{Pod: "qwen", Status: pluginapi.StatusRunning, Lookup: pluginapi.LookupUnreadable, Retryable: true, UserMessage: AsleepMessage},
		},
		{
			name: "not found",
			pod:  pluginapi.Pod{Lookup: pluginapi.LookupNotFound},
			want: NotReadyError{Pod: "qwen", Lookup: pluginapi.LookupNotFound, Retryable: true, UserMessage: AsleepMessage},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// A ready answer first, so that there is a held resolution to drop.
			gpu := &fakeGPU{getPod: podScript(podAnswer{pod: running(oldProxy)}, podAnswer{pod: tt.pod}, podAnswer{pod: running(newProxy)})}
			r := NewResolver(gpu, "qwen", apiPath)
			if _, err := r.Current(context.Background()); err != nil {
				t.Fatalf("priming Current: %v", err)
			}

			got, err := r.Refresh(context.Background())
			if diff := cmp.Diff(Resolution{}, got); diff != "" {
				t.Errorf("Refresh resolution (-want +got):\n%s", diff)
			}
			var nr *NotReadyError
			if !errors.As(err, &nr) {
				t.Fatalf("Refresh error = %v (%T), want a *NotReadyError", err, err)
			}
			if diff := cmp.Diff(tt.want, *nr, cmpopts.IgnoreUnexported(NotReadyError{})); diff != "" {
				t.Errorf("NotReadyError (-want +got):\n%s", diff)
			}

			// The held resolution was dropped: the next turn asks again.
			next, err := r.Current(context.Background())
			if err != nil {
				t.Fatalf("Current after not ready: %v", err)
			}
			if diff := cmp.Diff(readyResolution(newURL), next); diff != "" {
				t.Errorf("Current after not ready (-want +got):\n%s", diff)
			}
			if got := gpu.getCalls(); got != 3 {
				t.Errorf("GetPod calls = %d, want 3", got)
			}
		})
	}
}

func TestResolverConductorOutageServesCopyFromCache(t *testing.T) {
	outage := errors.New(`Get "http://conductor.internal/api/pods/qwen": dial tcp: connection refused`)
	gpu := &fakeGPU{getPod: podScript(
		podAnswer{pod: running(oldProxy)},
		podAnswer{err: outage},
		podAnswer{err: outage},
	)}
	r := NewResolver(gpu, "qwen", apiPath)
	if _, err := r.Current(context.Background()); err != nil {
		t.Fatalf("priming Current: %v", err)
	}
	r.mu.Lock()
	snapshot := r.lastReady
	r.mu.Unlock()

	got, err := r.Refresh(context.Background())
	if err != nil {
		t.Fatalf("Refresh during outage: %v", err)
	}
	want := readyResolution(oldURL)
	want.FromCache = true
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Refresh during outage (-want +got):\n%s", diff)
	}

	// The held resolution is dropped: Current asks again, and during the
	// outage it too is served from the cache.
	got, err = r.Current(context.Background())
	if err != nil {
		t.Fatalf("Current during outage: %v", err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Current during outage (-want +got):\n%s", diff)
	}
	if got := gpu.getCalls(); got != 3 {
		t.Errorf("GetPod calls = %d, want 3", got)
	}

	r.mu.Lock()
	after := r.lastReady
	r.mu.Unlock()
	if diff := cmp.Diff(snapshot, after); diff != "" {
		t.Errorf("cached resolution was mutated (-before +after):\n%s", diff)
	}
	if after.FromCache {
		t.Errorf("cached resolution is tagged FromCache")
	}
}

func TestResolverConductorOutageWithNothingCached(t *testing.T) {
	outage := errors.New(`Get "http://conductor.internal/api/pods/qwen": dial tcp: connection refused`)
	for _, call := range []struct {
		name string
		do   func(*Resolver) (Resolution, error)
	}{
		{"current", func(r *Resolver) (Resolution, error) { return r.Current(context.Background()) }},
		{"refresh", func(r *Resolver) (Resolution, error) { return r.Refresh(context.Background()) }},
		{"lookup", func(r *Resolver) (Resolution, error) { return r.Lookup(context.Background()) }},
	} {
		t.Run(call.name, func(t *testing.T) {
			gpu := &fakeGPU{getPod: podScript(podAnswer{err: outage})}
			r := NewResolver(gpu, "qwen", apiPath)

			_, err := call.do(r)
			var pe *ProviderError
			if !errors.As(err, &pe) {
				t.Fatalf("error = %v (%T), want a *ProviderError", err, err)
			}
			if !errors.Is(err, outage) {
				t.Errorf("error does not wrap the conductor's error")
			}
			if !pe.FallbackEligible() {
				t.Errorf("FallbackEligible() = false, want true: nothing was sent")
			}
			want := `conductor lookup for pod qwen: Get "[url]": dial tcp: connection refused`
			if diff := cmp.Diff(want, err.Error()); diff != "" {
				t.Errorf("message (-want +got):\n%s", diff)
			}
		})
	}
}

func TestResolverConcurrentCurrentSharesOneLookup(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		const callers = 100
		release := make(chan struct{})
		gpu := &fakeGPU{getPod: func(context.Context, string) (pluginapi.Pod, error) {
			<-release
			return running(oldProxy), nil
		}}
		r := NewResolver(gpu, "qwen", apiPath)

		results := make([]Resolution, callers)
		errs := make([]error, callers)
		var wg sync.WaitGroup
		for i := range callers {
			wg.Go(func() { results[i], errs[i] = r.Current(context.Background()) })
		}
		// Every caller is blocked: one lookup runs, the others wait for it,
		// and none can have seen a held resolution and skipped it.
		synctest.Wait()
		close(release)
		wg.Wait()

		if got := gpu.getCalls(); got != 1 {
			t.Errorf("GetPod calls = %d, want 1", got)
		}
		for i := range callers {
			if errs[i] != nil {
				t.Errorf("caller %d: %v", i, errs[i])
				continue
			}
			if diff := cmp.Diff(readyResolution(oldURL), results[i]); diff != "" {
				t.Errorf("caller %d (-want +got):\n%s", i, diff)
			}
		}
	})
}

func TestResolverWaiterStopsWithItsContext(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		entered, release := make(chan struct{}), make(chan struct{})
		gpu := &fakeGPU{getPod: func(context.Context, string) (pluginapi.Pod, error) {
			close(entered)
			<-release
			return running(oldProxy), nil
		}}
		r := NewResolver(gpu, "qwen", apiPath)

		leader := make(chan error, 1)
		go func() {
			_, err := r.Current(context.Background())
			leader <- err
		}()
		<-entered

		ctx, cancel := context.WithCancel(context.Background())
		waiter := make(chan error, 1)
		go func() {
			_, err := r.Current(ctx)
			waiter <- err
		}()
		synctest.Wait() // the waiter has joined the lookup
		cancel()
		if err := <-waiter; !errors.Is(err, context.Canceled) {
			t.Errorf("waiter error = %v, want context.Canceled", err)
		}

		close(release)
		if err := <-leader; err != nil {
			t.Errorf("leader error = %v, want nil", err)
		}
		if got := gpu.getCalls(); got != 1 {
			t.Errorf("GetPod calls = %d, want 1", got)
		}
	})
}

// TestResolverLookupPanic: a GPU plugin that panics in a shared lookup
// panics in the caller that started it (whose turn recovers), the callers
// that joined get errLookupPanicked, and the next call asks again.
func TestResolverLookupPanic(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		release := make(chan struct{})
		crash := true
		gpu := &fakeGPU{getPod: func(context.Context, string) (pluginapi.Pod, error) {
			if crash {
				<-release
				panic("gpu plugin crashed")
			}
			return running(oldProxy), nil
		}}
		r := NewResolver(gpu, "qwen", apiPath)

		leader := make(chan any, 1)
		go func() {
			defer func() { leader <- recover() }()
			_, _ = r.Current(context.Background())
		}()
		synctest.Wait() // the leader's lookup is running
		waiter := make(chan error, 1)
		go func() {
			_, err := r.Current(context.Background())
			waiter <- err
		}()
		synctest.Wait() // the waiter has joined it
		close(release)

		if got := <-leader; got != "gpu plugin crashed" {
			t.Errorf("leader recovered %v, want the plugin's panic", got)
		}
		if err := <-waiter; !errors.Is(err, errLookupPanicked) {
			t.Errorf("waiter error = %v, want errLookupPanicked", err)
		}
		crash = false
		if _, err := r.Current(context.Background()); err != nil {
			t.Errorf("the next lookup: %v", err)
		}
		if got := gpu.getCalls(); got != 2 {
			t.Errorf("GetPod calls = %d, want 2", got)
		}
	})
}

func TestResolverLookup(t *testing.T) {
	outage := errors.New("conductor down")
	notFound := pluginapi.Pod{Lookup: pluginapi.LookupNotFound}
	tests := []struct {
		name    string
		answers []podAnswer
		want    []Resolution // one per Lookup call; every call must succeed
	}{
		{
			name:    "ready",
			answers: []podAnswer{{pod: running(oldProxy)}},
			want:    []Resolution{readyResolution(oldURL)},
		},
		{
			name:    "exited is a view, not an error",
			answers: []podAnswer{{pod: exited()}},
			want:    []Resolution{{Pod: "qwen", Status: "EXITED", PodID: "abc", Lookup: pluginapi.LookupFound}},
		},
		{
			name:    "not found is a view, not an error",
			answers: []podAnswer{{pod: notFound}},
			want:    []Resolution{{Pod: "qwen", Lookup: pluginapi.LookupNotFound}},
		},
		{
			name:    "outage serves the last view, whatever it said",
			answers: []podAnswer{{pod: running(oldProxy)}, {pod: exited()}, {err: outage}},
			want: []Resolution{
				readyResolution(oldURL),
				{Pod: "qwen", Status: "EXITED", PodID: "abc", Lookup: pluginapi.LookupFound},
				{Pod: "qwen", Status: "EXITED", PodID: "abc", Lookup: pluginapi.LookupFound, FromCache: true},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			gpu := &fakeGPU{getPod: podScript(tt.answers...)}
			r := NewResolver(gpu, "qwen", apiPath)
			var got []Resolution
			for range tt.want {
				res, err := r.Lookup(context.Background())
				if err != nil {
					t.Fatalf("Lookup: %v", err)
				}
				got = append(got, res)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Lookup views (-want +got):\n%s", diff)
			}
		})
	}
}

func TestJoinEndpoint(t *testing.T) {
	tests := []struct{ proxy, path, want string }{
		{"https://p.example", "/v1", "https://p.example/v1"},
		{"https://p.example/", "/v1", "https://p.example/v1"},
		{"https://p.example", "v1", "https://p.example/v1"},
		{"https://p.example/", "", "https://p.example/"},
	}
	for _, tt := range tests {
		if got := joinEndpoint(tt.proxy, tt.path); got != tt.want {
			t.Errorf("joinEndpoint(%q, %q) = %q, want %q", tt.proxy, tt.path, got, tt.want)
		}
	}
}

func TestResolutionNeverShowsEndpoint(t *testing.T) {
	res := readyResolution(oldURL)
	var b strings.Builder
	for _, s := range []string{res.String(), res.LogValue().String(), fmtV(res), jsonOf(t, res)} {
		b.WriteString(s)
		b.WriteString("\n")
	}
	if strings.Contains(b.String(), "proxy.example") {
		t.Errorf("endpoint shown:\n%s", b.String())
	}
	if !strings.Contains(b.String(), "qwen") {
		t.Errorf("nothing shown at all, the check above cannot fail:\n%s", b.String())
	}
}

// recordingObserver keeps every pod it was told about.
type recordingObserver struct {
	mu       sync.Mutex
	seen     []pluginapi.Pod
	answered []time.Time // readySince of each answered turn
}

func (o *recordingObserver) Answered(_ context.Context, pod string, readySince time.Time) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.answered = append(o.answered, readySince)
}

func (o *recordingObserver) Observe(_ context.Context, pod string, p pluginapi.Pod) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.seen = append(o.seen, p)
}

// TestResolverObserver: every answer of the conductor, to whichever call
// asked, reaches the observer once; a failed lookup and the held
// resolution (no conductor read) do not.
func TestResolverObserver(t *testing.T) {
	running := pluginapi.Pod{Name: "qwen", Status: pluginapi.StatusRunning, IsRunning: true, ProxyURL: "https://pod.example", Lookup: pluginapi.LookupFound}
	gpu := &fakeGPU{getPod: podScript(
		podAnswer{pod: exited()},
		podAnswer{err: errors.New("conductor down")},
		podAnswer{pod: running},
	)}
	obs := &recordingObserver{}
	r := NewResolver(gpu, "qwen", apiPath)
	r.SetObserver(obs)
	ctx := context.Background()
	r.Lookup(ctx)  // EXITED: observed
	r.Refresh(ctx) // failed: not observed
	r.Current(ctx) // RUNNING: observed, and held
	r.Current(ctx) // held: no conductor read
	want := []pluginapi.Pod{exited(), running}
	if diff := cmp.Diff(want, obs.seen); diff != "" {
		t.Errorf("observed (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"qwen", "qwen", "qwen"}, gpu.getNames); diff != "" {
		t.Errorf("conductor reads (-want +got):\n%s", diff)
	}
}

// TestModelAnsweredObserved: a turn the model answers is told to the
// observer with the readySince it answered on, on every completion path; a
// failed turn is not.
func TestModelAnsweredObserved(t *testing.T) {
	since := time.Date(2026, 9, 9, 12, 33, 56, 0, time.UTC)
	running := pluginapi.Pod{Name: "qwen", Status: pluginapi.StatusRunning, IsRunning: true, ProxyURL: "https://pod.example",
		Lookup: pluginapi.LookupFound, ReadySince: since}
	for _, send := range []Send{Retry, NoResend, Once} {
		t.Run(send.String(), func(t *testing.T) {
			gpu := &fakeGPU{getPod: podScript(podAnswer{pod: running})}
			fail := true
			prov := &fakeProvider{complete: func(context.Context, string, pluginapi.CompletionRequest) (string, error) {
				if fail {
					return "", &pluginapi.CompletionError{Status: 500}
				}
				return "hello", nil
			}}
			obs := &recordingObserver{}
			m := &Model{Name: "openai-api", Provider: prov, Resolver: NewResolver(gpu, "qwen", apiPath)}
			m.Resolver.SetObserver(obs)
			if _, err := m.Complete(context.Background(), nil, send); err == nil {
				t.Fatal("the failing turn answered")
			}
			fail = false
			if _, err := m.Complete(context.Background(), nil, send); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff([]time.Time{since}, obs.answered); diff != "" {
				t.Errorf("answered (-want +got):\n%s", diff)
			}
		})
	}
}
