package supervisor

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/hashicorp/go-hclog"
)

// captured is one record as the test handler saw it.
type captured struct {
	Level slog.Level
	Msg   string
	Attrs map[string]any
}

type captureHandler struct {
	mu      sync.Mutex
	min     slog.Level
	records []captured
}

func (h *captureHandler) Enabled(_ context.Context, l slog.Level) bool { return l >= h.min }

func (h *captureHandler) Handle(_ context.Context, r slog.Record) error {
	attrs := map[string]any{}
	r.Attrs(func(a slog.Attr) bool {
		attrs[a.Key] = a.Value.Any()
		return true
	})
	h.mu.Lock()
	defer h.mu.Unlock()
	h.records = append(h.records, captured{Level: r.Level, Msg: r.Message, Attrs: attrs})
	return nil
}

func (h *captureHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *captureHandler) WithGroup(string) slog.Handler      { return h }

type stringer struct{}

func (stringer) String() string { return "stringer with s3cret" }

func TestHclogAdapterLevels(t *testing.T) {
	t.Parallel()
	tests := []struct {
		level hclog.Level
		want  []captured
	}{
		{hclog.Trace, []captured{{Level: LevelTrace, Msg: "m", Attrs: map[string]any{}}}},
		{hclog.Debug, []captured{{Level: slog.LevelDebug, Msg: "m", Attrs: map[string]any{}}}},
		{hclog.Info, []captured{{Level: slog.LevelInfo, Msg: "m", Attrs: map[string]any{}}}},
		{hclog.Warn, []captured{{Level: slog.LevelWarn, Msg: "m", Attrs: map[string]any{}}}},
		{hclog.Error, []captured{{Level: slog.LevelError, Msg: "m", Attrs: map[string]any{}}}},
		{hclog.NoLevel, []captured{{Level: slog.LevelInfo, Msg: "m", Attrs: map[string]any{}}}},
		{hclog.Off, nil},
	}
	for _, tt := range tests {
		t.Run(tt.level.String(), func(t *testing.T) {
			h := &captureHandler{min: LevelTrace}
			newHclogAdapter(slog.New(h), scrubber(nil)).Log(tt.level, "m")
			if diff := cmp.Diff(tt.want, h.records); diff != "" {
				t.Errorf("records (-want +got):\n%s", diff)
			}
		})
	}
}

func TestHclogAdapterGetLevel(t *testing.T) {
	t.Parallel()
	tests := []struct {
		min  slog.Level
		want hclog.Level
	}{
		{LevelTrace, hclog.Trace},
		{slog.LevelDebug, hclog.Debug},
		{slog.LevelInfo, hclog.Info},
		{slog.LevelWarn, hclog.Warn},
		{slog.LevelError, hclog.Error},
		{slog.LevelError + 4, hclog.Off},
	}
	for _, tt := range tests {
		a := newHclogAdapter(slog.New(&captureHandler{min: tt.min}), scrubber(nil))
		if got := a.GetLevel(); got != tt.want {
			t.Errorf("handler at %v: GetLevel %v, want %v", tt.min, got, tt.want)
		}
		if got, want := a.IsDebug(), tt.min <= slog.LevelDebug; got != want {
			t.Errorf("handler at %v: IsDebug %v, want %v", tt.min, got, want)
		}
	}
}

func TestHclogAdapterScrubs(t *testing.T) {
	t.Parallel()
	h := &captureHandler{min: LevelTrace}
	a := newHclogAdapter(slog.New(h), scrubber([]string{"s3cret", "", "s3cret-longer"}))
	l := a.Named("wake-plugin").With("implied", "s3cret-longer")

	l.Warn("token s3cret and s3cret-longer",
		"str", "is s3cret",
		"err", errors.New("failed: s3cret"),
		"stringer", stringer{},
		"strs", []string{"a", "s3cret"},
		"nested", map[string]any{"s3cret": []any{"s3cret", 1.5, true}},
		"bytes", []byte("s3cret"),
		"n", 42,
		"plugin", "/path/to/plugin",
		"odd")

	want := []captured{{
		Level: slog.LevelWarn,
		Msg:   "token [redacted] and [redacted]",
		Attrs: map[string]any{
			"module":             "wake-plugin",
			"implied":            "[redacted]",
			"str":                "is [redacted]",
			"err":                "failed: [redacted]",
			"stringer":           "stringer with [redacted]",
			"strs":               []string{"a", "[redacted]"},
			"nested":             map[string]any{"[redacted]": []any{"[redacted]", 1.5, true}},
			"bytes":              "[redacted]",
			"n":                  int64(42),
			"plugin_attr":        "/path/to/plugin",
			"EXTRA_VALUE_AT_END": "odd",
		},
	}}
	if diff := cmp.Diff(want, h.records); diff != "" {
		t.Errorf("records (-want +got):\n%s", diff)
	}
}

func TestHclogAdapterStandardWriter(t *testing.T) {
	t.Parallel()
	h := &captureHandler{min: LevelTrace}
	a := newHclogAdapter(slog.New(h), scrubber([]string{"s3cret"}))
	w := a.StandardWriter(&hclog.StandardLoggerOptions{ForceLevel: hclog.Warn})
	if _, err := w.Write([]byte("one s3cret\r\n\n  \ntwo\n")); err != nil {
		t.Fatal(err)
	}
	want := []captured{
		{Level: slog.LevelWarn, Msg: "one [redacted]", Attrs: map[string]any{}},
		{Level: slog.LevelWarn, Msg: "two", Attrs: map[string]any{}},
	}
	if diff := cmp.Diff(want, h.records); diff != "" {
		t.Errorf("records (-want +got):\n%s", diff)
	}
}

func TestScrubberLongestFirst(t *testing.T) {
	t.Parallel()
	tests := []struct {
		secrets []string
		in      string
		want    string
	}{
		{nil, "nothing to do", "nothing to do"},
		{[]string{""}, "empty secrets are ignored", "empty secrets are ignored"},
		{[]string{"abc", "abcdef"}, "x abcdef y abc", "x [redacted] y [redacted]"},
		{[]string{"abcdef", "abc"}, "abcdefabc", "[redacted][redacted]"},
		{[]string{"k", "k"}, "kk", "[redacted][redacted]"},
	}
	for _, tt := range tests {
		if got := scrubber(tt.secrets)(tt.in); got != tt.want {
			t.Errorf("scrubber(%q)(%q) = %q, want %q", tt.secrets, tt.in, got, tt.want)
		}
	}
}

func TestHandshakeProblem(t *testing.T) {
	t.Parallel()
	tests := []struct {
		err  string
		want string
	}{
		{"Unrecognized remote plugin message: hello\nThis usually means\n  ...", `it printed "hello" instead of a handshake line`},
		{"Unrecognized remote plugin message: \nFailed to read any lines from plugin's stdout\n...", "it printed no handshake line (it exited or wrote nothing to stdout; see its log lines)"},
		{"timeout while waiting for plugin to start", "timeout while waiting for plugin to start"},
		{"plugin exited before we could connect", "plugin exited before we could connect"},
	}
	for _, tt := range tests {
		if got := handshakeProblem(errors.New(tt.err)); got != tt.want {
			t.Errorf("handshakeProblem(%q) = %q, want %q", tt.err, got, tt.want)
		}
	}
}
