package openai

import (
	"cmp"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"text/template"

	"github.com/wakeonchat/wakeonchat/machines"
)

// Recognizer tells the host's own status replies from a model's answers,
// so that a conversation a client sends back reaches the model without
// them.
//
// It knows the replies by their templates ([replies] in wake.toml): each
// template is rendered once with a marker in every field (a string field
// gets a marker string, an int field a marker number), and the rendering
// becomes a pattern: its text literally, each marker a pattern of what
// that field renders as (minutes and statuses digits, a pod name, a clock
// "15:04 UTC" with an optional date). A message is the host's when its
// whole text, spaces around it aside, matches one of them. A template's
// branches ({{if}}) are recognised only as the markers render them.
type Recognizer struct {
	re *regexp.Regexp
}

// The field markers. Numbers are long and odd so that no template holds
// them by chance.
const (
	markPod             = "\x00pod\x00"
	markReadyAt         = "\x00readyAt\x00"
	markWakeRequestedAt = "\x00wakeRequestedAt\x00"
	markEtaAt           = "\x00etaAt\x00"
	markBackend         = "\x00backend\x00"
)

var intMarks = []int{918273645, 918273647, 918273649, 918273651, 918273653, 918273655, 918273657}

// fieldPatterns is what each marker matches.
var fieldPatterns = map[string]string{
	markPod:             `[a-z0-9-]{1,63}`,
	markReadyAt:         `(?:\d{4}-\d{2}-\d{2} )?\d{2}:\d{2} UTC`,
	markWakeRequestedAt: `(?:\d{4}-\d{2}-\d{2} )?\d{2}:\d{2} UTC`,
	markEtaAt:           `(?:(?:\d{4}-\d{2}-\d{2} )?\d{2}:\d{2} UTC)?`, // "" when no wake is in progress
	markBackend:         `[A-Za-z' ]{1,40}`,                            // config.Backend.Called: "the conductor", "RunPod", ...
}

func init() {
	for _, n := range intMarks {
		fieldPatterns[strconv.Itoa(n)] = `-?\d+`
	}
}

// NewRecognizer builds a Recognizer from the reply templates, by key. An
// error names the template that does not render.
func NewRecognizer(texts map[machines.ReplyKey]string) (*Recognizer, error) {
	data := machines.ReplyData{
		Pod: markPod, ElapsedMinutes: intMarks[0], ExpectedMinutes: intMarks[1], LoadingMinutes: intMarks[2],
		IdleMinutes: intMarks[3], ReadyAt: markReadyAt, WakeRequestedAt: markWakeRequestedAt, Status: intMarks[4],
		EtaMinutes: intMarks[5], RemainingMinutes: intMarks[6], EtaAt: markEtaAt, Backend: markBackend,
	}
	marks := make([]string, 0, len(fieldPatterns))
	for m := range fieldPatterns {
		marks = append(marks, regexp.QuoteMeta(m))
	}
	slices.Sort(marks)
	split := regexp.MustCompile(strings.Join(marks, "|") + `|\x00word\d+\x00`)
	// plural renders its number's marker and a marker for either word.
	words := map[string]string{}
	funcs := machines.ReplyFuncs()
	funcs["plural"] = func(n int, one, many string) string {
		m := "\x00word" + strconv.Itoa(len(words)) + "\x00"
		words[m] = "(?:" + regexp.QuoteMeta(one) + "|" + regexp.QuoteMeta(many) + ")"
		return strconv.Itoa(n) + " " + m
	}

	keys := make([]machines.ReplyKey, 0, len(texts))
	for k := range texts {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	alts := []string{regexp.QuoteMeta(machines.FallbackReply)}
	for _, k := range keys {
		t, err := template.New(string(k)).Option("missingkey=error").Funcs(funcs).Parse(texts[k])
		if err != nil {
			return nil, fmt.Errorf("reply %s: %w", k, err)
		}
		var b strings.Builder
		if err := t.Execute(&b, data); err != nil {
			return nil, fmt.Errorf("reply %s: %w", k, err)
		}
		out := strings.TrimSpace(b.String())
		var pat strings.Builder
		last := 0
		for _, loc := range split.FindAllStringIndex(out, -1) {
			pat.WriteString(regexp.QuoteMeta(out[last:loc[0]]))
			pat.WriteString(cmp.Or(fieldPatterns[out[loc[0]:loc[1]]], words[out[loc[0]:loc[1]]]))
			last = loc[1]
		}
		pat.WriteString(regexp.QuoteMeta(out[last:]))
		alts = append(alts, pat.String())
	}
	re, err := regexp.Compile(`^\s*(?:` + strings.Join(alts, "|") + `)\s*$`)
	if err != nil {
		return nil, fmt.Errorf("reply patterns: %w", err)
	}
	return &Recognizer{re: re}, nil
}

// Is reports whether text is one of the host's replies.
func (r *Recognizer) Is(text string) bool {
	return r != nil && r.re.MatchString(text)
}

// contentText is a content as text: a string, or its text parts joined
// (an assistant message the client shows may come back either way); ok
// is false for anything else.
func contentText(raw json.RawMessage) (string, bool) {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, true
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if json.Unmarshal(raw, &parts) != nil || len(parts) == 0 {
		return "", false
	}
	var b strings.Builder
	for _, p := range parts {
		if p.Type != "text" {
			return "", false
		}
		b.WriteString(p.Text)
	}
	return b.String(), true
}

// strip takes the host's replies out of msgs, and returns nil when there
// is none (the messages go as they are), and how many it took out: all of
// msgs when they are nothing but replies (the caller refuses such a
// request, onlyReplies). A reply is an assistant message whose whole text
// is one of the Recognizer's. Taking one out would leave the user message
// before it next to the one after it; those two become one, their texts
// joined by a blank line (the same text twice, a question asked again, is
// kept once), so a conversation that alternated still alternates, unless
// they are two participants' (their names differ): those are kept apart.
// Every other message is kept byte for byte.
func (r *Recognizer) strip(msgs []message) ([]byte, int, error) {
	var out []message // nil until a reply is found
	removed := 0
	mergeNext := false // the last message kept is a user message before a removed reply
	for i, m := range msgs {
		if m.Role == "assistant" {
			if text, ok := contentText(m.Content); ok && r.Is(text) {
				if out == nil {
					out = append(make([]message, 0, len(msgs)), msgs[:i]...)
				}
				removed++
				mergeNext = len(out) > 0 && out[len(out)-1].Role == "user"
				continue
			}
		}
		if out == nil {
			continue // nothing taken out yet
		}
		if mergeNext && m.Role == "user" && sameName(out[len(out)-1].Name, m.Name) {
			merged, err := mergeUser(out[len(out)-1].raw, m)
			if err != nil {
				return nil, 0, err
			}
			out[len(out)-1].raw = merged
			continue // a further reply after it merges again
		}
		mergeNext = false
		out = append(out, m)
	}
	if out == nil {
		return nil, 0, nil
	}
	raws := make([]json.RawMessage, len(out))
	for i, m := range out {
		raws[i] = m.raw
	}
	b, err := json.Marshal(raws)
	return b, removed, err
}

// onlyReplies is the 400 for messages that are all the host's replies:
// with them taken out there is nothing to send, and the door answers as it
// answers an empty messages, before any model or wake.
func onlyReplies() *apiError {
	return badRequest("messages", "messages holds only the host's own status replies, which never reach a model: there is nothing to send")
}

// sameName reports whether two messages' names (their raw values, nil when
// absent) are one participant's: equal strings, no name and null alike.
func sameName(a, b json.RawMessage) bool {
	name := func(raw json.RawMessage) string {
		var s *string
		if len(raw) == 0 {
			return ""
		}
		if json.Unmarshal(raw, &s) != nil {
			return "\x00" + string(raw) // not a string: compared as written
		}
		if s == nil {
			return ""
		}
		return *s
	}
	return name(a) == name(b)
}

// mergeUser is user message a with mb's content after its own: strings
// joined by a blank line (kept once when equal), parts concatenated. a's
// other fields are kept.
func mergeUser(a json.RawMessage, mb message) (json.RawMessage, error) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(a, &fields); err != nil {
		return nil, err
	}
	ca := fields["content"]
	var sa, sb string
	if json.Unmarshal(ca, &sa) == nil && json.Unmarshal(mb.Content, &sb) == nil {
		if sa == sb {
			return a, nil // asked again: a as it was
		}
		fields["content"], _ = json.Marshal(sa + "\n\n" + sb)
	} else {
		pa, pb := asParts(ca), asParts(mb.Content)
		fields["content"], _ = json.Marshal(append(pa, pb...))
	}
	return json.Marshal(fields)
}

// asParts is a content as an array of parts: a string becomes one text
// part.
func asParts(raw json.RawMessage) []json.RawMessage {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		p, _ := json.Marshal(map[string]string{"type": "text", "text": s})
		return []json.RawMessage{p}
	}
	var parts []json.RawMessage
	_ = json.Unmarshal(raw, &parts)
	return parts
}
