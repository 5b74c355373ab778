package plugintest

import (
	"bytes"
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"github.com/hashicorp/go-hclog"
)

// Logger returns an hclog JSON logger at trace level, the format and
// stream go-plugin forwards to the host, and the Log it writes to.
func Logger() (hclog.Logger, *Log) {
	l := &Log{}
	return hclog.New(&hclog.LoggerOptions{Output: l, Level: hclog.Trace, JSONFormat: true}), l
}

// Log is a goroutine-safe sink of log lines.
type Log struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *Log) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

// String is everything written so far.
func (l *Log) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// Lines returns "level message" for every line; a line that is not hclog
// JSON fails the test.
func (l *Log) Lines(t testing.TB) []string {
	t.Helper()
	var out []string
	for line := range strings.Lines(l.String()) {
		if strings.TrimSpace(line) == "" {
			continue
		}
		var entry struct {
			Level   string `json:"@level"`
			Message string `json:"@message"`
		}
		if err := json.Unmarshal([]byte(line), &entry); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		out = append(out, entry.Level+" "+entry.Message)
	}
	return out
}
