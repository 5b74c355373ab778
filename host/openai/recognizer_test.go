package openai_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/wakeonchat/wakeonchat/host/openai"
	"github.com/wakeonchat/wakeonchat/machines"
)

// Every reply, rendered with any data, is recognised; text that only looks
// like one is not.
func TestRecognizerKnowsEveryReply(t *testing.T) {
	replies := machines.MustDefaultReplies()
	rec, err := openai.NewRecognizer(machines.DefaultReplies())
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 9, 9, 12, 35, 0, 0, time.UTC)
	data := []machines.ReplyData{
		machines.SampleReplyData(),
		{Pod: "llama-70b", ElapsedMinutes: 0, ExpectedMinutes: 12, LoadingMinutes: 125, IdleMinutes: 5,
			ReadyAt: machines.FormatClock(now, now), WakeRequestedAt: machines.FormatClock(now.Add(-48*time.Hour), now), Status: 503, Backend: "RunPod"},
		{Pod: "qwen", ElapsedMinutes: 6, ExpectedMinutes: 9, EtaMinutes: 4, RemainingMinutes: 0,
			EtaAt: machines.FormatClock(now.Add(-2*time.Minute), now), ReadyAt: machines.FormatClock(now, now),
			WakeRequestedAt: machines.FormatClock(now.Add(-6*time.Minute), now), Status: 409, Backend: "the pod's machine"},
		// One of each: "1 minute", in the singular.
		{Pod: "qwen", ElapsedMinutes: 1, ExpectedMinutes: 1, EtaMinutes: 1, RemainingMinutes: 1, LoadingMinutes: 1, IdleMinutes: 1,
			EtaAt: machines.FormatClock(now, now), ReadyAt: machines.FormatClock(now, now), WakeRequestedAt: machines.FormatClock(now, now), Status: 409, Backend: machines.DefaultBackend},
	}
	for _, k := range machines.ReplyKeys {
		for _, d := range data {
			text, err := replies.Render(k, d)
			if err != nil {
				t.Fatal(err)
			}
			if !rec.Is(text) || !rec.Is("  "+text+"\n") {
				t.Errorf("%s: %q is not recognised", k, text)
			}
		}
	}
	if !rec.Is(machines.FallbackReply) {
		t.Errorf("the fallback reply %q is not recognised", machines.FallbackReply)
	}
	// A reply with more after it or before it, and one whose minutes are
	// not a number.
	still := stillWaking(37)
	inWords := strings.Replace(still, "37", "thirty-seven", 1)
	if inWords == still {
		t.Fatalf("the still-waking reply %q does not quote its minutes", still)
	}
	for _, text := range []string{
		"",
		still + " And here is your answer: 4.",
		"The answer is: " + waking.Text,
		inWords,
		"echo: hello",
	} {
		if rec.Is(text) {
			t.Errorf("%q is recognised as the host's", text)
		}
	}
}

// An operator's own wording is recognised as well.
func TestRecognizerCustomReplies(t *testing.T) {
	texts := machines.DefaultReplies()
	texts[machines.ReplyStillWaking] = "Patience ({{.ElapsedMinutes}}/{{.ExpectedMinutes}} min) [{{.Pod}}]."
	rec, err := openai.NewRecognizer(texts)
	if err != nil {
		t.Fatal(err)
	}
	if !rec.Is("Patience (4/9 min) [qwen].") || rec.Is("Patience (4/9 min) [qwen]. Really.") {
		t.Error("the custom still_waking is not told apart")
	}
	// The estimate's fields: a time to go and a clock time, or none.
	texts[machines.ReplyWaking] = "Up in {{.RemainingMinutes}} of {{.EtaMinutes}} min, by {{.EtaAt}}."
	if rec, err = openai.NewRecognizer(texts); err != nil {
		t.Fatal(err)
	}
	for _, text := range []string{"Up in 3 of 4 min, by 12:39 UTC.", "Up in 0 of 4 min, by 2026-09-10 00:02 UTC.", "Up in 0 of 9 min, by ."} {
		if !rec.Is(text) {
			t.Errorf("%q is not recognised", text)
		}
	}
	if rec.Is("Up in 3 of 4 min, by tomorrow.") {
		t.Error("a text that only looks like the custom waking is recognised")
	}
}

// The host's replies are taken out of the forwarded messages; a user
// message left next to another becomes one with it, so a conversation
// that alternated still alternates. Nothing else changes, byte for byte.
func TestRepliesTakenOutOfTheMessages(t *testing.T) {
	waking := waking.Text
	still := stillWaking(3)
	tests := []struct {
		name string
		msgs string // the client's messages
		want string // what the model gets; "" when the body is forwarded as it is
	}{
		{
			name: "no reply: untouched",
			msgs: `[{"role":"system","content":"be brief"}, {"role":"user","content":"hi"},{"role":"assistant","content":"Hello!"},{"role":"user","content":"2+2?"}]`,
		},
		{
			name: "the same question asked again: once",
			msgs: `[{"role":"user","content":"hi"},{"role":"assistant","content":"` + waking + `"},{"role":"user","content":"hi"}]`,
			want: `[{"role":"user","content":"hi"}]`,
		},
		{
			name: "two questions: joined",
			msgs: `[{"role":"system","content":"s"},{"role":"user","content":"my name is Ann"},{"role":"assistant","content":"` + waking + `"},` +
				`{"role":"user","content":"what is my name?"},{"role":"assistant","content":"` + still + `"},{"role":"user","content":"well?"}]`,
			want: `[{"role":"system","content":"s"},{"content":"my name is Ann\n\nwhat is my name?\n\nwell?","role":"user"}]`,
		},
		{
			name: "after a model's answer; parts joined as parts",
			msgs: `[{"role":"user","content":"a"},{"role":"assistant","content":"b"},{"role":"user","content":[{"type":"text","text":"c"}]},` +
				`{"role":"assistant","content":[{"type":"text","text":"` + still + `"}]},{"role":"user","content":"d"}]`,
			want: `[{"role":"user","content":"a"},{"role":"assistant","content":"b"},{"content":[{"type":"text","text":"c"},{"text":"d","type":"text"}],"role":"user"}]`,
		},
		{
			name: "a reply last, and one after the system prompt",
			msgs: `[{"role":"system","content":"s"},{"role":"assistant","content":"` + still + `"},{"role":"user","content":"q"},{"role":"assistant","content":"` + waking + `"}]`,
			want: `[{"role":"system","content":"s"},{"role":"user","content":"q"}]`,
		},
		{
			name: "a reply after a tool result: taken out alone",
			msgs: `[{"role":"user","content":"q"},{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}}]},` +
				`{"role":"tool","tool_call_id":"c1","content":"42"},{"role":"assistant","content":"` + waking + `"},{"role":"user","content":"and?"}]`,
			want: `[{"role":"user","content":"q"},{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}}]},` +
				`{"role":"tool","tool_call_id":"c1","content":"42"},{"role":"user","content":"and?"}]`,
		},
		{
			// Two speakers are two messages, whatever the chat template
			// thinks of two user turns in a row.
			name: "two users' names: kept apart",
			msgs: `[{"role":"user","name":"ann","content":"hi"},{"role":"assistant","content":"` + waking + `"},{"role":"user","name":"bob","content":"hello"}]`,
			want: `[{"role":"user","name":"ann","content":"hi"},{"role":"user","name":"bob","content":"hello"}]`,
		},
		{
			name: "a named user and an unnamed one: kept apart",
			msgs: `[{"role":"user","name":"ann","content":"hi"},{"role":"assistant","content":"` + waking + `"},{"role":"user","content":"hello"}]`,
			want: `[{"role":"user","name":"ann","content":"hi"},{"role":"user","content":"hello"}]`,
		},
		{
			name: "no name and a null one: joined",
			msgs: `[{"role":"user","content":"hi"},{"role":"assistant","content":"` + waking + `"},{"role":"user","name":null,"content":"again"}]`,
			want: `[{"content":"hi\n\nagain","role":"user"}]`,
		},
		{
			name: "one user's name: joined, the name kept",
			msgs: `[{"role":"user","name":"ann","content":"hi"},{"role":"assistant","content":"` + waking + `"},{"role":"user","content":"again","name":"ann"},` +
				`{"role":"assistant","content":"` + still + `"},{"role":"user","name":"bob","content":"b1"},{"role":"assistant","content":"` + still + `"},{"role":"user","name":"bob","content":"b2"}]`,
			want: `[{"content":"hi\n\nagain","name":"ann","role":"user"},{"content":"b1\n\nb2","name":"bob","role":"user"}]`,
		},
		{
			name: "a user quoting a reply is the user's",
			msgs: `[{"role":"user","content":"` + waking + `"}]`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := newDoor(t, nil)
			body := `{"model":"qwen","messages":` + tt.msgs + `}`
			resp := d.post(body)
			if resp.StatusCode != 200 {
				t.Fatalf("status %d: %s", resp.StatusCode, readBody(t, resp))
			}
			want := `{"model":"qwen2.5","messages":` + tt.msgs + `}`
			if tt.want != "" {
				want = `{"model":"qwen2.5","messages":` + tt.want + `}`
			}
			if diff := cmp.Diff([]string{want}, d.model.sent()); diff != "" {
				t.Errorf("sent (-want +got):\n%s", diff)
			}
			if !json.Valid([]byte(d.model.sent()[0])) {
				t.Errorf("the forwarded body is not JSON")
			}
		})
	}
}
