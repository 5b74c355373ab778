package runpod_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/wakeonchat/wakeonchat/plugins/pluginapi"
	"github.com/wakeonchat/wakeonchat/plugins/pluginapi/plugintest"
	"github.com/wakeonchat/wakeonchat/plugins/runpod"
	"github.com/wakeonchat/wakeonchat/plugins/runpod/runpodfake"
)

// Every outcome of a start or a stop is a StartResult (design D2), with
// one log line, the requests RunPod's API takes, and the pod's status in
// the fake afterwards.
func TestStartStopPod(t *testing.T) {
	t.Parallel()
	start, stop := (*runpod.Client).StartPod, (*runpod.Client).StopPod
	post := func(action string) runpodfake.Request {
		return runpodfake.Request{Method: "POST", Path: "/v2/pods/" + podID + "/action", Authorization: "Bearer " + testKey,
			ContentType: "application/json", Body: `{"action":"` + action + `"}`}
	}
	get := runpodfake.Request{Method: "GET", Path: "/v2/pods/" + podID, Authorization: "Bearer " + testKey}
	tests := []struct {
		name       string
		call       func(*runpod.Client, context.Context, string) (pluginapi.StartResult, error)
		status     string // the pod's status in the fake; empty: no such pod
		key        runpod.Key
		fail       map[runpodfake.Op]runpodfake.Answer
		url        func(testing.TB) string
		timeout    time.Duration
		want       pluginapi.StartResult
		wantLog    string
		wantReqs   []runpodfake.Request // nil: not checked
		wantStatus string               // the pod's status afterwards; empty: not checked
	}{
		{
			name: "start an exited pod", call: start, status: runpodfake.Exited,
			want: pluginapi.StartResult{Requested: true, Status: 200}, wantLog: "info start accepted",
			wantReqs: []runpodfake.Request{post("start")}, wantStatus: runpodfake.Starting,
		},
		{
			name: "start a pod in error", call: start, status: runpodfake.Error,
			want: pluginapi.StartResult{Requested: true, Status: 200}, wantLog: "info start accepted", wantStatus: runpodfake.Starting,
		},
		{
			name: "start while starting joins the wake", call: start, status: runpodfake.Starting,
			want:     pluginapi.StartResult{Requested: true, Status: 409},
			wantLog:  "info start requested: the pod is already where it leads (RunPod answered 409)",
			wantReqs: []runpodfake.Request{post("start"), get}, wantStatus: runpodfake.Starting,
		},
		{
			name: "start while running joins", call: start, status: runpodfake.Running,
			want:    pluginapi.StartResult{Requested: true, Status: 409},
			wantLog: "info start requested: the pod is already where it leads (RunPod answered 409)",
		},
		{
			name: "start a terminated pod is refused", call: start, status: runpodfake.Terminated,
			want: pluginapi.StartResult{Status: 409}, wantLog: "warn start refused", wantStatus: runpodfake.Terminated,
		},
		{
			name: "a 409 whose read fails is refused", call: start, status: runpodfake.Running,
			fail: map[runpodfake.Op]runpodfake.Answer{runpodfake.Start: runpodfake.Problem(409, "not valid"), runpodfake.Get: runpodfake.Problem(500, "oops")},
			want: pluginapi.StartResult{Status: 409}, wantLog: "warn start refused",
		},
		{
			name: "no free GPU on the pod's machine", call: start, status: runpodfake.Exited,
			fail: map[runpodfake.Op]runpodfake.Answer{runpodfake.Start: runpodfake.NoFreeGPU()},
			want: pluginapi.StartResult{Status: 400}, wantLog: "warn start refused: the pod's machine has no free GPU",
			wantStatus: runpodfake.Exited,
		},
		{
			name: "no free GPU as v1 answered it", call: start, status: runpodfake.Exited,
			fail: map[runpodfake.Op]runpodfake.Answer{runpodfake.Start: {Status: 500,
				Body: `{"error":"start pod: There are not enough free GPUs on the host machine to start this pod.","status":500}`}},
			want: pluginapi.StartResult{Status: 500}, wantLog: "warn start refused: the pod's machine has no free GPU",
		},
		{
			name: "401: a wrong key", call: start, status: runpodfake.Exited, key: "rpa_WRONG",
			want:       pluginapi.StartResult{Status: 401},
			wantLog:    "warn start refused: RunPod rejected the API key (the variable WAKE_RUNPOD_API_KEY_ENV names)",
			wantStatus: runpodfake.Exited,
		},
		{
			name: "403", call: start, status: runpodfake.Exited,
			fail:    map[runpodfake.Op]runpodfake.Answer{runpodfake.Start: runpodfake.Problem(403, "access denied")},
			want:    pluginapi.StartResult{Status: 403},
			wantLog: "warn start refused: RunPod rejected the API key (the variable WAKE_RUNPOD_API_KEY_ENV names)",
		},
		{
			name: "404: no such pod", call: start,
			want: pluginapi.StartResult{Status: 404}, wantLog: "warn start refused", wantReqs: []runpodfake.Request{post("start")},
		},
		{
			name: "429: rate limited, not retried", call: start, status: runpodfake.Exited,
			fail: map[runpodfake.Op]runpodfake.Answer{runpodfake.Start: runpodfake.RateLimited(12)},
			want: pluginapi.StartResult{Status: 429}, wantLog: "warn start refused: rate limited by RunPod",
			wantReqs: []runpodfake.Request{post("start")},
		},
		{
			name: "500", call: start, status: runpodfake.Exited,
			fail: map[runpodfake.Op]runpodfake.Answer{runpodfake.Start: runpodfake.Problem(500, "internal error")},
			want: pluginapi.StartResult{Status: 500}, wantLog: "warn start refused",
		},
		{
			name: "502 html from a gateway", call: start, status: runpodfake.Exited,
			fail: map[runpodfake.Op]runpodfake.Answer{runpodfake.Start: {Status: 502, Body: "<html>Bad gateway</html>"}},
			want: pluginapi.StartResult{Status: 502}, wantLog: "warn start refused",
		},
		{
			name: "the cap fires after sending: in flight", call: start, status: runpodfake.Exited, timeout: 50 * time.Millisecond,
			fail:    map[runpodfake.Op]runpodfake.Answer{runpodfake.Start: {Hang: true}},
			want:    pluginapi.StartResult{Requested: true, TimedOut: true, TimeoutMs: 50},
			wantLog: "info start requested: in flight (client timed out; RunPod continues)",
		},
		{
			name: "the connection cut after sending: lost, in flight", call: start, status: runpodfake.Exited,
			fail:    map[runpodfake.Op]runpodfake.Answer{runpodfake.Start: {Cut: true}},
			want:    pluginapi.StartResult{Requested: true, Lost: true, Error: "EOF"},
			wantLog: "warn start requested: in flight (the connection was cut after the request was sent; its answer is lost)",
		},
		{
			name: "connection refused: not sent", call: start, url: plugintest.ClosedURL,
			want: pluginapi.StartResult{Error: "ECONNREFUSED"}, wantLog: "warn start failed",
		},
		{
			name: "stop a running pod", call: stop, status: runpodfake.Running,
			want: pluginapi.StartResult{Requested: true, Status: 200}, wantLog: "info stop accepted",
			wantReqs: []runpodfake.Request{post("stop")}, wantStatus: runpodfake.Exited,
		},
		{
			name: "stop a starting pod", call: stop, status: runpodfake.Starting,
			want: pluginapi.StartResult{Requested: true, Status: 200}, wantLog: "info stop accepted", wantStatus: runpodfake.Exited,
		},
		{
			name: "stop an exited pod: it is stopped", call: stop, status: runpodfake.Exited,
			want:     pluginapi.StartResult{Requested: true, Status: 409},
			wantLog:  "info stop requested: the pod is already where it leads (RunPod answered 409)",
			wantReqs: []runpodfake.Request{post("stop"), get},
		},
		{
			name: "stop with a wrong key", call: stop, status: runpodfake.Running, key: "rpa_WRONG",
			want:       pluginapi.StartResult{Status: 401},
			wantLog:    "warn stop refused: RunPod rejected the API key (the variable WAKE_RUNPOD_API_KEY_ENV names)",
			wantStatus: runpodfake.Running,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			fake := runpodfake.New(testKey)
			fake.BootTime = time.Hour
			if tt.status != "" {
				fake.AddPod(podID, tt.status)
			}
			for op, a := range tt.fail {
				fake.Fail(op, podID, a)
			}
			var base string
			if tt.url != nil {
				base = tt.url(t)
			} else {
				base = serve(t, fake, nil)
			}
			c, logs := newClient(t, runpod.Config{URL: base, Key: tt.key, StartTimeout: tt.timeout})

			var got pluginapi.StartResult
			var err error
			plugintest.Within(t, 2*time.Second, func() { got, err = tt.call(c, context.Background(), podID) })
			if err != nil {
				t.Fatalf("error: %v", err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("result (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff([]string{tt.wantLog}, logs.Lines(t)); diff != "" {
				t.Errorf("log (-want +got):\n%s", diff)
			}
			leaks(t, "the log", logs.String(), base)
			leaks(t, "the error class", got.Error, base)
			if tt.wantReqs != nil {
				if diff := cmp.Diff(tt.wantReqs, fake.Requests()); diff != "" {
					t.Errorf("requests (-want +got):\n%s", diff)
				}
			}
			if tt.wantStatus != "" {
				if s := fake.Status(podID); s != tt.wantStatus {
					t.Errorf("pod status afterwards %s, want %s", s, tt.wantStatus)
				}
			}
		})
	}
}

// The caller's deadline caps a start below StartTimeout, and a caller who
// gives up after sending leaves the start in flight.
func TestStartPodCallerDeadline(t *testing.T) {
	t.Parallel()
	fake := runpodfake.New(testKey)
	fake.AddPod(podID, runpodfake.Exited)
	fake.Fail(runpodfake.Start, podID, runpodfake.Answer{Hang: true})
	c, _ := newClient(t, runpod.Config{URL: serve(t, fake, nil), StartTimeout: time.Minute})
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()

	var got pluginapi.StartResult
	plugintest.Within(t, 2*time.Second, func() { got, _ = c.StartPod(ctx, podID) })
	if !got.Requested || !got.TimedOut || got.TimeoutMs > 1000 || got.TimeoutMs < 1 {
		t.Errorf("result %+v, want in flight after about 50 ms", got)
	}
}

func TestKeyNeverFormats(t *testing.T) {
	t.Parallel()
	cfg := runpod.Config{Key: testKey}
	for _, s := range []string{cfg.Key.String(), cfg.Key.GoString(), strings.Join([]string{
		sprint("%v %+v %#v %s", cfg, cfg, cfg, cfg.Key)}, "")} {
		if strings.Contains(s, testKey) {
			t.Errorf("the key leaked: %s", s)
		}
	}
}
