package faulttest

import (
	"context"
	"fmt"
	"net/http"
	"runtime/pprof"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"
)

// systemPrompt is [agent] system_prompt's default, the first message of
// every completion.
const systemPrompt = "You are a helpful assistant."

// followUpMessage is the turn every row sends once its fault is gone.
const followUpMessage = "follow-up"

// history is what a completion request must carry for turns stored before
// it and the message being sent: the system prompt, each stored turn's user
// message and the model's echo of it, then msg.
func history(stored []string, msg string) []message {
	out := []message{{Role: "system", Content: systemPrompt}}
	for _, m := range stored {
		out = append(out, message{Role: "user", Content: m}, message{Role: "assistant", Content: echo(m)})
	}
	return append(out, message{Role: "user", Content: msg})
}

// checkFollowUp heals the conductor and the model, then sends a turn on
// session: it must not be 409 (the fault's turn released the slot), it must
// be the model's answer, and the model must have got exactly stored as the
// session's history.
func checkFollowUp(t *testing.T, h *host, session string, stored []string) {
	t.Helper()
	h.e.healthy()
	before := h.e.model.count(routeComplete)
	got := h.chat(t, session, followUpMessage)
	if got.Status == http.StatusConflict {
		t.Fatalf("follow-up turn: 409 %s: the fault's turn did not release the session's slot", got.Body)
	}
	if want := replyBody(session, echo(followUpMessage)); got.Status != http.StatusOK || got.Body != want {
		t.Fatalf("follow-up turn: %d %q, want 200 %q", got.Status, got.Body, want)
	}
	reqs := h.e.model.requests(routeComplete)
	if n := len(reqs) - before; n != 1 {
		t.Fatalf("follow-up turn: %d completion requests, want 1", n)
	}
	if diff := cmp.Diff(history(stored, followUpMessage), reqs[len(reqs)-1].Messages); diff != "" {
		t.Errorf("follow-up turn: the session's history sent to the model (-want +got):\n%s", diff)
	}
}

// checkHealthz: the host still serves.
func checkHealthz(t *testing.T, h *host) {
	t.Helper()
	got, err := h.Send(http.MethodGet, "/healthz", nil, waitFor)
	if err != nil {
		t.Fatalf("GET /healthz: %v", err)
	}
	if want := `{"status":"ok"}` + "\n"; got.Status != http.StatusOK || got.Body != want {
		t.Errorf("GET /healthz: %d %q, want 200 %q", got.Status, got.Body, want)
	}
}

// checkLog runs over the whole log once every host of the row has stopped:
// no turn panicked, and no line carries a secret. some says the hosts must
// have logged something (a host that served did).
func checkLog(t *testing.T, e *env, some bool) {
	t.Helper()
	lines := e.log.Lines(t)
	if some && len(lines) == 0 {
		t.Fatal("the hosts logged nothing")
	}
	for _, l := range lines {
		if l.Msg == "turn panicked" {
			t.Errorf("a turn panicked: %s", l.Raw)
		}
	}
	e.log.CheckNoSecrets(t, secretToken, secretKey)
}

// checkBodies: no response body carries a secret.
func checkBodies(t *testing.T, e *env) {
	t.Helper()
	if len(e.bodies.All()) == 0 {
		t.Fatal("no response body was recorded")
	}
	e.bodies.CheckNoSecrets(t, secretToken, secretKey)
}

// checkSecretsInPlay: the secrets went where they belong and nowhere else,
// so that their absence from logs and bodies means something. The token
// goes with every start and only there; the key with every completion and
// only there.
func checkSecretsInPlay(t *testing.T, e *env) {
	t.Helper()
	for _, r := range e.cond.requests("") {
		wantToken := ""
		if r.Route == routeStart {
			wantToken = secretToken
		}
		if r.Token != wantToken || r.Auth != "" {
			t.Errorf("conductor %s: X-Rig-Operator-Token %q, Authorization %q; want %q and none", r.Route, r.Token, r.Auth, wantToken)
		}
	}
	for _, r := range e.model.requests("") {
		if r.Auth != "Bearer "+secretKey || r.Token != "" {
			t.Errorf("model %s: Authorization %q, X-Rig-Operator-Token %q; want the bearer key and none", r.Route, r.Auth, r.Token)
		}
	}
}

// The rows run in parallel, so a goroutine left behind is found twice
// over: by the row that started it, and by the whole matrix once every row
// has finished.
//
// A row's goroutines carry the pprof label rowLabel with the row's test
// name (labelRow): a goroutine inherits its creator's labels, so the HTTP
// servers, the plugin clients and their gRPC connections, the wake
// watches, the test client's connections and both test servers all carry
// it. After Shutdown, with both servers closed, checkNoLeak waits for the
// last of them to end. A goroutine a timer started (time.AfterFunc) carries
// no label; TestFaultMatrix's goleak.VerifyNone, after the last row, sees
// every goroutine of the process.
const rowLabel = "faultrow"

// labelRow labels the calling goroutine, and so every goroutine it starts
// from now on, as t's. Call it first thing in the row.
func labelRow(t *testing.T) {
	pprof.SetGoroutineLabels(pprof.WithLabels(context.Background(), pprof.Labels(rowLabel, t.Name())))
}

// leakIgnores are the goroutines goleak may find that belong to no row.
// There are none: goleak's defaults already leave out the test runner's own
// goroutines (the parent test waiting in t.Run, the signal loop) and the
// goroutine that calls it; everything else is stopped by the time the last
// row has ended, and goleak retries for a while so that goroutines already
// on their way out are not reported. An ignore added here must say whose
// goroutine it is and why it may outlive Shutdown.
var leakIgnores []goleak.Option

// checkNoLeak: after Shutdown and with both servers closed, nothing the row
// started is still running. Goroutines already on their way out get
// waitFor to end.
func checkNoLeak(t *testing.T, e *env) {
	t.Helper()
	e.cond.close()
	e.model.close()
	// The row's own goroutine is labelled too: it drops the label to look.
	pprof.SetGoroutineLabels(context.Background())
	defer labelRow(t)
	deadline := time.Now().Add(waitFor)
	for {
		left := rowGoroutines(t.Name())
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("goroutines of the row still run %v after Shutdown (each: how many, then their stack):\n\n%s", waitFor, strings.Join(left, "\n\n"))
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// rowGoroutines are the stacks of the running goroutines labelled as the
// row name's, as the goroutine profile prints them (a count and the stack,
// one entry for the goroutines that share both).
func rowGoroutines(name string) []string {
	var b strings.Builder
	pprof.Lookup("goroutine").WriteTo(&b, 1)
	mark := "# labels: {" // the labels are printed sorted, each key and value quoted
	label := fmt.Sprintf("%q:%q", rowLabel, name)
	var out []string
	for _, stack := range strings.Split(b.String(), "\n\n") {
		for line := range strings.Lines(stack) {
			if labels, ok := strings.CutPrefix(line, mark); ok && slices.Contains(strings.Split(strings.TrimSuffix(strings.TrimSpace(labels), "}"), ", "), label) {
				out = append(out, stack)
				break
			}
		}
	}
	return out
}
