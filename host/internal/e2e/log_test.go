package e2e

import (
	"log/slog"
	"strings"
	"testing"
)

func TestLogLinesAndMatching(t *testing.T) {
	var l Log
	log := l.Logger(slog.LevelDebug)
	log.Debug("wake requested for pod qwen: accepted", "status", 202)
	log.Info("wake ready for pod qwen")
	log.Warn("wake requested for pod other")

	lines := l.Lines(t)
	if len(lines) != 3 {
		t.Fatalf("%d lines, want 3:\n%s", len(lines), l.String())
	}
	if got := lines[0]; got.Level != "DEBUG" || got.Msg != "wake requested for pod qwen: accepted" ||
		got.Attrs["status"] != float64(202) || !strings.HasPrefix(got.Raw, "{") || strings.HasSuffix(got.Raw, "\n") {
		t.Errorf("first line: %+v", got)
	}
	got := l.Matching(t, "wake requested for pod")
	if len(got) != 2 || got[0].Level != "DEBUG" || got[1].Level != "WARN" {
		t.Errorf("Matching: %+v, want the DEBUG and the WARN line", got)
	}
	if got := l.Matching(t, "no such line"); len(got) != 0 {
		t.Errorf("Matching a prefix no line has: %+v", got)
	}
}

func TestLogLinesRejectsWhatIsNotJSON(t *testing.T) {
	for name, text := range map[string]string{
		"text":       "time=now level=INFO msg=hello\n",
		"blank line": `{"level":"INFO","msg":"a"}` + "\n\n" + `{"level":"INFO","msg":"b"}` + "\n",
	} {
		t.Run(name, func(t *testing.T) {
			var l Log
			l.Write([]byte(text))
			r := record(t, func(tb testing.TB) { l.Lines(tb) })
			if !r.fatal || !strings.Contains(strings.Join(r.errors, "\n"), "a log line is not JSON") {
				t.Errorf("Lines of %q: fatal %v, errors %q; want a fatal \"not JSON\"", text, r.fatal, r.errors)
			}
		})
	}
}

// TestLogOperator: the operator's log keeps every host line and the
// plugins' WARN and ERROR lines, and leaves out their chatter.
func TestLogOperator(t *testing.T) {
	var l Log
	log := l.Logger(slog.LevelDebug)
	log.Info("host line")
	log.Debug("plugin chatter", "plugin", "conductor")
	log.Warn("plugin warning", "plugin", "conductor")
	got := l.Operator(t)
	if !strings.Contains(got, "host line") || !strings.Contains(got, "plugin warning") {
		t.Errorf("Operator leaves out an operator line:\n%s", got)
	}
	if strings.Contains(got, "plugin chatter") {
		t.Errorf("Operator keeps the plugins' chatter:\n%s", got)
	}
}

func TestLogCheckUniqueKeys(t *testing.T) {
	var l Log
	log := l.Logger(slog.LevelInfo)
	log.Info("fine", "plugin", "conductor")
	log.With("plugin", "conductor").Info("twice", "plugin", "conductor")

	r := record(t, func(tb testing.TB) { l.CheckUniqueKeys(tb) })
	if r.fatal || len(r.errors) != 1 || !strings.Contains(r.errors[0], `repeats the key "plugin"`) ||
		!strings.Contains(r.errors[0], `"msg":"twice"`) {
		t.Errorf("CheckUniqueKeys: fatal %v, errors %q; want one error for the line \"twice\"", r.fatal, r.errors)
	}
}

func TestCheckNoSecrets(t *testing.T) {
	var l Log
	l.Logger(slog.LevelInfo).Info("start refused", "token", "tok-1")
	l.Logger(slog.LevelInfo).Info("clean")
	var b Bodies
	b.Add(`{"reply":"hi"}`)
	b.Add(`{"error":"bad key key-1"}`)

	r := record(t, func(tb testing.TB) {
		l.CheckNoSecrets(tb, "tok-1", "key-1")
		b.CheckNoSecrets(tb, "tok-1", "key-1")
	})
	want := []string{`a log line carries "tok-1"`, `a response body carries "key-1"`}
	if r.fatal || len(r.errors) != len(want) {
		t.Fatalf("errors %q, want one per secret found", r.errors)
	}
	for i, w := range want {
		if !strings.Contains(r.errors[i], w) {
			t.Errorf("error %d: %q, want %q", i, r.errors[i], w)
		}
	}
	if got := b.All(); len(got) != 2 || got[0] != `{"reply":"hi"}` {
		t.Errorf("Bodies.All() = %q", got)
	}
}
