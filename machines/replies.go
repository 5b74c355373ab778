package machines

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"text/template"
	"text/template/parse"
	"time"

	"github.com/wakeonchat/wakeonchat/engine"
	"github.com/wakeonchat/wakeonchat/specs"
)

// ReplyKey names one of the wake policy's replies; operators word them in
// wake.toml's [replies] section under the same names.
type ReplyKey string

// The replies the wake policy can give.
const (
	ReplyWaking           ReplyKey = "waking"
	ReplyStillWaking      ReplyKey = "still_waking"
	ReplyStillWakingLate  ReplyKey = "still_waking_late"
	ReplyRewake           ReplyKey = "rewake"
	ReplyLoading          ReplyKey = "loading"
	ReplyLoadingWaking    ReplyKey = "loading_waking"
	ReplyStuck            ReplyKey = "stuck"
	ReplyCrashed          ReplyKey = "crashed"
	ReplyUnreadable       ReplyKey = "unreadable"
	ReplyReadyThenStopped ReplyKey = "ready_then_stopped"
	ReplyNeverReady       ReplyKey = "never_ready"
	ReplyRefused          ReplyKey = "refused"
	ReplyWakeFailed       ReplyKey = "wake_failed"
	// ReplyResumeWaiting answers a wakeMode "resume" that finds the pod down
	// with nothing waking it: resume never wakes, so the client must ask again.
	ReplyResumeWaiting ReplyKey = "resume_waiting"
	// ReplyIdleStopped answers the first ask after the host stopped the pod
	// (state idled), and wakes it.
	ReplyIdleStopped ReplyKey = "idle_stopped"
)

// FallbackReply is the one reply not rendered from a template: what a turn
// answers should a reply fail to render after all (a bug: every template
// renders against sample data at load). The OpenAI door recognises it as
// one of the host's replies.
const FallbackReply = "The GPU brain is not ready yet. Ask again shortly."

// ReplyKeys lists every reply key: the "reply:KEY" effects of the pod
// lifecycle table, in the table's order. A new reply is a row's effect and
// a default text; nothing else lists it.
var ReplyKeys = replyKeys()

func replyKeys() []ReplyKey {
	t, err := specs.PodLifecycle()
	if err != nil {
		panic(err) // embedded at build time; a test parses it
	}
	return replyKeysOf(t)
}

// replyKeysOf lists the reply keys of table t's effects, in its order.
func replyKeysOf(t engine.Table) []ReplyKey {
	var keys []ReplyKey
	for _, e := range t.Effects {
		if k, ok := strings.CutPrefix(e, "reply:"); ok {
			keys = append(keys, ReplyKey(k))
		}
	}
	return keys
}

// DefaultReplies returns the default wording of every reply, as text/template
// sources. They are the design's wording.
func DefaultReplies() map[ReplyKey]string {
	return map[ReplyKey]string{
		ReplyWaking:           "Waking the GPU brain — that takes about {{plural .EtaMinutes \"minute\" \"minutes\"}}. Ask me again in a few minutes.",
		ReplyStillWaking:      "Still waking — {{.ElapsedMinutes}} min elapsed, usually ready by ~{{.EtaMinutes}}. Ask again shortly.",
		ReplyStillWakingLate:  "Still waking — {{.ElapsedMinutes}} min elapsed, taking longer than the usual {{plural .EtaMinutes \"minute\" \"minutes\"}}. Ask again shortly.",
		ReplyRewake:           "The GPU brain is not ready. I'll try to wake it again. Ask again in a few minutes.",
		ReplyLoading:          "The GPU is up and the model is still loading — that takes a few more minutes. Ask again shortly.",
		ReplyLoadingWaking:    "Still waking — {{.ElapsedMinutes}} min elapsed; the GPU is up and the model is loading. Ask again shortly.",
		ReplyStuck:            "The model server has been up for {{plural .LoadingMinutes \"minute\" \"minutes\"}} and still is not answering — it may be stuck. Someone needs to look at the pod.",
		ReplyCrashed:          "The model server answered at {{.ReadyAt}} but has stopped answering — it may have crashed. Someone needs to look at the pod.",
		ReplyUnreadable:       "I can't tell right now whether the GPU brain is awake: its status is unreadable, so I have not woken it. Ask again in a few minutes.",
		ReplyReadyThenStopped: "The GPU woke and was ready at {{.ReadyAt}}, then stopped — it shuts down after {{plural .IdleMinutes \"idle minute\" \"idle minutes\"}}. Waking it again — about {{plural .EtaMinutes \"minute\" \"minutes\"}}.",
		ReplyNeverReady:       "The wake requested at {{.WakeRequestedAt}} did not complete — the GPU never became ready. Waking it again — about {{plural .EtaMinutes \"minute\" \"minutes\"}}.",
		ReplyRefused:          "The last wake request was refused by {{.Backend}} (HTTP {{.Status}}). Waking it again — about {{plural .EtaMinutes \"minute\" \"minutes\"}}.",
		ReplyWakeFailed:       "The last wake request may not have reached {{.Backend}}. Trying again — about {{plural .EtaMinutes \"minute\" \"minutes\"}}.",
		ReplyResumeWaiting:    "The GPU brain is not ready and nothing is waking it right now, so your message has not run. Send it again to wake the GPU.",
		ReplyIdleStopped:      "The GPU was stopped after it idled, to save money. Waking it again — about {{plural .EtaMinutes \"minute\" \"minutes\"}}.",
	}
}

// ReplyData is what a reply template can use.
type ReplyData struct {
	Pod             string // the pod's name
	ElapsedMinutes  int    // whole minutes since the current wake was requested
	ExpectedMinutes int    // expected_wake in whole minutes
	// EtaMinutes is how long a wake of this pod takes: the median of its
	// last 10 completed wakes rounded to the nearest minute (at least 1),
	// or ExpectedMinutes while none has completed.
	EtaMinutes int
	// RemainingMinutes is, for a wake in progress (the one a wake reply
	// announces, or the one still waking, loading or stuck), the minutes
	// left until it is expected ready, rounded to the nearest minute and
	// at least 1 while any is left; 0 once the estimate has run out (past
	// a measured one the still-waking reply is still_waking_late) and when
	// no wake is in progress.
	RemainingMinutes int
	// EtaAt is when that wake is expected ready (requested + estimate),
	// formatted like ReadyAt; "" when no wake is in progress.
	EtaAt           string
	LoadingMinutes  int    // whole minutes the model has been loading
	IdleMinutes     int    // pod_idle_stop in whole minutes
	ReadyAt         string // when the last ready boot became ready: "15:04 UTC", date-prefixed when not today
	WakeRequestedAt string // when the current wake was requested, same format
	Status          int    // the HTTP status of a refused start
	// Backend is how the replies name the pod's GPU backend, the one that
	// refused or did not get a start: Policy.Backends, "the conductor" by
	// default.
	Backend string
}

// ReplyFuncs returns the functions a reply template can call, beside
// ReplyData's fields. There is one:
//
//	{{plural .EtaMinutes "minute" "minutes"}}
//
// renders the number and the word that agrees with it: "1 minute",
// "0 minutes", "9 minutes".
func ReplyFuncs() template.FuncMap {
	return template.FuncMap{"plural": plural}
}

// plural is n and one, when n is 1 or -1, else n and many.
func plural(n int, one, many string) string {
	if n == 1 || n == -1 {
		return strconv.Itoa(n) + " " + one
	}
	return strconv.Itoa(n) + " " + many
}

// SampleReplyData is the data every reply is rendered against at load, so a
// template that cannot render stops start-up.
func SampleReplyData() ReplyData {
	return ReplyData{
		Pod: "qwen", ElapsedMinutes: 3, ExpectedMinutes: 9, EtaMinutes: 9, RemainingMinutes: 6, EtaAt: "12:35 UTC",
		LoadingMinutes: 21, IdleMinutes: 15, ReadyAt: "2026-09-10 14:05 UTC", WakeRequestedAt: "12:26 UTC", Status: 409,
		Backend: DefaultBackend,
	}
}

// Replies holds the parsed reply templates.
type Replies struct {
	t map[ReplyKey]*template.Template
}

// ReplyError says which reply could not be used and why.
type ReplyError struct {
	Key ReplyKey
	Err error
}

func (e *ReplyError) Error() string { return fmt.Sprintf("reply %q: %v", e.Key, e.Err) }
func (e *ReplyError) Unwrap() error { return e.Err }

var (
	urlPattern      = regexp.MustCompile(`(?i)\b[a-z][a-z0-9+.-]*://|\bwww\.|\b[a-z0-9-]+\.(com|net|org|io|ai|dev|app)\b`)
	markdownPattern = regexp.MustCompile("(?m)(\\*\\*|__|`|\\[[^\\]]*\\]\\(|^\\s*#{1,6}\\s|^\\s*[-*+]\\s|^\\s*>\\s|~~)")
)

// CheckPlain returns an error when text is not plain: a URL or markdown.
func CheckPlain(text string) error {
	if m := urlPattern.FindString(text); m != "" {
		return fmt.Errorf("contains a URL (%q)", m)
	}
	if m := markdownPattern.FindString(text); m != "" {
		return fmt.Errorf("contains markdown (%q)", strings.TrimSpace(m))
	}
	return nil
}

// ParseReplies parses one template per reply key. Every key must be present,
// no other key may be, and each template must be plain text: no URL, no
// markdown in any text of it, in every branch ({{if}}, {{else}}, {{range}},
// {{with}}, {{define}}) and string constant, and none in what it renders
// from SampleReplyData. Errors are *ReplyError naming the key.
func ParseReplies(texts map[ReplyKey]string) (*Replies, error) {
	return parseReplies(ReplyKeys, texts)
}

// parseReplies is ParseReplies for a table whose reply keys are keys.
func parseReplies(keys []ReplyKey, texts map[ReplyKey]string) (*Replies, error) {
	r := &Replies{t: make(map[ReplyKey]*template.Template, len(keys))}
	var errs []error
	for _, k := range sortedKeys(texts) {
		if !slices.Contains(keys, k) {
			errs = append(errs, &ReplyError{Key: k, Err: errors.New("unknown reply")})
		}
	}
	for _, k := range keys {
		src, ok := texts[k]
		if !ok || strings.TrimSpace(src) == "" {
			errs = append(errs, &ReplyError{Key: k, Err: errors.New("missing or empty")})
			continue
		}
		t, err := template.New(string(k)).Option("missingkey=error").Funcs(ReplyFuncs()).Parse(src)
		if err != nil {
			errs = append(errs, &ReplyError{Key: k, Err: err})
			continue
		}
		if err := checkPlainTree(t); err != nil {
			errs = append(errs, &ReplyError{Key: k, Err: err})
			continue
		}
		r.t[k] = t
		out, err := r.Render(k, SampleReplyData())
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if err := CheckPlain(out); err != nil {
			errs = append(errs, &ReplyError{Key: k, Err: err})
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return r, nil
}

// checkPlainTree checks every text of t's parse trees with CheckPlain:
// rendering the sample data takes one path through a template, and a
// branch it does not take may hold a URL or markdown all the same. A text
// right after an action is checked as the middle of a line, so that
// markdown's line-start marks ("- ", "# ") match only where a line starts.
func checkPlainTree(t *template.Template) error {
	for _, tt := range t.Templates() {
		if tt.Tree == nil {
			continue
		}
		if err := checkPlainNode(tt.Tree.Root, false); err != nil {
			return err
		}
	}
	return nil
}

// lineMiddle stands for what comes before a text on its line: a word and
// a space, so that a line-start mark does not match and a URL still does.
const lineMiddle = "x "

// checkPlainNode checks the texts of n; midLine says n's output follows
// another's on its line.
func checkPlainNode(n parse.Node, midLine bool) error {
	switch n := n.(type) {
	case *parse.TextNode:
		if midLine {
			return CheckPlain(lineMiddle + string(n.Text))
		}
		return CheckPlain(string(n.Text))
	case *parse.StringNode:
		return CheckPlain(lineMiddle + n.Text)
	case *parse.ListNode:
		if n == nil { // an {{if}} without {{else}}
			return nil
		}
		prevAction := midLine
		for _, c := range n.Nodes {
			if err := checkPlainNode(c, prevAction); err != nil {
				return err
			}
			_, prevAction = c.(*parse.ActionNode)
		}
	case *parse.ActionNode:
		return checkPlainNode(n.Pipe, true)
	case *parse.PipeNode:
		if n == nil { // {{template "name"}}
			return nil
		}
		for _, c := range n.Cmds {
			if err := checkPlainNode(c, true); err != nil {
				return err
			}
		}
	case *parse.CommandNode:
		for _, a := range n.Args {
			if err := checkPlainNode(a, true); err != nil {
				return err
			}
		}
	case *parse.ChainNode:
		return checkPlainNode(n.Node, true)
	case *parse.TemplateNode:
		return checkPlainNode(n.Pipe, true)
	case *parse.IfNode:
		return checkPlainBranch(&n.BranchNode)
	case *parse.RangeNode:
		return checkPlainBranch(&n.BranchNode)
	case *parse.WithNode:
		return checkPlainBranch(&n.BranchNode)
	}
	return nil
}

func checkPlainBranch(b *parse.BranchNode) error {
	for _, n := range []parse.Node{b.Pipe, b.List, b.ElseList} {
		if err := checkPlainNode(n, false); err != nil {
			return err
		}
	}
	return nil
}

// MustDefaultReplies is DefaultReplies parsed, once in a process: Replies
// never change after ParseReplies, and a template renders concurrently. It
// panics only if the defaults themselves are broken, which a test forbids.
func MustDefaultReplies() *Replies { return parsedDefaults() }

var parsedDefaults = sync.OnceValue(func() *Replies {
	r, err := ParseReplies(DefaultReplies())
	if err != nil {
		panic(err)
	}
	return r
})

// Render executes the reply key's template with d.
func (r *Replies) Render(key ReplyKey, d ReplyData) (string, error) {
	t, ok := r.t[key]
	if !ok {
		return "", &ReplyError{Key: key, Err: errors.New("unknown reply")}
	}
	var b strings.Builder
	b.Grow(256) // every default fits: one allocation instead of a doubling series
	if err := t.Execute(&b, d); err != nil {
		return "", &ReplyError{Key: key, Err: err}
	}
	return b.String(), nil
}

// FormatClock renders t as "15:04 UTC", prefixed with the UTC date
// ("2006-01-02 15:04 UTC") when t is not on the same UTC day as now.
func FormatClock(t, now time.Time) string {
	t, now = t.UTC(), now.UTC()
	layout := "2006-01-02 15:04 UTC"
	if t.Year() == now.Year() && t.YearDay() == now.YearDay() {
		layout = "15:04 UTC"
	}
	// One allocation, the string: every decision with a wake formats two.
	var buf [len("2006-01-02 15:04 UTC")]byte
	return string(t.AppendFormat(buf[:0], layout))
}

func sortedKeys(m map[ReplyKey]string) []ReplyKey {
	keys := make([]ReplyKey, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
