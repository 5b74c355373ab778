package main

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestSimTimeHandler(t *testing.T) {
	sim := time.Date(2026, 9, 9, 12, 35, 0, 0, time.FixedZone("CEST", 2*3600))
	const simUTC = "2026-09-09T10:35:00Z"
	tests := []struct {
		name string
		log  func(*slog.Logger)
		want []map[string]any // each record, without time
	}{
		{
			name: "a record",
			log:  func(l *slog.Logger) { l.Info("wake ready for pod qwen", "pod", "qwen") },
			want: []map[string]any{{"level": "INFO", "msg": "wake ready for pod qwen", "pod": "qwen", "sim_time": simUTC}},
		},
		{
			name: "with attributes",
			log:  func(l *slog.Logger) { l.With("plugin", "conductor").Warn("plugin relaunched", "attempt", 1) },
			want: []map[string]any{{"level": "WARN", "msg": "plugin relaunched", "plugin": "conductor", "attempt": float64(1), "sim_time": simUTC}},
		},
		{
			name: "in a group, sim_time stays at the top",
			log:  func(l *slog.Logger) { l.With("a", 1).WithGroup("g").With("b", 2).Error("x", "c", 3) },
			want: []map[string]any{{"level": "ERROR", "msg": "x", "a": float64(1), "sim_time": simUTC,
				"g": map[string]any{"b": float64(2), "c": float64(3)}}},
		},
		{
			name: "below the handler's level, nothing",
			log:  func(l *slog.Logger) { l.Debug("chatter") },
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			h := newSimTimeHandler(slog.NewJSONHandler(&buf, nil), func() time.Time { return sim })
			tt.log(slog.New(h))
			var got []map[string]any
			for line := range strings.Lines(buf.String()) {
				var m map[string]any
				if err := json.Unmarshal([]byte(line), &m); err != nil {
					t.Fatalf("%v: %s", err, line)
				}
				if _, ok := m["time"]; !ok {
					t.Errorf("no wall-clock time: %s", line)
				}
				delete(m, "time")
				got = append(got, m)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("records (-want +got):\n%s", diff)
			}
		})
	}
}

// Only -simulate adds sim_time; the text format carries it too.
func TestNewLogger(t *testing.T) {
	sim := time.Date(2026, 9, 9, 12, 35, 0, 0, time.UTC)
	tests := []struct {
		format string
		now    func() time.Time
		want   string // in the line, or "" for no sim_time at all
	}{
		{"text", func() time.Time { return sim }, "sim_time=2026-09-09T12:35:00.000Z"},
		{"json", func() time.Time { return sim }, `"sim_time":"2026-09-09T12:35:00Z"`},
		{"text", nil, ""},
		{"json", nil, ""},
	}
	for _, tt := range tests {
		var buf bytes.Buffer
		log, err := newLogger(&buf, tt.format, tt.now)
		if err != nil {
			t.Fatal(err)
		}
		log.Info("hello")
		line := buf.String()
		if tt.want == "" && strings.Contains(line, "sim_time") || tt.want != "" && !strings.Contains(line, tt.want) {
			t.Errorf("%s, sim clock %v: %q, want sim_time %q", tt.format, tt.now != nil, line, tt.want)
		}
	}
	if _, err := newLogger(&bytes.Buffer{}, "yaml", nil); err == nil || !strings.Contains(err.Error(), "-log-format") {
		t.Errorf("newLogger(yaml): %v, want an error naming -log-format", err)
	}
}
