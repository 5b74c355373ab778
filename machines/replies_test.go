package machines

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestDefaultRepliesPlain renders every default reply against sample data:
// plain text, no URL, no markdown, no template left over.
func TestDefaultRepliesPlain(t *testing.T) {
	r := MustDefaultReplies()
	for _, k := range ReplyKeys {
		out, err := r.Render(k, SampleReplyData())
		if err != nil {
			t.Fatalf("%s: %v", k, err)
		}
		if err := CheckPlain(out); err != nil {
			t.Errorf("%s: %v: %q", k, err, out)
		}
		if strings.Contains(out, "{{") || strings.Contains(out, "<no value>") || out == "" {
			t.Errorf("%s renders %q", k, out)
		}
	}
	if got, want := len(DefaultReplies()), len(ReplyKeys); got != want {
		t.Errorf("%d defaults for %d keys", got, want)
	}
}

func TestParseRepliesErrors(t *testing.T) {
	with := func(k ReplyKey, v string) map[ReplyKey]string {
		m := DefaultReplies()
		m[k] = v
		return m
	}
	without := DefaultReplies()
	delete(without, ReplyStuck)
	tests := []struct {
		name  string
		texts map[ReplyKey]string
		want  string
	}{
		{"unknown field", with(ReplyStillWaking, "Still waking — {{.Elapsed}} min"), `reply "still_waking": template: still_waking:1:19: executing "still_waking" at <.Elapsed>: can't evaluate field Elapsed in type machines.ReplyData`},
		{"syntax error", with(ReplyWaking, "Waking {{.Pod"), `reply "waking": template: waking:1: unclosed action`},
		{"a URL", with(ReplyRewake, "See https://status.example for news."), `reply "rewake": contains a URL ("https://")`},
		{"a bare domain", with(ReplyRewake, "See status.example.com for news."), `reply "rewake": contains a URL ("example.com")`},
		{"markdown bold", with(ReplyLoading, "The model is **loading**."), `reply "loading": contains markdown ("**")`},
		{"markdown link", with(ReplyLoading, "The model is [loading](x)."), `reply "loading": contains markdown ("[loading](")`},
		{"empty", with(ReplyRefused, "  "), `reply "refused": missing or empty`},
		{"missing", without, `reply "stuck": missing or empty`},
		{"unknown key", with("snoozing", "zzz"), `reply "snoozing": unknown reply`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseReplies(tt.texts)
			if err == nil {
				t.Fatal("no error")
			}
			if diff := cmp.Diff(tt.want, err.Error()); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestFormatClock(t *testing.T) {
	now := time.Date(2026, 9, 10, 0, 30, 0, 0, time.UTC)
	tests := []struct {
		t    time.Time
		want string
	}{
		{time.Date(2026, 9, 10, 0, 5, 59, 0, time.UTC), "00:05 UTC"},
		{time.Date(2026, 9, 9, 23, 59, 0, 0, time.UTC), "2026-09-09 23:59 UTC"},
		{time.Date(2025, 9, 10, 0, 5, 0, 0, time.UTC), "2025-09-10 00:05 UTC"},
		// Another zone on the same UTC day is the same day.
		{time.Date(2026, 9, 9, 20, 10, 0, 0, time.FixedZone("EDT", -4*3600)), "00:10 UTC"},
	}
	for _, tt := range tests {
		if got := FormatClock(tt.t, now); got != tt.want {
			t.Errorf("FormatClock(%v) = %q, want %q", tt.t, got, tt.want)
		}
	}
}
