package status

import (
	"context"
	"errors"
	"flag"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/wakeonchat/wakeonchat/host/events"
	"github.com/wakeonchat/wakeonchat/host/internal/fakeclock"
	"github.com/wakeonchat/wakeonchat/host/supervisor"
	"github.com/wakeonchat/wakeonchat/machines"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata")

var t0 = time.Date(2026, 9, 9, 12, 26, 25, 0, time.UTC)

// fakePods is each pod's current update, by name.
type fakePods map[string]events.Update

func (f fakePods) Current(pod string) events.Update {
	if u, ok := f[pod]; ok {
		return u
	}
	return events.Update{Record: machines.NewRecord(pod), View: machines.View{Lookup: machines.LookupUnreadable}}
}

// fakeLog is a wake log; err fails every read.
type fakeLog struct {
	mu    sync.Mutex
	wakes map[string][]machines.Wake
	err   error
	reads int
}

func (f *fakeLog) Wakes(_ context.Context, pod string) ([]machines.Wake, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.reads++
	if f.err != nil {
		return nil, f.err
	}
	return f.wakes[pod], nil
}

func (f *fakeLog) fail(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.err = err
}

// fakeHealth is a plugin's snapshot.
type fakeHealth supervisor.Health

func (f fakeHealth) Health() supervisor.Health { return supervisor.Health(f) }

var running = machines.View{Status: "RUNNING", IsRunning: true, Lookup: machines.LookupFound}

// wake is a logged wake requested at t0+at, up after boot and ready after
// a further load (0: never).
func wake(at, boot, load time.Duration, outcome string, served bool) machines.Wake {
	w := machines.Wake{Pod: "qwen", RequestedAt: t0.Add(at), Outcome: outcome, Served: served}
	if boot > 0 {
		w.RunningAt = w.RequestedAt.Add(boot)
	}
	if load > 0 {
		w.ReadyAt = w.RunningAt.Add(load)
	}
	return w
}

// world is a status server over fakes: pod qwen loading on a wake
// requested 7 min ago, three logged wakes, a conductor plugin that runs
// and a provider plugin that is down.
type world struct {
	srv  *Server
	pods fakePods
	log  *fakeLog
	clk  *fakeclock.Clock
	logs *strings.Builder
}

func newWorld(t *testing.T) *world {
	t.Helper()
	pod, err := machines.NewPod(machines.DefaultPolicy())
	if err != nil {
		t.Fatal(err)
	}
	now := t0.Add(3 * time.Hour)
	w := &world{
		pods: fakePods{"qwen": {
			Record: machines.Record{Pod: "qwen", State: machines.Loading, WakeRequestedAt: now.Add(-7 * time.Minute),
				RunningAt: now.Add(-30 * time.Second), ModelLoadingSince: now.Add(-7 * time.Minute)},
			View: running, At: now.Add(-30 * time.Second),
		}},
		log: &fakeLog{wakes: map[string][]machines.Wake{"qwen": {
			wake(0, 6*time.Minute+30*time.Second, 2*time.Minute+30*time.Second, "ready", true),
			wake(time.Hour, 0, 0, "refused", false),
			wake(2*time.Hour, 7*time.Minute, 3*time.Minute, "ready", false),
		}}},
		clk:  fakeclock.New(now),
		logs: &strings.Builder{},
	}
	w.srv = New(Config{
		Names: []string{"qwen"}, Pods: w.pods, Policy: pod, Wakes: w.log,
		Estimate: func(string) machines.Estimate {
			return machines.Estimate{Wake: 9*time.Minute + 30*time.Second, Wakes: 2}
		},
		Plugins: []Plugin{
			{For: "conductor", Health: fakeHealth{Name: "wake-plugin-conductor", Kind: "gpu", Running: true, Up: 3 * time.Hour, Restarts: 1}},
			{For: "provider qwen", Health: fakeHealth{Name: "wake-plugin-provider-openai", Kind: "provider", FailedLaunches: 2, LastLaunchFailed: true, NextRelaunch: 1600 * time.Millisecond}},
		},
		Clock:  w.clk,
		Logger: slog.New(slog.NewTextHandler(w.logs, &slog.HandlerOptions{ReplaceAttr: dropTime})),
	})
	return w
}

func dropTime(_ []string, a slog.Attr) slog.Attr {
	if a.Key == slog.TimeKey {
		return slog.Attr{}
	}
	return a
}

func (w *world) get(t *testing.T, method, path string) *http.Response {
	t.Helper()
	rec := httptest.NewRecorder()
	w.srv.Handler().ServeHTTP(rec, httptest.NewRequest(method, path, nil))
	return rec.Result()
}

func body(t *testing.T, r *http.Response) string {
	t.Helper()
	b, err := io.ReadAll(r.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestRoutes: the page, its fragments and assets answer; everything else
// under the page's paths is a JSON error naming what was wrong.
func TestRoutes(t *testing.T) {
	const html, js, css, jsonType = "text/html; charset=utf-8", "text/javascript; charset=utf-8", "text/css; charset=utf-8", "application/json"
	tests := []struct {
		method, path string
		status       int
		ctype        string
		body         string // a substring of the body
	}{
		{"GET", "/", 200, html, `<section class="pod" id="pod-qwen">`},
		{"HEAD", "/", 200, html, ""},
		{"GET", "/status/pods/qwen", 200, html, `data-state="loading"`},
		{"GET", "/status/plugins", 200, html, `wake-plugin-conductor`},
		{"GET", "/status/static/status.js", 200, js, `new EventSource(`},
		{"GET", "/status/static/status.css", 200, css, `@media`},
		{"POST", "/", 405, jsonType, `{"error":"method POST not allowed; use GET"}`},
		{"DELETE", "/status/pods/qwen", 405, jsonType, `not allowed`},
		{"GET", "/status/pods/llama", 404, jsonType, `{"error":"no such pod on this page"}`},
		{"GET", "/status/static/page.html", 404, jsonType, `{"error":"no such asset"}`},
		{"GET", "/status/", 404, jsonType, `{"error":"no such endpoint: GET /status/; the status page is GET / with its parts under /status/"}`},
		{"GET", "/status/nothing", 404, jsonType, `no such endpoint: GET /status/nothing`},
		{"GET", "/status/pods/qwen/", 404, jsonType, `no such endpoint`},
		{"GET", "/status/static/../pods/qwen", 404, jsonType, `{"error":"no such endpoint: GET /status/static/../pods/qwen; the status page`},
		{"GET", "/status/%3Cscript%3E", 404, jsonType, `{"error":"no such endpoint; the status page is GET / with its parts under /status/"}`},
	}
	w := newWorld(t)
	for _, tt := range tests {
		t.Run(tt.method+" "+tt.path, func(t *testing.T) {
			r := w.get(t, tt.method, tt.path)
			b := body(t, r)
			if r.StatusCode != tt.status || r.Header.Get("Content-Type") != tt.ctype || !strings.Contains(b, tt.body) {
				t.Errorf("%d %q\n%s\nwant %d %q containing %q", r.StatusCode, r.Header.Get("Content-Type"), b, tt.status, tt.ctype, tt.body)
			}
			if tt.status == 405 && r.Header.Get("Allow") != "GET, HEAD" {
				t.Errorf("Allow %q, want GET, HEAD", r.Header.Get("Allow"))
			}
			if tt.ctype == html && !strings.Contains(r.Header.Get("Content-Security-Policy"), "script-src 'self'") {
				t.Errorf("no content security policy: %q", r.Header.Get("Content-Security-Policy"))
			}
		})
	}
}

func TestIsPath(t *testing.T) {
	for p, want := range map[string]bool{
		"/": true, "/status/": true, "/status/pods/qwen": true,
		"": false, "/index.html": false, "/status": false, "/api/pods/qwen": false, "/metrics": false,
	} {
		if got := IsPath(p); got != want {
			t.Errorf("IsPath(%q) = %v, want %v", p, got, want)
		}
	}
}

// TestPage compares the whole page, and each fragment, with golden files
// (go test -update rewrites them): a wake in progress, three logged wakes,
// one plugin down.
func TestPage(t *testing.T) {
	w := newWorld(t)
	for _, tt := range []struct{ path, golden string }{
		{"/", "page.html"},
		{"/status/plugins", "plugins.html"},
	} {
		r := w.get(t, "GET", tt.path)
		got := body(t, r)
		path := filepath.Join("testdata", tt.golden)
		if *update {
			if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%v (run go test -update to write it)", err)
		}
		if diff := cmp.Diff(string(want), got); diff != "" {
			t.Errorf("GET %s against %s (-want +got):\n%s", tt.path, path, diff)
		}
	}
	// The fragment is the page's pod section, as the script swaps it in.
	page := body(t, w.get(t, "GET", "/"))
	frag := body(t, w.get(t, "GET", "/status/pods/qwen"))
	if !strings.Contains(page, frag) {
		t.Errorf("the pod fragment is not what the page holds:\n%s", frag)
	}
}

// A wake log that cannot be read leaves the chart out, says so, and is
// logged once when it starts failing and once when it reads again,
// however often the page is fetched.
func TestWakeLogUnreadable(t *testing.T) {
	w := newWorld(t)
	w.log.fail(errors.New("store: wake log of pod \"qwen\": entry 01: unexpected end of JSON input"))
	for range 3 {
		if b := body(t, w.get(t, "GET", "/status/pods/qwen")); !strings.Contains(b, "The wake log could not be read") || strings.Contains(b, "<svg class=\"chart\"") {
			t.Fatalf("fragment with an unreadable log:\n%s", b)
		}
	}
	w.log.fail(nil)
	if b := body(t, w.get(t, "GET", "/status/pods/qwen")); !strings.Contains(b, `<svg class="chart"`) {
		t.Fatalf("no chart once the log reads again:\n%s", b)
	}
	want := `level=ERROR msg="status page: wake log unreadable for pod qwen; the page shows no wakes" pod=qwen err="store: wake log of pod \"qwen\": entry 01: unexpected end of JSON input"` + "\n" +
		`level=INFO msg="status page: wake log readable again for pod qwen" pod=qwen` + "\n"
	if diff := cmp.Diff(want, w.logs.String()); diff != "" {
		t.Errorf("log (-want +got):\n%s", diff)
	}
}
