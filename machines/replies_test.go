package machines

import (
	"fmt"
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

// TestDefaultRepliesWording pins the design's replies word for word
// (docs/http-contract.md), rendered against the sample data. It is the one
// test that does: every other test renders the replies it expects from
// the defaults, so a change of wording is made here and in the docs alone.
func TestDefaultRepliesWording(t *testing.T) {
	t.Parallel()
	want := map[ReplyKey]string{
		ReplyWaking:           "Waking the GPU brain — that takes about 9 minutes. Ask me again in a few minutes.",
		ReplyStillWaking:      "Still waking — 3 min elapsed, usually ready by ~9. Ask again shortly.",
		ReplyStillWakingLate:  "Still waking — 3 min elapsed, taking longer than the usual 9 minutes. Ask again shortly.",
		ReplyRewake:           "The GPU brain is not ready. I'll try to wake it again. Ask again in a few minutes.",
		ReplyLoading:          "The GPU is up and the model is still loading — that takes a few more minutes. Ask again shortly.",
		ReplyLoadingWaking:    "Still waking — 3 min elapsed; the GPU is up and the model is loading. Ask again shortly.",
		ReplyStuck:            "The model server has been up for 21 minutes and still is not answering — it may be stuck. Someone needs to look at the pod.",
		ReplyCrashed:          "The model server answered at 2026-09-10 14:05 UTC but has stopped answering — it may have crashed. Someone needs to look at the pod.",
		ReplyUnreadable:       "I can't tell right now whether the GPU brain is awake: its status is unreadable, so I have not woken it. Ask again in a few minutes.",
		ReplyReadyThenStopped: "The GPU woke and was ready at 2026-09-10 14:05 UTC, then stopped — it shuts down after 15 idle minutes. Waking it again — about 9 minutes.",
		ReplyNeverReady:       "The wake requested at 12:26 UTC did not complete — the GPU never became ready. Waking it again — about 9 minutes.",
		ReplyRefused:          "The last wake request was refused by the conductor (HTTP 409). Waking it again — about 9 minutes.",
		ReplyWakeFailed:       "The last wake request may not have reached the conductor. Trying again — about 9 minutes.",
		ReplyResumeWaiting:    "The GPU brain is not ready and nothing is waking it right now, so your message has not run. Send it again to wake the GPU.",
		ReplyIdleStopped:      "The GPU was stopped after it idled, to save money. Waking it again — about 9 minutes.",
	}
	r := MustDefaultReplies()
	got := make(map[ReplyKey]string, len(ReplyKeys))
	for _, k := range ReplyKeys {
		out, err := r.Render(k, SampleReplyData())
		if err != nil {
			t.Fatal(err)
		}
		got[k] = out
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("the default replies (-want +got):\n%s", diff)
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
		// The sample data takes none of these branches: each text is checked.
		{"markdown in an if branch", with(ReplyLoading, `{{if eq .Pod "llama"}}The model is **loading**.{{end}}Ask again.`), `reply "loading": contains markdown ("**")`},
		{"a URL in an else branch", with(ReplyRewake, `{{if .Pod}}Ask again.{{else}}See www.example.org.{{end}}`), `reply "rewake": contains a URL ("www.")`},
		{"a link in a range's else", with(ReplyRewake, `{{range .EtaMinutes}}.{{else}}[news](x){{end}}`), `reply "rewake": contains markdown ("[news](")`},
		{"markdown in an if in a range", with(ReplyStuck, "Up {{range .ElapsedMinutes}}{{if gt . 100}}\n# Long{{end}}{{end}}for {{.LoadingMinutes}} min."), `reply "stuck": contains markdown ("#")`},
		{"a URL in a with's else", with(ReplyCrashed, `{{with .ReadyAt}}At {{.}}.{{else}}See https://status.example.{{end}}`), `reply "crashed": contains a URL ("https://")`},
		{"a URL in a string in an action", with(ReplyRewake, `Ask again.{{if eq .Status 0}}{{"status.example.com"}}{{end}}`), `reply "rewake": contains a URL ("example.com")`},
		{"a URL in a template never called", with(ReplyRewake, `{{define "x"}}https://x.example{{end}}Ask again.`), `reply "rewake": contains a URL ("https://")`},
		{"a URL after an action", with(ReplyRewake, `Ask {{.Pod}}www.example.org again.`), `reply "rewake": contains a URL ("www.")`},
		{"a URL in a called template", with(ReplyRewake, `{{define "x"}}{{if .Pod}}a{{else}}x.com{{end}}{{end}}Ask {{template "x" .}} again.`), `reply "rewake": contains a URL ("x.com")`},
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

// A template whose branches are plain passes, and a dash after an action
// is not a markdown list.
func TestParseRepliesPlainBranches(t *testing.T) {
	t.Parallel()
	texts := DefaultReplies()
	texts[ReplyRewake] = `{{if eq .Status 0}}Not ready.{{else if .Pod}}Ask {{.Pod}} - again.{{end}}{{range .EtaMinutes}}.{{end}}{{with .EtaAt}} Due {{.}}.{{end}}{{template "t"}}{{define "t"}} Bye.{{end}}`
	if _, err := ParseReplies(texts); err != nil {
		t.Fatal(err)
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

// TestRepliesAgreeInNumber renders each default reply that counts minutes
// with 0, 1, 2 and 9 of them: "1 minute", never "1 minutes". In want, %[1]s
// is the count with its noun, and %[2]s the idle minutes with theirs.
func TestRepliesAgreeInNumber(t *testing.T) {
	t.Parallel()
	r := MustDefaultReplies()
	minutes := map[int][2]string{
		0: {"0 minutes", "0 idle minutes"},
		1: {"1 minute", "1 idle minute"},
		2: {"2 minutes", "2 idle minutes"},
		9: {"9 minutes", "9 idle minutes"},
	}
	tests := []struct {
		key  ReplyKey
		set  func(d *ReplyData, n int)
		want string
	}{
		{ReplyWaking, func(d *ReplyData, n int) { d.EtaMinutes = n },
			"Waking the GPU brain — that takes about %[1]s. Ask me again in a few minutes."},
		{ReplyStillWakingLate, func(d *ReplyData, n int) { d.EtaMinutes = n },
			"Still waking — 3 min elapsed, taking longer than the usual %[1]s. Ask again shortly."},
		{ReplyStuck, func(d *ReplyData, n int) { d.LoadingMinutes = n },
			"The model server has been up for %[1]s and still is not answering — it may be stuck. Someone needs to look at the pod."},
		{ReplyReadyThenStopped, func(d *ReplyData, n int) { d.EtaMinutes, d.IdleMinutes = n, n },
			"The GPU woke and was ready at 2026-09-10 14:05 UTC, then stopped — it shuts down after %[2]s. Waking it again — about %[1]s."},
		{ReplyNeverReady, func(d *ReplyData, n int) { d.EtaMinutes = n },
			"The wake requested at 12:26 UTC did not complete — the GPU never became ready. Waking it again — about %[1]s."},
		{ReplyRefused, func(d *ReplyData, n int) { d.EtaMinutes = n },
			"The last wake request was refused by the conductor (HTTP 409). Waking it again — about %[1]s."},
		{ReplyWakeFailed, func(d *ReplyData, n int) { d.EtaMinutes = n },
			"The last wake request may not have reached the conductor. Trying again — about %[1]s."},
	}
	for _, tt := range tests {
		for _, n := range []int{0, 1, 2, 9} {
			d := SampleReplyData()
			tt.set(&d, n)
			got, err := r.Render(tt.key, d)
			if err != nil {
				t.Fatalf("%s with %d: %v", tt.key, n, err)
			}
			if diff := cmp.Diff(fmt.Sprintf(tt.want, minutes[n][0], minutes[n][1]), got); diff != "" {
				t.Errorf("%s with %d minutes (-want +got):\n%s", tt.key, n, diff)
			}
		}
	}
}

func TestPlural(t *testing.T) {
	t.Parallel()
	tests := []struct {
		n    int
		want string
	}{
		{-1, "-1 minute"}, {0, "0 minutes"}, {1, "1 minute"}, {2, "2 minutes"}, {9, "9 minutes"}, {21, "21 minutes"},
	}
	for _, tt := range tests {
		if got := plural(tt.n, "minute", "minutes"); got != tt.want {
			t.Errorf("plural(%d) = %q, want %q", tt.n, got, tt.want)
		}
	}
}
