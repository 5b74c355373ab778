package app_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	openaisdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/ssestream"

	"github.com/wakeonchat/wakeonchat/host/app"
	"github.com/wakeonchat/wakeonchat/host/internal/e2e"
	"github.com/wakeonchat/wakeonchat/host/internal/fakeclock"
	"github.com/wakeonchat/wakeonchat/host/sim"
)

// The OpenAI door, end to end: the official OpenAI Go SDK against the real
// host, its real plugins and the simulator, on a fake clock.

// doorOptions say how to run a host for the door's tests.
type doorOptions struct {
	openai string            // the [openai] table's lines
	env    map[string]string // Options.Getenv
	// completionTimeout is [timings] completion_timeout; 0 leaves the
	// default.
	completionTimeout time.Duration
}

// startDoor runs a simulated host with opts and returns it with an SDK
// client on its door (no retries, so every request is one request).
func startDoor(t *testing.T, o doorOptions, sdk ...option.RequestOption) (*testHost, openaisdk.Client) {
	t.Helper()
	clk := fakeclock.New(t0)
	path := e2e.WriteConfig(t, e2e.Config{StartTimeout: startTimeout, CompletionTimeout: o.completionTimeout})
	if o.openai != "" {
		f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(f, "\n[openai]\n%s\n", o.openai)
		f.Close()
	}
	logs := &e2e.Log{}
	h := e2e.Start(t, app.Options{
		ConfigPath: path, Simulate: true, Logger: logs.Logger(slog.LevelDebug),
		Getenv: func(k string) string { return o.env[k] }, Clock: clk, PluginDir: binDir,
	}, logs, nil)
	th := &testHost{Host: h, clock: clk, log: logs}
	opts := append([]option.RequestOption{
		option.WithBaseURL(h.Base + "/v1/"), option.WithAPIKey("sk-client"), option.WithMaxRetries(0),
		option.WithHTTPClient(h.Client),
	}, sdk...)
	return th, openaisdk.NewClient(opts...)
}

func userTurn(text string) openaisdk.ChatCompletionNewParams {
	return openaisdk.ChatCompletionNewParams{
		Model:    "qwen",
		Messages: []openaisdk.ChatCompletionMessageParamUnion{openaisdk.UserMessage(text)},
	}
}

// sdkContext bounds one SDK call in real time.
func sdkContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
	t.Cleanup(cancel)
	return ctx
}

// ask is a non-streaming completion; it returns the content and the
// X-Wake-State.
func askSDK(t *testing.T, c openaisdk.Client, p openaisdk.ChatCompletionNewParams) (string, string) {
	t.Helper()
	var resp *http.Response
	cc, err := c.Chat.Completions.New(sdkContext(t), p, option.WithResponseInto(&resp))
	if err != nil {
		t.Fatalf("chat.completions.create: %v", err)
	}
	if len(cc.Choices) != 1 || cc.Choices[0].FinishReason != "stop" || cc.Choices[0].Message.Role != "assistant" || cc.Object != "chat.completion" {
		t.Errorf("completion is not one assistant message that stops: %s", cc.RawJSON())
	}
	return cc.Choices[0].Message.Content, resp.Header.Get("X-Wake-State")
}

// streamed is what a streaming completion gave the SDK.
type streamed struct {
	content string
	state   string // X-Wake-State
	ids     map[string]bool
	chunks  int
}

// streamSDK runs a streaming completion to its end through the SDK's
// accumulator and checks what strict clients check.
func streamSDK(t *testing.T, c openaisdk.Client, p openaisdk.ChatCompletionNewParams) streamed {
	t.Helper()
	var resp *http.Response
	st := c.Chat.Completions.NewStreaming(sdkContext(t), p, option.WithResponseInto(&resp))
	defer st.Close()
	acc := openaisdk.ChatCompletionAccumulator{}
	out := streamed{ids: map[string]bool{}}
	first := true
	for st.Next() {
		ch := st.Current()
		acc.AddChunk(ch)
		out.ids[ch.ID] = true
		out.chunks++
		if first && (len(ch.Choices) == 0 || ch.Choices[0].Delta.Role != "assistant") {
			t.Errorf("the first chunk has no assistant role: %s", ch.RawJSON())
		}
		first = false
		if ch.Object != "chat.completion.chunk" || ch.Created == 0 || ch.Model == "" {
			t.Errorf("chunk without object, created or model: %s", ch.RawJSON())
		}
	}
	if err := st.Err(); err != nil {
		t.Fatalf("stream: %v", err)
	}
	if len(out.ids) != 1 {
		t.Errorf("chunk ids %v, want one id for the whole answer", out.ids)
	}
	if len(acc.Choices) != 1 || acc.Choices[0].FinishReason != "stop" {
		t.Errorf("the stream does not end with finish_reason stop: %+v", acc.Choices)
	}
	if len(acc.Choices) > 0 {
		out.content = acc.Choices[0].Message.Content
	}
	out.state = resp.Header.Get("X-Wake-State")
	return out
}

// wakeToReady asks once (the wake) and moves the clock through the
// simulated nine-minute wake, a minute each time the wake's watch waits on
// it, until the pod's event stream says the wake is ready.
func wakeToReady(t *testing.T, h *testHost, c openaisdk.Client) {
	t.Helper()
	if got, _ := askSDK(t, c, userTurn("wake up")); got != e2e.ReplyWaking {
		t.Fatalf("first ask: %q, want the waking reply", got)
	}
	h.stepUntilState(t, "ready", time.Minute)
}

// heldLimit is as far as a held request's test moves the clock: the
// simulated wake is ready at 9 minutes.
var heldLimit = t0.Add(15 * time.Minute)

// stepUntil moves the fake clock in steps of at most step, each once
// waiters wait on it (the hold and the wake's watch are two) or after a
// short real-time wait, until done yields, and returns what it yields. It gives
// up (false) once the clock reached limit and done stayed silent for
// waitFor. A held request ends when the watch sees the model answer, and
// the watch starts only once the start request returns: stepping to a
// fixed time could leave the watch waiting on a clock that no longer moves.
func stepUntil[T any](c *fakeclock.Clock, limit time.Time, step time.Duration, waiters int, done <-chan T) (T, bool) {
	for c.Now().Before(limit) {
		select {
		case v := <-done:
			return v, true
		default:
		}
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		_ = c.BlockUntilWaiters(ctx, waiters)
		cancel()
		c.Advance(min(step, limit.Sub(c.Now())))
	}
	select {
	case v := <-done:
		return v, true
	case <-time.After(waitFor):
		var zero T
		return zero, false
	}
}

// streamsEnded waits until n of the model's streams have ended and returns
// how many reached [DONE] and how many lost their client: the SDK reads
// [DONE] before the model's handler counts it.
func streamsEnded(t *testing.T, s *sim.Sim, n int) (done, cut int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	done, cut, err := s.AwaitStreams(ctx, n)
	if err != nil {
		t.Fatalf("%d of the model's streams ended (%d done, %d cut), want %d: %v", done+cut, done, cut, n, err)
	}
	return done, cut
}

// GET /v1/models answers from config while the pod sleeps, and wakes
// nothing.
func TestOpenAIModelsWhileAsleep(t *testing.T) {
	t.Parallel()
	h, c := startDoor(t, doorOptions{})
	page, err := c.Models.List(sdkContext(t))
	if err != nil {
		t.Fatalf("models.list: %v", err)
	}
	var ids []string
	for _, m := range page.Data {
		ids = append(ids, m.ID)
		if m.Object != "model" || m.OwnedBy != "wake-on-chat" || m.Created != t0.Unix() {
			t.Errorf("model %s", m.RawJSON())
		}
	}
	if diff := cmp.Diff([]string{"qwen"}, ids); diff != "" {
		t.Errorf("models (-want +got):\n%s", diff)
	}
	if n := h.sim(t).StartRequests("qwen"); n != 0 {
		t.Errorf("listing the models sent %d start requests", n)
	}
	if p, _ := h.pod(t); p.State != "asleep" {
		t.Errorf("state %q after listing, want asleep", p.State)
	}
	// One clock for every created, the host's (here the fake one, months
	// from the wall clock's): the models' is the host's start, a reply's
	// its own time.
	h.clock.Advance(time.Minute)
	cc, err := c.Chat.Completions.New(sdkContext(t), userTurn("hello"))
	if err != nil {
		t.Fatalf("chat.completions.create: %v", err)
	}
	if want := t0.Add(time.Minute).Unix(); cc.Created != want {
		t.Errorf("the reply's created %d, want %d: the host's clock", cc.Created, want)
	}
}

// A whole wake through the SDK, non-streaming and streaming alternately:
// waking, still waking, loading, the model's answer (streamed chunk by
// chunk), with the host's replies in the history left out of what the
// model gets. One start request.
func TestOpenAIWakeThroughTheSDK(t *testing.T) {
	t.Parallel()
	h, c := startDoor(t, doorOptions{})
	s := h.sim(t)

	got, state := askSDK(t, c, userTurn("hello"))
	if got != e2e.ReplyWaking || state != "waking" {
		t.Errorf("asleep: %q (X-Wake-State %q), want the waking reply, waking", got, state)
	}
	stepTo(t, h.clock, t0.Add(3*time.Minute), time.Minute)
	if st := streamSDK(t, c, userTurn("hello")); st.content != e2e.ReplyStillWaking(3) || st.state != "waking" || st.chunks != 3 {
		t.Errorf("+3m streamed: %q (%d chunks, X-Wake-State %q), want the still-waking reply in 3 chunks", st.content, st.chunks, st.state)
	}
	stepTo(t, h.clock, t0.Add(6*time.Minute+40*time.Second), time.Minute)
	if got, state := askSDK(t, c, userTurn("hello")); got != replyLoadingWaking(6) || state != "loading" {
		t.Errorf("+6m40s: %q (X-Wake-State %q), want the loading reply, loading", got, state)
	}
	stepTo(t, h.clock, t0.Add(9*time.Minute+10*time.Second), time.Minute)

	// The client sends back what it was shown: the replies go, the two
	// user turns around each become one.
	history := openaisdk.ChatCompletionNewParams{Model: "qwen", Messages: []openaisdk.ChatCompletionMessageParamUnion{
		openaisdk.SystemMessage("be brief"),
		openaisdk.UserMessage("first"),
		openaisdk.AssistantMessage(e2e.ReplyWaking),
		openaisdk.UserMessage("second"),
		openaisdk.AssistantMessage(replyLoadingWaking(6)),
		openaisdk.UserMessage("third"),
	}}
	if got, state := askSDK(t, c, history); got != "echo: first\n\nsecond\n\nthird" || state != "ready" {
		t.Errorf("ready: %q (X-Wake-State %q), want the model's echo of the joined user turns, ready", got, state)
	}
	st := streamSDK(t, c, userTurn("how are you"))
	if st.content != "echo: how are you" || st.state != "ready" {
		t.Errorf("ready, streamed: %q (X-Wake-State %q), want the model's echo, ready", st.content, st.state)
	}
	if st.chunks != 6 { // role, "echo: ", "how ", "are ", "you", stop
		t.Errorf("ready, streamed in %d chunks, want the model's 6 relayed", st.chunks)
	}
	if n := s.StartRequests("qwen"); n != 1 {
		t.Errorf("start requests: %d, want 1", n)
	}
	if done, cut := streamsEnded(t, s, 1); done != 1 || cut != 0 {
		t.Errorf("the model streamed %d answers to their end and lost %d, want 1 and 0", done, cut)
	}
}

// A model that stays up without answering is stuck, said the same way.
func TestOpenAIStuckReply(t *testing.T) {
	t.Parallel()
	h, c := startDoor(t, doorOptions{})
	h.sim(t).NeverReady("qwen", true)
	askSDK(t, c, userTurn("hello"))
	stepTo(t, h.clock, t0.Add(27*time.Minute), time.Minute)
	st := streamSDK(t, c, userTurn("hello"))
	if !strings.Contains(st.content, "it may be stuck") || st.state != "stuck" {
		t.Errorf("+27m: %q (X-Wake-State %q), want the stuck reply, stuck", st.content, st.state)
	}
}

// A client that leaves mid-stream cancels the model's request at once.
func TestOpenAIClientLeavesMidStream(t *testing.T) {
	t.Parallel()
	h, c := startDoor(t, doorOptions{})
	s := h.sim(t)
	wakeToReady(t, h, c)
	s.SetStreamGap(time.Hour) // the model holds the second word until its client leaves

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	st := c.Chat.Completions.NewStreaming(ctx, userTurn("a long answer"))
	for range 2 { // the role, then "echo: "
		if !st.Next() {
			t.Fatalf("the stream ended early: %v", st.Err())
		}
	}
	if got := st.Current().Choices[0].Delta.Content; got != "echo: " {
		t.Fatalf("second chunk %q, want %q", got, "echo: ")
	}
	cancel()
	st.Close()

	if done, cut := streamsEnded(t, s, 1); done != 0 || cut != 1 {
		t.Errorf("the model streamed %d answers to their end and lost %d, want 0 and 1", done, cut)
	}
}

// Hold mode: a streaming request that finds the pod asleep wakes it and is
// held, with keepalives the SDK ignores, until the model is freshly ready;
// it then runs once and the model's answer is the stream's.
func TestOpenAIHoldEndsInTheModelsAnswer(t *testing.T) {
	t.Parallel()
	h, c := startDoor(t, doorOptions{openai: "cold_start = \"hold\"\nhold_max = \"20m\"\nkeepalive = \"15s\""})
	s := h.sim(t)

	type result struct {
		content string
		chunks  int
		err     error
	}
	done := make(chan result, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		st := c.Chat.Completions.NewStreaming(ctx, userTurn("held"))
		defer st.Close()
		acc := openaisdk.ChatCompletionAccumulator{}
		n := 0
		for st.Next() {
			acc.AddChunk(st.Current())
			n++
		}
		r := result{chunks: n, err: st.Err()}
		if len(acc.Choices) > 0 {
			r.content = acc.Choices[0].Message.Content
		}
		done <- r
	}()
	// Held, and the start returned: the hold and the wake's watch wait on
	// the clock.
	awaitValue(t, h.Client, h.Base, 1, "wakeonchat_held_requests")
	e2e.WaitWaiters(t, h.clock, 2, waitFor)
	if n := s.StartRequests("qwen"); n != 1 {
		t.Errorf("start requests once held: %d, want 1", n)
	}
	r, ok := stepUntil(h.clock, heldLimit, 30*time.Second, 2, done)
	if !ok {
		t.Fatalf("the held request did not end once the model was ready; the log:\n%s", h.log)
	}
	if r.err != nil || r.content != "echo: held" {
		t.Errorf("held stream: %q, %v; want the model's echo", r.content, r.err)
	}
	if done, cut := streamsEnded(t, s, 1); done != 1 || cut != 0 {
		t.Errorf("the model answered %d streams and lost %d, want exactly 1 and 0: the held request ran once", done, cut)
	}
	// The line is logged after the answer was written: the log is whole
	// once the host stopped.
	h.stop(t)
	h.logged(t, "openai held request ran for pod qwen")
}

// Hold mode, non-streaming: the request that finds the pod asleep wakes it
// and is held in silence (nothing reaches the client) until the model is
// freshly ready; it then runs once and the SDK call returns the model's
// answer, not a status reply. One start request.
func TestOpenAIHeldNonStreamingEndsInTheModelsAnswer(t *testing.T) {
	t.Parallel()
	h, c := startDoor(t, doorOptions{openai: "cold_start = \"hold\"\nhold_max = \"20m\""})
	s := h.sim(t)

	type result struct {
		cc    *openaisdk.ChatCompletion
		state string // X-Wake-State
		err   error
	}
	done := make(chan result, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		var resp *http.Response
		cc, err := c.Chat.Completions.New(ctx, userTurn("held"), option.WithResponseInto(&resp))
		r := result{cc: cc, err: err}
		if resp != nil {
			r.state = resp.Header.Get("X-Wake-State")
		}
		done <- r
	}()
	// Held, and the start returned: the hold and the wake's watch wait on
	// the clock.
	awaitValue(t, h.Client, h.Base, 1, "wakeonchat_held_requests")
	e2e.WaitWaiters(t, h.clock, 2, waitFor)
	if n := s.StartRequests("qwen"); n != 1 {
		t.Errorf("start requests once held: %d, want 1", n)
	}
	select {
	case r := <-done:
		t.Fatalf("the held request was answered while the pod was waking: %+v", r)
	default:
	}

	r, ok := stepUntil(h.clock, heldLimit, 30*time.Second, 2, done)
	if !ok {
		t.Fatalf("the held request did not end once the model was ready; the log:\n%s", h.log)
	}
	if r.err != nil {
		t.Fatalf("held request: %v", r.err)
	}
	if len(r.cc.Choices) != 1 || r.cc.Choices[0].Message.Content != "echo: held" || r.cc.Choices[0].FinishReason != "stop" {
		t.Errorf("held answer %s, want the model's echo", r.cc.RawJSON())
	}
	if !strings.HasPrefix(r.cc.ID, "chatcmpl-sim-") || r.state != "ready" {
		t.Errorf("held answer id %q (X-Wake-State %q), want the model's own id, ready", r.cc.ID, r.state)
	}
	if n := s.Completions(); n != 1 {
		t.Errorf("the model answered %d completions, want exactly 1: the held request ran once", n)
	}
	if n := s.StartRequests("qwen"); n != 1 {
		t.Errorf("start requests: %d, want 1", n)
	}
	// The line is logged after the answer was written: the log is whole
	// once the host stopped.
	h.stop(t)
	h.logged(t, "openai held request ran for pod qwen")
	if n := len(h.log.Matching(t, "provider not ready for pod qwen (status EXITED) → wake")); n != 1 {
		t.Errorf("%d wake decisions logged, want 1", n)
	}
}

// Hold mode, non-streaming: a held request whose client gives up (or
// whose proxy cuts the silent response) is dropped and never runs; the wake
// it started goes on, and the request asked again (as the SDKs retry a
// proxy's 504) is held on the same wake and gets the model's answer.
func TestOpenAIHeldNonStreamingClientLeaves(t *testing.T) {
	t.Parallel()
	h, c := startDoor(t, doorOptions{openai: "cold_start = \"hold\"\nhold_max = \"20m\""})
	s := h.sim(t)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	left := make(chan error, 1)
	go func() {
		_, err := c.Chat.Completions.New(ctx, userTurn("given up"))
		left <- err
	}()
	awaitValue(t, h.Client, h.Base, 1, "wakeonchat_held_requests")
	cancel()
	select {
	case err := <-left:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("the client's call: %v, want its own cancellation", err)
		}
	case <-time.After(waitFor):
		t.Fatal("the SDK call did not end when its context was cancelled")
	}
	// The hold ends after it logged the drop.
	awaitValue(t, h.Client, h.Base, 0, "wakeonchat_held_requests")
	h.logged(t, "openai held request dropped for pod qwen: the client left")

	type result struct {
		content string
		err     error
	}
	again := make(chan result, 1)
	againCtx := sdkContext(t)
	go func() {
		cc, err := c.Chat.Completions.New(againCtx, userTurn("asked again"))
		r := result{err: err}
		if err == nil && len(cc.Choices) == 1 {
			r.content = cc.Choices[0].Message.Content
		}
		again <- r
	}()
	// The dropped hold's timer stays pending on the fake clock: three
	// waiters with the new hold and the watch, whose start returned.
	awaitValue(t, h.Client, h.Base, 1, "wakeonchat_held_requests")
	e2e.WaitWaiters(t, h.clock, 3, waitFor)
	r, ok := stepUntil(h.clock, heldLimit, 30*time.Second, 3, again)
	if !ok {
		t.Fatalf("the request asked again did not end once the model was ready; the log:\n%s", h.log.Operator(t))
	}
	if r.err != nil || r.content != "echo: asked again" {
		t.Errorf("the request asked again: %q, %v; want the model's echo", r.content, r.err)
	}
	if n := s.Completions(); n != 1 {
		t.Errorf("the model answered %d completions, want 1: the request asked again, never the dropped one", n)
	}
	if n := s.StartRequests("qwen"); n != 1 {
		t.Errorf("start requests: %d, want 1: the dropped request's wake went on and served the next", n)
	}
	// The ran line is logged after the answer was written: the log is
	// whole once the host stopped.
	h.stop(t)
	if n := len(h.log.Matching(t, "openai held request ran")); n != 1 {
		t.Errorf("%d held requests ran, want 1", n)
	}
	if n := len(h.log.Matching(t, "openai request held for pod qwen")); n != 2 {
		t.Errorf("%d requests held, want 2: the dropped one and the one asked again", n)
	}
}

// Auth on: the door wants one of the keys; off (every other test): any.
// The keys reach no log.
func TestOpenAIAuth(t *testing.T) {
	t.Parallel()
	const keys = "sk-door-5f1e2d3c, sk-door-9a8b7c6d"
	opts := doorOptions{openai: `api_keys_env = "DOOR_KEYS"`, env: map[string]string{"DOOR_KEYS": keys}}
	h, c := startDoor(t, opts)
	_, err := c.Models.List(sdkContext(t))
	var apiErr *openaisdk.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusUnauthorized || apiErr.Code != "invalid_api_key" {
		t.Errorf("a wrong key: %v, want a 401 invalid_api_key", err)
	}
	_, err = c.Chat.Completions.New(sdkContext(t), userTurn("hello"))
	if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusUnauthorized {
		t.Errorf("a wrong key, completion: %v, want a 401", err)
	}
	if n := h.sim(t).StartRequests("qwen"); n != 0 {
		t.Errorf("an unauthorised completion sent %d start requests", n)
	}
	good := openaisdk.NewClient(option.WithBaseURL(h.Base+"/v1/"), option.WithAPIKey("sk-door-9a8b7c6d"), option.WithMaxRetries(0), option.WithHTTPClient(h.Client))
	if got, _ := askSDK(t, good, userTurn("hello")); got != e2e.ReplyWaking {
		t.Errorf("the second key: %q, want the waking reply", got)
	}
	h.log.CheckNoSecrets(t, "sk-door-5f1e2d3c", "sk-door-9a8b7c6d", "sk-client")
}

// One burst across both doors at an asleep pod makes one wake: one start,
// one waking reply, every other turn still waking.
func TestOneWakeForBothDoors(t *testing.T) {
	t.Parallel()
	const each = 40
	h, c := startDoor(t, doorOptions{})
	h.Client.Transport = &http.Transport{MaxIdleConnsPerHost: 3 * each}
	s := h.sim(t)

	replies := make(chan string, 3*each)
	errs := make(chan error, 3*each)
	var wg sync.WaitGroup
	begin := make(chan struct{})
	for i := range each {
		wg.Go(func() {
			<-begin
			status, raw, err := h.send(http.MethodPost, "/api/chat", chatRequest{Message: "hello", SessionID: fmt.Sprintf("s-%d", i)})
			if err != nil || status != 200 {
				errs <- fmt.Errorf("/api/chat: %d %v %s", status, err, raw)
				return
			}
			var r chatReply
			if err := jsonUnmarshal(raw, &r); err != nil {
				errs <- err
				return
			}
			replies <- r.Reply
		})
		wg.Go(func() {
			<-begin
			cc, err := c.Chat.Completions.New(context.Background(), userTurn("hello"))
			if err != nil {
				errs <- fmt.Errorf("/v1 non-streaming: %w", err)
				return
			}
			replies <- cc.Choices[0].Message.Content
		})
		wg.Go(func() {
			<-begin
			st := c.Chat.Completions.NewStreaming(context.Background(), userTurn("hello"))
			defer st.Close()
			acc := openaisdk.ChatCompletionAccumulator{}
			for st.Next() {
				acc.AddChunk(st.Current())
			}
			if err := st.Err(); err != nil || len(acc.Choices) != 1 {
				errs <- fmt.Errorf("/v1 streaming: %v", err)
				return
			}
			replies <- acc.Choices[0].Message.Content
		})
	}
	close(begin)
	wg.Wait()
	close(replies)
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	got := map[string]int{}
	for r := range replies {
		got[r]++
	}
	want := map[string]int{e2e.ReplyWaking: 1, e2e.ReplyStillWaking(0): 3*each - 1}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("replies across both doors (-want +got):\n%s", diff)
	}
	e2e.WaitWatcher(t, h.clock, waitFor) // the start returned; the watch runs
	if n := s.StartRequests("qwen"); n != 1 {
		t.Errorf("start requests: %d, want exactly 1", n)
	}
	if n := len(h.log.Matching(t, "provider not ready for pod qwen (status EXITED) → wake")); n != 1 {
		t.Errorf("%d wake decisions logged, want 1", n)
	}
}

func jsonUnmarshal(raw string, v any) error { return json.Unmarshal([]byte(raw), v) }

// A keys variable that is named but empty refuses every request, and says
// so once at start-up: a typo never leaves the door open.
func TestOpenAIEmptyKeysVariableRefusesAll(t *testing.T) {
	t.Parallel()
	h, c := startDoor(t, doorOptions{openai: `api_keys_env = "DOOR_KEYS"`})
	_, err := c.Models.List(sdkContext(t))
	var apiErr *openaisdk.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusUnauthorized {
		t.Errorf("models.list: %v, want a 401", err)
	}
	line := h.logged(t, "openai door refuses every request") // logged by app.New
	if line.Level != "ERROR" {
		t.Errorf("the start-up line is %s, want ERROR", line.Level)
	}
	// The variable may be set, to nothing: the line does not say it is not set.
	if want := "openai door refuses every request: its API keys variable is empty or not set"; line.Msg != want {
		t.Errorf("the start-up line says %q, want %q", line.Msg, want)
	}
}

// What a page on another site can make a browser send without a CORS
// preflight (text/plain, a form, multipart) is refused 415 before the door
// does anything, even with every origin allowed: no completion, no start
// request, the pod still asleep. The same body as JSON wakes it.
func TestOpenAICrossSiteSimplePostWakesNothing(t *testing.T) {
	t.Parallel()
	h, _ := startDoor(t, doorOptions{openai: `cors_origins = ["*"]`})
	s := h.sim(t)
	const body = `{"model":"qwen","messages":[{"role":"user","content":"hello"}]}`
	post := func(contentType string) (int, string) {
		t.Helper()
		req, err := http.NewRequestWithContext(sdkContext(t), http.MethodPost, h.Base+"/v1/chat/completions", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", contentType)
		req.Header.Set("Origin", "https://elsewhere.example")
		resp, err := h.Client.Do(req)
		if err != nil {
			t.Fatalf("POST as %s: %v", contentType, err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatalf("POST as %s: %v", contentType, err)
		}
		return resp.StatusCode, string(b)
	}
	const refused = `{"error":{"message":"Content-Type must be application/json","type":"invalid_request_error","param":null,"code":"unsupported_media_type"}}` + "\n"
	for _, ct := range []string{"text/plain;charset=UTF-8", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x"} {
		status, got := post(ct)
		if status != http.StatusUnsupportedMediaType || got != refused {
			t.Errorf("POST as %s: %d %s, want 415 %s", ct, status, got, refused)
		}
	}
	if n, m := s.StartRequests("qwen"), s.Completions(); n != 0 || m != 0 {
		t.Errorf("the refused requests sent %d start requests and %d completions, want none", n, m)
	}
	if p, _ := h.pod(t); p.State != "asleep" {
		t.Errorf("state %q after the refused requests, want asleep", p.State)
	}

	status, got := post("application/json")
	if status != http.StatusOK || !strings.Contains(got, e2e.ReplyWaking) {
		t.Errorf("POST as application/json: %d %s, want the waking reply", status, got)
	}
	e2e.WaitCount(t, `StartRequests("qwen")`, 1, func() int { return s.StartRequests("qwen") }, waitFor)
}

// What bounds a stream is its silences, not its length: completion_timeout
// caps the wait for the answer's head and then each wait for more. A model
// that goes silent after its head and a chunk is ended, with the
// documented error event (the SDK raises it) and a clean end of the
// response, not a cut connection; an answer that keeps coming streams for
// longer than completion_timeout, to its end.
//
// completion_timeout is 600 ms of real time: each gap of the long answer
// (150 ms) has 450 ms to spare on a busy machine, and the answer still
// takes longer than the timeout.
func TestOpenAIStreamIsBoundedBySilences(t *testing.T) {
	t.Parallel()
	const timeout = 600 * time.Millisecond
	h, c := startDoor(t, doorOptions{completionTimeout: timeout})
	s := h.sim(t)
	wakeToReady(t, h, c)

	s.SetStreamGap(timeout / 4) // "echo: ", "a ", "long ", "answer ", "that ", "keeps ", "coming": 6 gaps, 900 ms
	began := time.Now()
	st := streamSDK(t, c, userTurn("a long answer that keeps coming"))
	if st.content != "echo: a long answer that keeps coming" {
		t.Errorf("a long answer: %q, want the whole echo", st.content)
	}
	if took := time.Since(began); took < timeout {
		t.Errorf("the long answer took %v, want longer than completion_timeout (%v) for this test to show anything", took, timeout)
	}

	s.SetStreamGap(time.Hour) // the model holds the second word until its client leaves
	stream := c.Chat.Completions.NewStreaming(sdkContext(t), userTurn("a silent model"))
	defer stream.Close()
	chunks := 0
	for stream.Next() {
		chunks++
	}
	var se *ssestream.StreamError
	if err := stream.Err(); !errors.As(err, &se) ||
		strings.TrimSpace(string(se.Event.Data)) != `{"error":{"message":"the model provider failed: the answer stopped before its end","type":"api_error","param":null,"code":"provider_failed"}}` {
		t.Errorf("a silent model's stream ended with %v, want the door's error event", err)
	}
	if chunks != 2 { // the role, "echo: "
		t.Errorf("%d chunks before the error, want the model's 2", chunks)
	}
	line := h.logged(t, "openai answer broke off") // logged before the error event was written
	if line.Level != "ERROR" {
		t.Errorf("openai answer broke off at %s, want ERROR", line.Level)
	}
}

// n asks for that many choices, and a cold pod's reply has them all,
// streaming or not: a client that shows n answers shows the reply n times
// rather than finding choices it asked for missing.
func TestOpenAIReplyHasNChoices(t *testing.T) {
	t.Parallel()
	_, c := startDoor(t, doorOptions{})
	p := userTurn("hello")
	p.N = openaisdk.Int(3)
	cc, err := c.Chat.Completions.New(sdkContext(t), p)
	if err != nil {
		t.Fatalf("chat.completions.create: %v", err)
	}
	var got []string
	for i, ch := range cc.Choices {
		if ch.Index != int64(i) || ch.FinishReason != "stop" {
			t.Errorf("choice %d: %s", i, ch.RawJSON())
		}
		got = append(got, ch.Message.Content)
	}
	if diff := cmp.Diff([]string{e2e.ReplyWaking, e2e.ReplyWaking, e2e.ReplyWaking}, got); diff != "" {
		t.Errorf("non-streaming choices (-want +got):\n%s", diff)
	}

	st := c.Chat.Completions.NewStreaming(sdkContext(t), p)
	defer st.Close()
	acc := openaisdk.ChatCompletionAccumulator{}
	for st.Next() {
		acc.AddChunk(st.Current())
	}
	if err := st.Err(); err != nil {
		t.Fatalf("stream: %v", err)
	}
	got = nil
	for _, ch := range acc.Choices {
		if ch.FinishReason != "stop" {
			t.Errorf("streamed choice %d did not stop: %+v", ch.Index, ch)
		}
		got = append(got, ch.Message.Content)
	}
	still := e2e.ReplyStillWaking(0)
	if diff := cmp.Diff([]string{still, still, still}, got); diff != "" {
		t.Errorf("streamed choices (-want +got):\n%s", diff)
	}
}

// A request the model refuses as malformed (here content that is neither a
// string nor parts) is the client's mistake: the client gets the model's
// 400, and the log says so at INFO, not as the operator's ERROR.
func TestOpenAIModelRefusalIsNoOperatorError(t *testing.T) {
	t.Parallel()
	h, c := startDoor(t, doorOptions{})
	wakeToReady(t, h, c)
	bad := openaisdk.ChatCompletionNewParams{Model: "qwen"}
	bad.SetExtraFields(map[string]any{"messages": []any{map[string]any{"role": "user", "content": 5}}})
	_, err := c.Chat.Completions.New(sdkContext(t), bad)
	var apiErr *openaisdk.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusBadRequest || !strings.Contains(apiErr.Message, "content is neither a string nor an array of parts") {
		t.Fatalf("a malformed message: %v, want the model's 400", err)
	}
	line := h.logged(t, "openai request rejected by the model") // logged before the 400 was written
	if line.Level != "INFO" {
		t.Errorf("openai request rejected by the model at %s, want INFO", line.Level)
	}
	if n := len(h.log.Matching(t, "openai turn failed")); n != 0 {
		t.Errorf("%d openai turn failed lines, want none: the operator has nothing to do", n)
	}
}
