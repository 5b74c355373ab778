package e2e

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"strings"
	"sync"
	"testing"
)

// Log collects a host's JSON log lines (slog's JSON handler writes into
// it). It is safe for concurrent use: the hosts write while the test reads.
// The zero value is an empty log.
type Log struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

// Line is one parsed log record.
type Line struct {
	Level string
	Msg   string
	Raw   string         // the line as written, without its newline
	Attrs map[string]any // every top-level key, level and msg included
}

func (l *Log) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

// String is the whole log as written.
func (l *Log) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// Logger is a logger that writes JSON lines into l from level up.
func (l *Log) Logger(level slog.Level) *slog.Logger {
	return slog.New(slog.NewJSONHandler(l, &slog.HandlerOptions{Level: level}))
}

// Lines parses every line. slog's JSON handler writes each record with one
// Write, so a line is never torn; a line that is not a JSON object fails
// the test.
func (l *Log) Lines(t testing.TB) []Line {
	t.Helper()
	var out []Line
	for raw := range strings.Lines(l.String()) {
		raw = strings.TrimSuffix(raw, "\n")
		var m map[string]any
		if err := json.Unmarshal([]byte(raw), &m); err != nil {
			t.Fatalf("a log line is not JSON: %v\n%s", err, raw)
		}
		level, _ := m["level"].(string)
		msg, _ := m["msg"].(string)
		out = append(out, Line{Level: level, Msg: msg, Raw: raw, Attrs: m})
	}
	return out
}

// Matching returns the lines whose message starts with prefix, oldest
// first.
func (l *Log) Matching(t testing.TB, prefix string) []Line {
	t.Helper()
	var out []Line
	for _, line := range l.Lines(t) {
		if strings.HasPrefix(line.Msg, prefix) {
			out = append(out, line)
		}
	}
	return out
}

// Operator is the log without go-plugin's and the plugins' chatter (their
// lines carry a "plugin" attribute): every host line, and the plugins'
// WARN and ERROR lines.
func (l *Log) Operator(t testing.TB) string {
	t.Helper()
	var s strings.Builder
	for _, line := range l.Lines(t) {
		if _, fromPlugin := line.Attrs["plugin"]; fromPlugin && line.Level != "WARN" && line.Level != "ERROR" {
			continue
		}
		s.WriteString(line.Raw)
		s.WriteByte('\n')
	}
	return s.String()
}

// CheckUniqueKeys fails the test for every log line whose top-level keys
// repeat (say, a plugin attribute added by two layers of loggers): log
// pipelines keep one of the two, or reject the line.
func (l *Log) CheckUniqueKeys(t testing.TB) {
	t.Helper()
	for _, line := range l.Lines(t) {
		dec := json.NewDecoder(strings.NewReader(line.Raw))
		dec.Token() // the '{': Lines parsed every line as an object
		seen := map[string]bool{}
		for dec.More() {
			tok, err := dec.Token()
			if err != nil {
				t.Fatalf("log line: %v\n%s", err, line.Raw)
			}
			key, _ := tok.(string)
			if seen[key] {
				t.Errorf("log line repeats the key %q: %s", key, line.Raw)
			}
			seen[key] = true
			var v json.RawMessage
			if err := dec.Decode(&v); err != nil {
				t.Fatalf("log line: %v\n%s", err, line.Raw)
			}
		}
	}
}

// CheckNoSecrets fails the test for every log line that carries one of
// secrets, at whatever level the log was written.
func (l *Log) CheckNoSecrets(t testing.TB, secrets ...string) {
	t.Helper()
	for _, line := range l.Lines(t) {
		for _, secret := range secrets {
			if strings.Contains(line.Raw, secret) {
				t.Errorf("a log line carries %q: %s", secret, line.Raw)
			}
		}
	}
}
