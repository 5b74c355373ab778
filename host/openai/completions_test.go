package openai_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/wakeonchat/wakeonchat/host/openai"
	"github.com/wakeonchat/wakeonchat/host/resolve"
	"github.com/wakeonchat/wakeonchat/host/turn"
	"github.com/wakeonchat/wakeonchat/plugins/pluginapi"
)

// A malformed request is a 400 naming the field, an unknown model a 404;
// neither reaches a model or the machine.
func TestCompletionsBadRequests(t *testing.T) {
	tests := []struct {
		name, body string
		status     int
		param      string // "" for null
		message    string
	}{
		{"not JSON", `hello`, 400, "", "the body must be a JSON object (a chat completions request)"},
		{"an array", `[1]`, 400, "", "the body must be a JSON object (a chat completions request)"},
		{"broken", `{"model":"qwen","messages":[`, 400, "", "the body is not valid JSON: truncated"},
		{"ends after a value", `{"model":"qwen"`, 400, "", "the body is not valid JSON: truncated"},
		{"no colon", `{"model" "qwen"}`, 400, "", "the body is not valid JSON: syntax error at offset 9"},
		{"trailing", `{"model":"qwen","messages":[{"role":"user","content":"hi"}]} {}`, 400, "", "the body must be one JSON object, with nothing after it"},
		{"no model", `{"messages":[{"role":"user","content":"hi"}]}`, 400, "model", "model is required: the name of one of GET /v1/models"},
		{"model not a string", `{"model":7,"messages":[{"role":"user","content":"hi"}]}`, 400, "model", "model must be a string: the name of one of GET /v1/models"},
		{"model twice", `{"model":"qwen","model":"qwen","messages":[{"role":"user","content":"hi"}]}`, 400, "model", "model appears more than once"},
		{"no messages", `{"model":"qwen"}`, 400, "messages", "messages is required"},
		{"messages null", `{"model":"qwen","messages":null}`, 400, "messages", "messages must be an array of message objects"},
		{"messages empty", `{"model":"qwen","messages":[]}`, 400, "messages", "messages must not be empty"},
		{"message not an object", `{"model":"qwen","messages":["hi"]}`, 400, "messages[0]", "messages[0] must be an object"},
		{"only the host's replies", `{"model":"qwen","messages":[{"role":"assistant","content":"` + waking.Text + `"},{"role":"assistant","content":"` + waking.Text + `"}]}`,
			400, "messages", "messages holds only the host's own status replies, which never reach a model: there is nothing to send"},
		{"message without a role", `{"model":"qwen","messages":[{"role":"user","content":"a"},{"content":"hi"}]}`, 400, "messages[1].role", "messages[1].role is required"},
		{"stream not a bool", `{"model":"qwen","stream":"yes","messages":[{"role":"user","content":"hi"}]}`, 400, "stream", "stream must be true or false"},
		{"n zero", `{"model":"qwen","n":0,"messages":[{"role":"user","content":"hi"}]}`, 400, "n", "n must be an integer from 1 to 128"},
		{"n over 128", `{"model":"qwen","n":129,"messages":[{"role":"user","content":"hi"}]}`, 400, "n", "n must be an integer from 1 to 128"},
		{"n not an integer", `{"model":"qwen","n":1.5,"messages":[{"role":"user","content":"hi"}]}`, 400, "n", "n must be an integer from 1 to 128"},
		{"n a string", `{"model":"qwen","n":"3","messages":[{"role":"user","content":"hi"}]}`, 400, "n", "n must be an integer from 1 to 128"},
		{"n twice", `{"model":"qwen","n":2,"n":3,"messages":[{"role":"user","content":"hi"}]}`, 400, "n", "n appears more than once"},
		{"unknown model", `{"model":"gpt-4o","messages":[{"role":"user","content":"hi"}]}`, 404, "model", "the model gpt-4o does not exist; GET /v1/models lists the models"},
		{"unknown model, not a name", `{"model":"http://x/y z","messages":[{"role":"user","content":"hi"}]}`, 404, "model", "the model does not exist; GET /v1/models lists the models"},
		{"unknown model, a URL", `{"model":"https://evil.example/qwen","messages":[{"role":"user","content":"hi"}]}`, 404, "model", "the model does not exist; GET /v1/models lists the models"},
		{"unknown model, too long", `{"model":"` + strings.Repeat("q", 129) + `","messages":[{"role":"user","content":"hi"}]}`, 404, "model", "the model does not exist; GET /v1/models lists the models"},
		{"unknown model, a served model's own name", `{"model":"Qwen/Qwen2.5-7B-Instruct","messages":[{"role":"user","content":"hi"}]}`, 404, "model", "the model Qwen/Qwen2.5-7B-Instruct does not exist; GET /v1/models lists the models"},
		{"unknown model, with a tag", `{"model":"llama3:8b","messages":[{"role":"user","content":"hi"}]}`, 404, "model", "the model llama3:8b does not exist; GET /v1/models lists the models"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := newDoor(t, nil)
			resp := d.post(tt.body)
			got := readBody(t, resp)
			if resp.StatusCode != tt.status {
				t.Errorf("status %d, want %d: %s", resp.StatusCode, tt.status, got)
			}
			var param any = nil
			if tt.param != "" {
				param = tt.param
			}
			want := map[string]any{"error": map[string]any{"message": tt.message, "type": "invalid_request_error", "param": param,
				"code": map[bool]any{true: "model_not_found", false: nil}[tt.status == 404]}}
			if diff := cmp.Diff(want, decode(t, got)); diff != "" {
				t.Errorf("body (-want +got):\n%s", diff)
			}
			if s := resp.Header.Get("X-Wake-State"); s != "unknown" {
				t.Errorf("X-Wake-State %q, want unknown", s)
			}
			if n := len(d.model.sent()); n != 0 {
				t.Errorf("%d requests reached the model", n)
			}
			if n := len(d.coord.notReadyCalls()); n != 0 {
				t.Errorf("%d turns reached the machine", n)
			}
		})
	}
}

// Every field the client sent goes to the model byte for byte, except
// model, which becomes the provider's model.
func TestCompletionsForwardsTheBodyUntouched(t *testing.T) {
	d := newDoor(t, nil)
	body := `{ "temperature" : 0.25, "model":"qwen",` + "\n" +
		`"messages":[{"role":"system","content":"be brief"},{"role":"user","content":[{"type":"text","text":"hi"}],"name":"ann"}],` +
		`"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object"}}}],"tool_choice":"auto",` +
		`"response_format":{"type":"json_object"},"stop":["\n\n"],"max_tokens":12,"x_vendor":{"a":[1,2.50]} }`

	resp := d.post(body)

	if resp.StatusCode != 200 {
		t.Fatalf("status %d: %s", resp.StatusCode, readBody(t, resp))
	}
	want := strings.Replace(body, `"model":"qwen"`, `"model":"qwen2.5"`, 1)
	if diff := cmp.Diff([]string{want}, d.model.sent()); diff != "" {
		t.Errorf("sent (-want +got):\n%s", diff)
	}
}

// A ready model's non-streaming answer is relayed as it came.
func TestCompletionsRelaysAnAnswer(t *testing.T) {
	d := newDoor(t, nil)
	const answerJSON = `{"id":"chatcmpl-1","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"Hi."},"finish_reason":"stop"}]}`
	d.model.stream = answer("application/json; charset=utf-8", answerJSON)

	resp := d.post(`{"model":"qwen","messages":[{"role":"user","content":"hi"}]}`)

	if got := readBody(t, resp); resp.StatusCode != 200 || got != answerJSON {
		t.Errorf("answer %d %q, want 200 %q", resp.StatusCode, got, answerJSON)
	}
	for h, want := range map[string]string{"Content-Type": "application/json; charset=utf-8", "X-Wake-State": "ready"} {
		if got := resp.Header.Get(h); got != want {
			t.Errorf("%s %q, want %q", h, got, want)
		}
	}
}

// A not-ready model gets the machine's decision as a chat.completion, or a
// complete chunk sequence: the same id in every chunk, the role first,
// the text, finish_reason stop, usage when asked, [DONE].
func TestCompletionsNotReadyReply(t *testing.T) {
	text := waking.Text
	// chunk is one event of the reply's stream, with one choice.
	chunk := func(index int, delta, finish string) string {
		return `data: {"id":"chatcmpl-wake-test","object":"chat.completion.chunk","created":1796115600,"model":"qwen","choices":[{"index":` +
			strconv.Itoa(index) + `,"delta":` + delta + `,"logprobs":null,"finish_reason":` + finish + `}]}` + "\n\n"
	}
	choice := func(index int) string {
		return `{"index":` + strconv.Itoa(index) + `,"message":{"role":"assistant","content":"` + text + `","refusal":null},"logprobs":null,"finish_reason":"stop"}`
	}
	role, content, stop := `{"role":"assistant","content":""}`, `{"content":"`+text+`"}`, `{}`
	tests := []struct {
		name string
		body string
		want string
	}{
		{
			name: "non-streaming",
			body: `{"model":"qwen","messages":[{"role":"user","content":"hi"}]}`,
			want: `{"id":"chatcmpl-wake-test","object":"chat.completion","created":1796115600,"model":"qwen","choices":[{"index":0,"message":{"role":"assistant","content":"` + text + `","refusal":null},"logprobs":null,"finish_reason":"stop"}],"usage":{"prompt_tokens":0,"completion_tokens":0,"total_tokens":0}}` + "\n",
		},
		{
			name: "streaming",
			body: `{"model":"qwen","stream":true,"messages":[{"role":"user","content":"hi"}]}`,
			want: `data: {"id":"chatcmpl-wake-test","object":"chat.completion.chunk","created":1796115600,"model":"qwen","choices":[{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}]}` + "\n\n" +
				`data: {"id":"chatcmpl-wake-test","object":"chat.completion.chunk","created":1796115600,"model":"qwen","choices":[{"index":0,"delta":{"content":"` + text + `"},"logprobs":null,"finish_reason":null}]}` + "\n\n" +
				`data: {"id":"chatcmpl-wake-test","object":"chat.completion.chunk","created":1796115600,"model":"qwen","choices":[{"index":0,"delta":{},"logprobs":null,"finish_reason":"stop"}]}` + "\n\n" +
				"data: [DONE]\n\n",
		},
		{
			name: "streaming with usage",
			body: `{"model":"qwen","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"hi"}]}`,
			want: `data: {"id":"chatcmpl-wake-test","object":"chat.completion.chunk","created":1796115600,"model":"qwen","choices":[{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}]}` + "\n\n" +
				`data: {"id":"chatcmpl-wake-test","object":"chat.completion.chunk","created":1796115600,"model":"qwen","choices":[{"index":0,"delta":{"content":"` + text + `"},"logprobs":null,"finish_reason":null}]}` + "\n\n" +
				`data: {"id":"chatcmpl-wake-test","object":"chat.completion.chunk","created":1796115600,"model":"qwen","choices":[{"index":0,"delta":{},"logprobs":null,"finish_reason":"stop"}]}` + "\n\n" +
				`data: {"id":"chatcmpl-wake-test","object":"chat.completion.chunk","created":1796115600,"model":"qwen","choices":[],"usage":{"prompt_tokens":0,"completion_tokens":0,"total_tokens":0}}` + "\n\n" +
				"data: [DONE]\n\n",
		},
		{
			// n asks for that many choices: each is the reply.
			name: "non-streaming, n 3",
			body: `{"model":"qwen","n":3,"messages":[{"role":"user","content":"hi"}]}`,
			want: `{"id":"chatcmpl-wake-test","object":"chat.completion","created":1796115600,"model":"qwen","choices":[` + choice(0) + "," + choice(1) + "," + choice(2) +
				`],"usage":{"prompt_tokens":0,"completion_tokens":0,"total_tokens":0}}` + "\n",
		},
		{
			name: "non-streaming, n null",
			body: `{"model":"qwen","n":null,"messages":[{"role":"user","content":"hi"}]}`,
			want: `{"id":"chatcmpl-wake-test","object":"chat.completion","created":1796115600,"model":"qwen","choices":[` + choice(0) +
				`],"usage":{"prompt_tokens":0,"completion_tokens":0,"total_tokens":0}}` + "\n",
		},
		{
			// One choice a chunk, as OpenAI streams n: each step for every
			// choice in turn.
			name: "streaming, n 2",
			body: `{"model":"qwen","stream":true,"n":2,"messages":[{"role":"user","content":"hi"}]}`,
			want: chunk(0, role, "null") + chunk(1, role, "null") + chunk(0, content, "null") + chunk(1, content, "null") +
				chunk(0, stop, `"stop"`) + chunk(1, stop, `"stop"`) + "data: [DONE]\n\n",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := newDoor(t, func(c *openai.Config, _ *turn.Config) { c.Clock = fixedClock{created} })
			d.model.stream = fails(asleep())

			resp := d.post(tt.body)

			if diff := cmp.Diff(tt.want, readBody(t, resp)); diff != "" {
				t.Errorf("body (-want +got):\n%s", diff)
			}
			if resp.StatusCode != 200 || resp.Header.Get("X-Wake-State") != "waking" {
				t.Errorf("status %d X-Wake-State %q, want 200 waking", resp.StatusCode, resp.Header.Get("X-Wake-State"))
			}
			if diff := cmp.Diff([]string{"qwen EXITED FOUND"}, d.coord.notReadyCalls()); diff != "" {
				t.Errorf("NotReady calls (-want +got):\n%s", diff)
			}
		})
	}
}

// Failures are the OpenAI error shape with their status; the ones a retry
// cannot help (or must not make) say x-should-retry: false.
func TestCompletionsFailures(t *testing.T) {
	tests := []struct {
		name    string
		err     error
		status  int
		body    string
		noRetry bool
		line    string // the one log line: its level and message
	}{
		{
			name:    "config error",
			err:     &resolve.ConfigError{Provider: "qwen", Reason: "the API key variable QWEN_API_KEY is not set"},
			status:  502,
			body:    `{"error":{"message":"the model provider is not usable: its configuration is incomplete (the host's log says why)","type":"api_error","param":null,"code":"provider_failed"}}`,
			noRetry: true,
			line:    "ERROR openai turn failed",
		},
		{
			name:   "model answered 500",
			err:    &resolve.ProviderError{Provider: "qwen", Status: 500, Err: &pluginapi.CompletionError{Status: 500, Message: "HTTP 500"}},
			status: 502,
			body:   `{"error":{"message":"the model provider failed: the model answered HTTP 500","type":"api_error","param":null,"code":"provider_failed"}}`,
			line:   "ERROR openai turn failed",
		},
		{
			name:    "aborted: the model may have it",
			err:     &resolve.ProviderError{Provider: "qwen", Aborted: true, Err: &pluginapi.CompletionError{Aborted: true, Message: "timed out"}},
			status:  502,
			body:    `{"error":{"message":"the model provider failed: the completion timed out","type":"api_error","param":null,"code":"provider_failed"}}`,
			noRetry: true,
			line:    "ERROR openai turn failed",
		},
		{
			name: "model's 400 relayed, scrubbed",
			err: &resolve.ProviderError{Provider: "qwen", Status: 400, Err: &pluginapi.CompletionError{Status: 400, Message: "HTTP 400: too long",
				Body: []byte(`{"error":{"message":"This model's maximum context length is 32768 tokens; see https://pod-8000.proxy.runpod.net/docs <b>now</b>","type":"BadRequestError","param":"messages","code":400}}`)}},
			status:  400,
			body:    `{"error":{"message":"This model's maximum context length is 32768 tokens; see [url] bnow/b","type":"BadRequestError","param":"messages","code":null}}`,
			noRetry: true,
			line:    "INFO openai request rejected by the model",
		},
		{
			name: "model's 422 relayed, its error at the top of the body (vLLM's older shape)",
			err: &resolve.ProviderError{Provider: "qwen", Status: 422, Err: &pluginapi.CompletionError{Status: 422, Message: "HTTP 422",
				Body: []byte(`{"object":"error","message":"temperature must be at most 2","type":"invalid_request","param":"temperature","code":"bad_value"}`)}},
			status:  422,
			body:    `{"error":{"message":"temperature must be at most 2","type":"invalid_request","param":"temperature","code":"bad_value"}}`,
			noRetry: true,
			line:    "INFO openai request rejected by the model",
		},
		{
			name: "model's 413 relayed",
			err: &resolve.ProviderError{Provider: "qwen", Status: 413, Err: &pluginapi.CompletionError{Status: 413, Message: "HTTP 413",
				Body: []byte(`{"error":{"message":"request too large","type":"invalid_request_error"}}`)}},
			status:  413,
			body:    `{"error":{"message":"request too large","type":"invalid_request_error","param":null,"code":null}}`,
			noRetry: true,
			line:    "INFO openai request rejected by the model",
		},
		{
			name:   "model's 429, a retry may help",
			err:    &resolve.ProviderError{Provider: "qwen", Status: 429, Err: &pluginapi.CompletionError{Status: 429, Message: "HTTP 429"}},
			status: 429,
			body:   `{"error":{"message":"the model is rate limited; try again later","type":"rate_limit_error","param":null,"code":null}}`,
			line:   "ERROR openai turn failed",
		},
		{
			name:    "a not-ready error that is not retryable",
			err:     &resolve.NotReadyError{Pod: "qwen", Retryable: false},
			status:  502,
			body:    `{"error":{"message":"the model provider failed","type":"api_error","param":null,"code":"provider_failed"}}`,
			noRetry: true,
			line:    "ERROR openai turn failed",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			logs := &logRecorder{}
			d := newDoor(t, func(c *openai.Config, _ *turn.Config) { c.Logger = slog.New(logs) })
			d.model.stream = fails(tt.err)

			resp := d.post(`{"model":"qwen","messages":[{"role":"user","content":"hi"}]}`)

			if diff := cmp.Diff(tt.body+"\n", readBody(t, resp)); diff != "" {
				t.Errorf("body (-want +got):\n%s", diff)
			}
			if resp.StatusCode != tt.status {
				t.Errorf("status %d, want %d", resp.StatusCode, tt.status)
			}
			if got := resp.Header.Get("X-Should-Retry") == "false"; got != tt.noRetry {
				t.Errorf("x-should-retry false: %v, want %v", got, tt.noRetry)
			}
			if s := resp.Header.Get("X-Wake-State"); s != "asleep" {
				t.Errorf("X-Wake-State %q, want the pod's recorded state, asleep", s)
			}
			if n := len(d.coord.notReadyCalls()); n != 0 {
				t.Errorf("a failure reached the machine %d times: it must never wake", n)
			}
			// A model's refusal of the request is the client's mistake, not
			// an operator's alert.
			if diff := cmp.Diff([]string{tt.line}, logs.lines()); diff != "" {
				t.Errorf("log lines (-want +got):\n%s", diff)
			}
		})
	}
}

// A 200 whose body breaks off: a clean 502 for a non-streaming request
// (never retried: the model had the payload), an error event in a stream.
func TestCompletionsBodyBreaksOff(t *testing.T) {
	broken := func(context.Context, []byte) (*pluginapi.StreamResponse, error) {
		return &pluginapi.StreamResponse{Status: 200, Header: http.Header{"Content-Type": {"text/event-stream"}},
			Body: &failingBody{first: "data: {\"x\":1}\n\n", err: &pluginapi.CompletionError{Status: 200, Message: "response body failed: ECONNRESET"}}}, nil
	}
	d := newDoor(t, nil)
	d.model.stream = broken
	resp := d.post(`{"model":"qwen","messages":[{"role":"user","content":"hi"}]}`)
	if got := readBody(t, resp); resp.StatusCode != 502 || resp.Header.Get("X-Should-Retry") != "false" ||
		got != `{"error":{"message":"the model provider failed: the answer broke off or could not be read","type":"api_error","param":null,"code":"provider_failed"}}`+"\n" {
		t.Errorf("non-streaming: %d %q %s", resp.StatusCode, resp.Header.Get("X-Should-Retry"), got)
	}

	resp = d.post(`{"model":"qwen","stream":true,"messages":[{"role":"user","content":"hi"}]}`)
	want := "data: {\"x\":1}\n\n" + `data: {"error":{"message":"the model provider failed: the answer broke off or could not be read","type":"api_error","param":null,"code":"provider_failed"}}` + "\n\n"
	if diff := cmp.Diff(want, readBody(t, resp)); diff != "" || resp.StatusCode != 200 {
		t.Errorf("streaming: status %d, body (-want +got):\n%s", resp.StatusCode, diff)
	}
}

type failingBody struct {
	first string
	err   error
}

func (b *failingBody) Read(p []byte) (int, error) {
	if b.first != "" {
		n := copy(p, b.first)
		b.first = b.first[n:]
		return n, nil
	}
	return 0, b.err
}

func (b *failingBody) Close() error { return nil }

// fixedClock always says t.
type fixedClock struct{ t time.Time }

func (c fixedClock) Now() time.Time                         { return c.t }
func (c fixedClock) After(d time.Duration) <-chan time.Time { return time.After(d) }

// readSpy is a request body that records whether anything read it.
type readSpy struct {
	io.Reader
	read bool
}

func (r *readSpy) Read(p []byte) (int, error) {
	r.read = true
	return r.Reader.Read(p)
}

// A completion whose Content-Type is not application/json is a 415 before
// the door does anything: its body is not read, and it reaches neither a
// model nor the machine, so a cross-site page's text/plain or form POST
// (which a browser sends without a preflight) wakes nothing.
func TestCompletionsRefusesWhatIsNotJSON(t *testing.T) {
	const body = `{"model":"qwen","messages":[{"role":"user","content":"hi"}]}`
	tests := []struct {
		contentType string
		refused     bool
	}{
		{"", true},
		{"text/plain", true},
		{"text/plain;charset=UTF-8", true},
		{"application/x-www-form-urlencoded", true},
		{"multipart/form-data; boundary=x", true},
		{"application/vnd.api+json", true},
		{"application/json, text/plain", true},
		{"application/json", false},
		{"application/json; charset=utf-8", false},
		{"Application/JSON", false},
	}
	for _, tt := range tests {
		t.Run(tt.contentType, func(t *testing.T) {
			d := newDoor(t, nil)
			spy := &readSpy{Reader: strings.NewReader(body)}
			r := httptest.NewRequest(http.MethodPost, "/v1/chat/completions", spy)
			if tt.contentType != "" {
				r.Header.Set("Content-Type", tt.contentType)
			}
			w := do(d.Handler(), r)
			if !tt.refused {
				if w.Code != http.StatusOK || len(d.model.sent()) != 1 {
					t.Errorf("status %d, %d model calls; want the model's 200: %s", w.Code, len(d.model.sent()), w.Body)
				}
				return
			}
			want := `{"error":{"message":"Content-Type must be application/json","type":"invalid_request_error","param":null,"code":"unsupported_media_type"}}` + "\n"
			if diff := cmp.Diff(want, w.Body.String()); diff != "" {
				t.Errorf("body (-want +got):\n%s", diff)
			}
			if w.Code != http.StatusUnsupportedMediaType || w.Header().Get("X-Wake-State") != "unknown" {
				t.Errorf("status %d (X-Wake-State %q), want 415, unknown", w.Code, w.Header().Get("X-Wake-State"))
			}
			if spy.read {
				t.Error("the body was read")
			}
			if n, m := len(d.model.sent()), len(d.coord.notReadyCalls()); n != 0 || m != 0 {
				t.Errorf("%d model calls and %d machine calls, want none", n, m)
			}
		})
	}
}
