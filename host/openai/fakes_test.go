package openai_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/wakeonchat/wakeonchat/host/internal/e2e"
	"github.com/wakeonchat/wakeonchat/host/openai"
	"github.com/wakeonchat/wakeonchat/host/resolve"
	"github.com/wakeonchat/wakeonchat/host/turn"
	"github.com/wakeonchat/wakeonchat/machines"
	"github.com/wakeonchat/wakeonchat/plugins/pluginapi"
)

// fakeModel is a hand-written openai.Model: each call runs its function
// field, stream for resolve.Retry and once for resolve.Once (a held run),
// and records the body it was given.
type fakeModel struct {
	mu     sync.Mutex
	stream func(ctx context.Context, body []byte) (*pluginapi.StreamResponse, error)
	once   func(ctx context.Context, body []byte) (*pluginapi.StreamResponse, error)
	bodies []string
	onces  int
}

func (f *fakeModel) Stream(ctx context.Context, body []byte, send resolve.Send) (*pluginapi.StreamResponse, error) {
	f.mu.Lock()
	f.bodies = append(f.bodies, string(body))
	fn := f.stream
	if send == resolve.Once {
		f.onces++
		fn = f.once
	}
	f.mu.Unlock()
	return fn(ctx, body)
}

func (f *fakeModel) sent() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.bodies...)
}

// answer is a model's 200 with body.
func answer(contentType, body string) func(context.Context, []byte) (*pluginapi.StreamResponse, error) {
	return func(context.Context, []byte) (*pluginapi.StreamResponse, error) {
		return &pluginapi.StreamResponse{Status: 200, Header: http.Header{"Content-Type": {contentType}},
			Body: io.NopCloser(strings.NewReader(body))}, nil
	}
}

func fails(err error) func(context.Context, []byte) (*pluginapi.StreamResponse, error) {
	return func(context.Context, []byte) (*pluginapi.StreamResponse, error) { return nil, err }
}

// asleep is the not-ready error of pod qwen, EXITED.
func asleep() error {
	return resolve.NewNotReadyError("qwen", resolve.Resolution{Status: "EXITED", Lookup: pluginapi.LookupFound}, false)
}

// fakeCoord is a hand-written turn.Coordinator: NotReady returns the
// next decision of its script (the last one again when it runs out) and
// records its calls; Record returns rec (a zero State when none was set,
// as a record stored without one reads).
type fakeCoord struct {
	mu        sync.Mutex
	decisions []machines.Decision
	calls     []string
	rec       machines.Record
}

func (f *fakeCoord) NotReady(_ context.Context, pod, status, lookup string, modelLoading bool) (machines.Decision, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, pod+" "+status+" "+lookup)
	d := f.decisions[0]
	if len(f.decisions) > 1 {
		f.decisions = f.decisions[1:]
	}
	return d, nil
}

func (f *fakeCoord) Record(_ context.Context, pod string) (machines.Record, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	r := f.rec
	r.Pod = pod
	return r, nil
}

func (f *fakeCoord) Estimate(string) machines.Estimate { return machines.Estimate{} }

func (f *fakeCoord) setState(s machines.Record) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.rec = s
}

func (f *fakeCoord) notReadyCalls() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.calls...)
}

// fakePod is a hand-written turn.PodView.
type fakePod struct {
	mu     sync.Mutex
	res    resolve.Resolution
	err    error
	lookup func() // called at each Lookup, when set
}

func (f *fakePod) Lookup(context.Context) (resolve.Resolution, error) {
	f.mu.Lock()
	fn := f.lookup
	f.mu.Unlock()
	if fn != nil {
		fn()
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.res, f.err
}

func (f *fakePod) set(res resolve.Resolution) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.res = res
}

var waking = machines.Decision{Action: machines.ActionWake, Reply: machines.ReplyWaking, From: machines.Asleep, To: machines.Waking,
	Text: render(machines.ReplyWaking, nil)}

// render is the host's default reply key (e2e.Render): the text a
// decision of the machine carries.
var render = e2e.Render

// stillWaking is the still-waking reply min whole minutes into a wake.
func stillWaking(min int) string {
	return render(machines.ReplyStillWaking, func(d *machines.ReplyData) { d.ElapsedMinutes = min })
}

// door is a Server with one provider, qwen on the pod qwen (model name
// qwen2.5), and the default replies.
type door struct {
	*openai.Server
	model *fakeModel
	coord *fakeCoord
	pod   *fakePod
}

func newDoor(t *testing.T, change func(*openai.Config, *turn.Config)) *door {
	t.Helper()
	rec, err := openai.NewRecognizer(machines.DefaultReplies())
	if err != nil {
		t.Fatal(err)
	}
	d := &door{
		model: &fakeModel{stream: answer("application/json", `{"ok":true}`)},
		coord: &fakeCoord{decisions: []machines.Decision{waking}},
		pod:   &fakePod{res: resolve.Resolution{Pod: "qwen", Status: "EXITED", Lookup: pluginapi.LookupFound}},
	}
	cfg := openai.Config{
		Providers: []openai.Provider{{Name: "qwen", ModelName: "qwen2.5", Pod: "qwen", Model: d.model}},
		Replies:   rec,
		Created:   created,
		NewID:     func() string { return "test" },
	}
	tc := turn.Config{Wake: d.coord, Pods: map[string]turn.PodView{"qwen": d.pod}}
	if change != nil {
		change(&cfg, &tc)
	}
	tc.Clock, tc.Logger = cfg.Clock, cfg.Logger
	cfg.Service = turn.New(tc)
	d.Server = openai.New(cfg)
	return d
}

// post serves one POST /v1/chat/completions with body.
func (d *door) post(body string) *http.Response {
	w := do(d.Handler(), completionRequest(context.Background(), body))
	return w.Result()
}

// completionRequest is a POST /v1/chat/completions of body, as JSON.
func completionRequest(ctx context.Context, body string) *http.Request {
	r, _ := http.NewRequestWithContext(ctx, http.MethodPost, "http://door/v1/chat/completions", strings.NewReader(body))
	r.Header.Set("Content-Type", "application/json")
	return r
}

func readBody(t *testing.T, r *http.Response) string {
	t.Helper()
	b, err := io.ReadAll(r.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// decode is a JSON body as plain values.
func decode(t *testing.T, body string) any {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(body), &v); err != nil {
		t.Fatalf("body is not JSON: %v\n%s", err, body)
	}
	return v
}

// logRecorder is a slog.Handler that records each line's level and
// message, from every level.
type logRecorder struct {
	mu  sync.Mutex
	got []string
}

func (l *logRecorder) Enabled(context.Context, slog.Level) bool { return true }

func (l *logRecorder) Handle(_ context.Context, r slog.Record) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.got = append(l.got, r.Level.String()+" "+r.Message)
	return nil
}

func (l *logRecorder) WithAttrs([]slog.Attr) slog.Handler { return l }
func (l *logRecorder) WithGroup(string) slog.Handler      { return l }

func (l *logRecorder) lines() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.got...)
}
