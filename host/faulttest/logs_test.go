package faulttest

import (
	"bytes"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"
)

// logBuffer collects a row's JSON log lines; the hosts write while the test
// reads.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// logLine is one parsed record.
type logLine struct {
	Level, Msg, Raw string
	Attrs           map[string]any
}

// lines parses every line; slog's JSON handler writes a record in one Write.
func (b *logBuffer) lines(t *testing.T) []logLine {
	t.Helper()
	var out []logLine
	for raw := range strings.Lines(b.String()) {
		raw = strings.TrimSuffix(raw, "\n")
		var m map[string]any
		if err := json.Unmarshal([]byte(raw), &m); err != nil {
			t.Fatalf("a log line is not JSON: %v\n%s", err, raw)
		}
		level, _ := m["level"].(string)
		msg, _ := m["msg"].(string)
		out = append(out, logLine{Level: level, Msg: msg, Raw: raw, Attrs: m})
	}
	return out
}

// matching are the lines whose message starts with prefix.
func (b *logBuffer) matching(t *testing.T, prefix string) []logLine {
	t.Helper()
	var out []logLine
	for _, l := range b.lines(t) {
		if strings.HasPrefix(l.Msg, prefix) {
			out = append(out, l)
		}
	}
	return out
}

// waitLine waits until a line's message starts with prefix and returns the
// first such line.
func (b *logBuffer) waitLine(t *testing.T, prefix string) logLine {
	t.Helper()
	deadline := time.Now().Add(waitFor)
	for {
		if got := b.matching(t, prefix); len(got) > 0 {
			return got[0]
		}
		if time.Now().After(deadline) {
			t.Fatalf("no log line starting %q after %v; the log:\n%s", prefix, waitFor, b.operatorLines(t))
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// operatorLines is the log without go-plugin's and the plugins' chatter,
// for failure messages.
func (b *logBuffer) operatorLines(t *testing.T) string {
	t.Helper()
	var s strings.Builder
	for _, l := range b.lines(t) {
		if _, fromPlugin := l.Attrs["plugin"]; fromPlugin && l.Level != "WARN" && l.Level != "ERROR" {
			continue
		}
		s.WriteString(l.Raw)
		s.WriteByte('\n')
	}
	return s.String()
}
