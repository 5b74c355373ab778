package chat_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/wakeonchat/wakeonchat/host/agent"
	"github.com/wakeonchat/wakeonchat/host/chat"
	"github.com/wakeonchat/wakeonchat/host/turn"
)

// testMaxBody is the body limit of the validation tests.
const testMaxBody = 512

// TestChatRequestRejected sends every malformed request to a door whose
// model would answer: each gets its exact 4xx and body, and none reaches
// the turn service, the model or the history. A well-formed resume is
// handed to the turn service with its key, whichever form it has, and its
// refusal is the 409 naming it.
func TestChatRequestRejected(t *testing.T) {
	t.Parallel()

	const jsonCT = "application/json"
	tests := []struct {
		name        string
		method      string
		contentType string
		body        string
		wantStatus  int
		wantBody    string
		wantAllow   string
	}{
		{"GET", http.MethodGet, "", "",
			405, `{"error":"method GET not allowed; use POST"}` + "\n", "POST"},
		{"PUT", http.MethodPut, jsonCT, `{"message":"hi"}`,
			405, `{"error":"method PUT not allowed; use POST"}` + "\n", "POST"},
		{"no Content-Type", http.MethodPost, "", `{"message":"hi"}`,
			415, `{"error":"Content-Type must be application/json"}` + "\n", ""},
		{"text/plain", http.MethodPost, "text/plain", `{"message":"hi"}`,
			415, `{"error":"Content-Type must be application/json"}` + "\n", ""},
		{"unparsable Content-Type", http.MethodPost, "application/json; charset", `{"message":"hi"}`,
			415, `{"error":"Content-Type must be application/json"}` + "\n", ""},
		{"body over the limit", http.MethodPost, jsonCT, `{"message":"` + strings.Repeat("x", testMaxBody) + `"}`,
			413, `{"error":"request body is larger than 512 bytes"}` + "\n", ""},
		{"malformed JSON", http.MethodPost, jsonCT, `{"message" "hi"}`,
			400, `{"error":"request body is not valid JSON (at byte 12)"}` + "\n", ""},
		{"truncated JSON", http.MethodPost, jsonCT, `{"message":"hi"`,
			400, `{"error":"request body is not valid JSON (truncated)"}` + "\n", ""},
		{"empty body", http.MethodPost, jsonCT, "",
			400, `{"error":"request body is empty; want a JSON object"}` + "\n", ""},
		{"a JSON array", http.MethodPost, jsonCT, `[{"message":"hi"}]`,
			400, `{"error":"request body must be a JSON object"}` + "\n", ""},
		{"a JSON string", http.MethodPost, jsonCT, `"hi"`,
			400, `{"error":"request body must be a JSON object"}` + "\n", ""},
		{"a second object", http.MethodPost, jsonCT, `{"message":"hi"}{"message":"again"}`,
			400, `{"error":"request body must be a single JSON object"}` + "\n", ""},
		{"trailing garbage", http.MethodPost, jsonCT, `{"message":"hi"} x`,
			400, `{"error":"request body must be a single JSON object"}` + "\n", ""},
		{"unknown field", http.MethodPost, jsonCT, `{"message":"hi","stream":true}`,
			400, `{"error":"unknown field \"stream\""}` + "\n", ""},
		{"a long unknown field is not echoed", http.MethodPost, jsonCT, `{"message":"hi","` + strings.Repeat("f", 100) + `":1}`,
			400, `{"error":"unknown field (the fields are message, sessionId, wakeMode, pendingWake)"}` + "\n", ""},
		// Field names are exact: encoding/json alone would take these, and a
		// misspelt sessionID would silently start a new session.
		{"sessionID", http.MethodPost, jsonCT, `{"message":"hi","sessionID":"s1"}`,
			400, `{"error":"unknown field \"sessionID\" (did you mean \"sessionId\"? field names are case-sensitive)"}` + "\n", ""},
		{"SESSIONID", http.MethodPost, jsonCT, `{"message":"hi","SESSIONID":"s1"}`,
			400, `{"error":"unknown field \"SESSIONID\" (did you mean \"sessionId\"? field names are case-sensitive)"}` + "\n", ""},
		{"Message", http.MethodPost, jsonCT, `{"Message":"hi"}`,
			400, `{"error":"unknown field \"Message\" (did you mean \"message\"? field names are case-sensitive)"}` + "\n", ""},
		{"Message beside message", http.MethodPost, jsonCT, `{"message":"hi","Message":"again"}`,
			400, `{"error":"unknown field \"Message\" (did you mean \"message\"? field names are case-sensitive)"}` + "\n", ""},
		{"wakemode", http.MethodPost, jsonCT, `{"message":"hi","wakemode":"wait"}`,
			400, `{"error":"unknown field \"wakemode\" (did you mean \"wakeMode\"? field names are case-sensitive)"}` + "\n", ""},
		// U+017F (long s) and U+212A (Kelvin) fold to s and k in encoding/json.
		{"a Unicode fold of message", http.MethodPost, jsonCT, `{"meſſage":"hi"}`,
			400, `{"error":"unknown field (the fields are message, sessionId, wakeMode, pendingWake)"}` + "\n", ""},
		{"a Unicode fold of wakeMode", http.MethodPost, jsonCT, `{"message":"hi","wa\u212aeMode":"wait"}`,
			400, `{"error":"unknown field (the fields are message, sessionId, wakeMode, pendingWake)"}` + "\n", ""},
		{"message twice", http.MethodPost, jsonCT, `{"message":"hi","message":"again"}`,
			400, `{"error":"duplicate field \"message\""}` + "\n", ""},
		{"message twice, once escaped", http.MethodPost, jsonCT, `{"message":"hi","mess\u0061ge":"again"}`,
			400, `{"error":"duplicate field \"message\""}` + "\n", ""},
		{"sessionId twice", http.MethodPost, jsonCT, `{"message":"hi","sessionId":"s1","sessionId":"s2"}`,
			400, `{"error":"duplicate field \"sessionId\""}` + "\n", ""},
		{"wakeMode twice, once null", http.MethodPost, jsonCT, `{"message":"hi","wakeMode":"wait","wakeMode":null}`,
			400, `{"error":"duplicate field \"wakeMode\""}` + "\n", ""},
		{"pendingWake twice", http.MethodPost, jsonCT, `{"message":"hi","sessionId":"s1","wakeMode":"resume","pendingWake":"k1","pendingWake":"k2"}`,
			400, `{"error":"duplicate field \"pendingWake\""}` + "\n", ""},
		{"pendingWake object with Key", http.MethodPost, jsonCT, `{"message":"hi","sessionId":"s1","wakeMode":"resume","pendingWake":{"Key":"k1"}}`,
			400, `{"error":"unknown field \"pendingWake.Key\" (did you mean \"pendingWake.key\"? field names are case-sensitive)"}` + "\n", ""},
		{"pendingWake object with key twice", http.MethodPost, jsonCT, `{"message":"hi","sessionId":"s1","wakeMode":"resume","pendingWake":{"key":"k1","key":"k2"}}`,
			400, `{"error":"duplicate field \"pendingWake.key\""}` + "\n", ""},
		{"pendingWake object with an unknown field", http.MethodPost, jsonCT, `{"message":"hi","sessionId":"s1","wakeMode":"resume","pendingWake":{"key":"k1","extra":1}}`,
			400, `{"error":"unknown field \"pendingWake.extra\""}` + "\n", ""},
		{"pendingWake object with a long unknown field", http.MethodPost, jsonCT, `{"message":"hi","sessionId":"s1","wakeMode":"resume","pendingWake":{"key":"k1","a b":1}}`,
			400, `{"error":"unknown field (the fields are pendingWake.key, pendingWake.pod, pendingWake.provider, pendingWake.wakeRequestedAt, pendingWake.state, pendingWake.events)"}` + "\n", ""},
		{"message missing", http.MethodPost, jsonCT, `{"sessionId":"s1"}`,
			400, `{"error":"message is required"}` + "\n", ""},
		{"message null", http.MethodPost, jsonCT, `{"message":null}`,
			400, `{"error":"message is required"}` + "\n", ""},
		{"message empty", http.MethodPost, jsonCT, `{"message":""}`,
			400, `{"error":"message must not be empty"}` + "\n", ""},
		{"message blank", http.MethodPost, jsonCT, `{"message":"   "}`,
			400, `{"error":"message must not be empty"}` + "\n", ""},
		{"message whitespace", http.MethodPost, jsonCT, `{"message":"\n\t "}`,
			400, `{"error":"message must not be empty"}` + "\n", ""},
		{"message a number", http.MethodPost, jsonCT, `{"message":42}`,
			400, `{"error":"message must be a string"}` + "\n", ""},
		{"message an object", http.MethodPost, jsonCT, `{"message":{"text":"hi"}}`,
			400, `{"error":"message must be a string"}` + "\n", ""},
		{"sessionId with a space", http.MethodPost, jsonCT, `{"message":"hi","sessionId":"a b"}`,
			400, `{"error":"sessionId must be 1 to 128 letters, digits, '-' or '_'"}` + "\n", ""},
		{"sessionId of 129 characters", http.MethodPost, jsonCT, `{"message":"hi","sessionId":"` + strings.Repeat("s", 129) + `"}`,
			400, `{"error":"sessionId must be 1 to 128 letters, digits, '-' or '_'"}` + "\n", ""},
		{"sessionId a path", http.MethodPost, jsonCT, `{"message":"hi","sessionId":"../x"}`,
			400, `{"error":"sessionId must be 1 to 128 letters, digits, '-' or '_'"}` + "\n", ""},
		{"sessionId empty", http.MethodPost, jsonCT, `{"message":"hi","sessionId":""}`,
			400, `{"error":"sessionId must be 1 to 128 letters, digits, '-' or '_'"}` + "\n", ""},
		{"sessionId a number", http.MethodPost, jsonCT, `{"message":"hi","sessionId":7}`,
			400, `{"error":"sessionId must be a string"}` + "\n", ""},
		{"unknown wakeMode", http.MethodPost, jsonCT, `{"message":"hi","wakeMode":"later"}`,
			400, `{"error":"wakeMode must be \"wait\" or \"resume\""}` + "\n", ""},
		{"wakeMode in capitals", http.MethodPost, jsonCT, `{"message":"hi","wakeMode":"WAIT"}`,
			400, `{"error":"wakeMode must be \"wait\" or \"resume\""}` + "\n", ""},
		{"resume without pendingWake", http.MethodPost, jsonCT, `{"message":"hi","sessionId":"s1","wakeMode":"resume"}`,
			400, `{"error":"pendingWake is required with wakeMode \"resume\""}` + "\n", ""},
		{"resume with a null pendingWake", http.MethodPost, jsonCT, `{"message":"hi","sessionId":"s1","wakeMode":"resume","pendingWake":null}`,
			400, `{"error":"pendingWake is required with wakeMode \"resume\""}` + "\n", ""},
		{"resume without sessionId", http.MethodPost, jsonCT, `{"message":"hi","wakeMode":"resume","pendingWake":"k1"}`,
			400, `{"error":"sessionId is required with wakeMode \"resume\""}` + "\n", ""},
		{"pendingWake without wakeMode", http.MethodPost, jsonCT, `{"message":"hi","sessionId":"s1","pendingWake":"k1"}`,
			400, `{"error":"pendingWake is only valid with wakeMode \"resume\""}` + "\n", ""},
		{"pendingWake with wait", http.MethodPost, jsonCT, `{"message":"hi","sessionId":"s1","wakeMode":"wait","pendingWake":"k1"}`,
			400, `{"error":"pendingWake is only valid with wakeMode \"resume\""}` + "\n", ""},
		{"pendingWake a number", http.MethodPost, jsonCT, `{"message":"hi","sessionId":"s1","wakeMode":"resume","pendingWake":5}`,
			400, `{"error":"pendingWake must be the key string (or the pendingWake object)"}` + "\n", ""},
		{"pendingWake an empty key", http.MethodPost, jsonCT, `{"message":"hi","sessionId":"s1","wakeMode":"resume","pendingWake":""}`,
			400, `{"error":"pendingWake must be the key of a pending wake"}` + "\n", ""},
		{"pendingWake a path", http.MethodPost, jsonCT, `{"message":"hi","sessionId":"s1","wakeMode":"resume","pendingWake":"../k"}`,
			400, `{"error":"pendingWake must be the key of a pending wake"}` + "\n", ""},
		{"pendingWake an object without key", http.MethodPost, jsonCT, `{"message":"hi","sessionId":"s1","wakeMode":"resume","pendingWake":{"pod":"qwen"}}`,
			400, `{"error":"pendingWake must be the key of a pending wake"}` + "\n", ""},
		// Well-formed resumes get past validation: the object form a wait
		// turn returned is accepted as it is, and the 409 says only that
		// this session has no such marker.
		{"pendingWake as the key", http.MethodPost, jsonCT, `{"message":"hi","sessionId":"s1","wakeMode":"resume","pendingWake":"k1"}`,
			409, `{"error":"no pending wake for this session"}` + "\n", ""},
		{"pendingWake as the object", http.MethodPost, jsonCT,
			`{"message":"hi","sessionId":"s1","wakeMode":"resume","pendingWake":{"key":"k1","pod":"qwen","provider":"a","wakeRequestedAt":"2026-09-09T12:26:25Z","state":"waking"}}`,
			409, `{"error":"no pending wake for this session"}` + "\n", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			d := newDoor(t, func(c *chat.Config) { c.MaxBody = testMaxBody })
			d.turns.resume = func(context.Context, string, string, func(string) bool, turn.Pinned[agent.Result]) (turn.Outcome[agent.Result], error) {
				return turn.Outcome[agent.Result]{}, turn.ErrNoPending
			}
			res := d.do(t, tt.method, "/api/chat", tt.contentType, tt.body)
			if res.Status != tt.wantStatus {
				t.Errorf("status %d, want %d", res.Status, tt.wantStatus)
			}
			if diff := cmp.Diff(tt.wantBody, res.Body); diff != "" {
				t.Errorf("body (-want +got):\n%s", diff)
			}
			if got := res.Header.Get("Allow"); got != tt.wantAllow {
				t.Errorf("Allow %q, want %q", got, tt.wantAllow)
			}
			if got := res.Header.Get("Content-Type"); got != "application/json" {
				t.Errorf("Content-Type %q, want application/json", got)
			}
			var wantCalls []string
			if tt.wantStatus == http.StatusConflict {
				wantCalls = []string{"Resume session=s1 key=k1"}
			}
			if diff := cmp.Diff(wantCalls, d.turns.made()); diff != "" {
				t.Errorf("turn service calls (-want +got):\n%s", diff)
			}
			if got := d.model.calls.Load(); got != 0 {
				t.Errorf("a rejected request ran the model: %d call(s)", got)
			}
			if got := d.history.turnsStored(); got != nil {
				t.Errorf("a rejected request stored %q", got)
			}
		})
	}
}

// TestChatRequestAccepted covers the edges that are valid: each request is
// one turn of the turn service that runs exactly one completion, and
// answers 200 with the session's id, the client's or a new one.
func TestChatRequestAccepted(t *testing.T) {
	t.Parallel()
	d := newDoor(t, func(c *chat.Config) { c.MaxBody = testMaxBody })

	exactly := `{"message":"` + strings.Repeat("x", testMaxBody-len(`{"message":""}`)) + `"}`
	if len(exactly) != testMaxBody {
		t.Fatalf("the limit body is %d bytes, want %d", len(exactly), testMaxBody)
	}
	long := strings.Repeat("s", 128)
	tests := []struct {
		name        string
		contentType string
		body        string
		wantSession string
	}{
		{"charset parameter", "application/json; charset=utf-8", `{"message":"hi","sessionId":"s1"}`, "s1"},
		{"body of exactly the limit", "application/json", exactly, "tok-1"},
		{"trailing whitespace", "application/json", "{\"message\":\"hi\",\"sessionId\":\"s2\"}\n\t ", "s2"},
		{"sessionId of 128 characters", "application/json", `{"message":"hi","sessionId":"` + long + `"}`, long},
		{"sessionId with - and _", "application/json", `{"message":"hi","sessionId":"A-z_09"}`, "A-z_09"},
		{"null wakeMode and pendingWake are the legacy flow", "application/json",
			`{"message":"hi","sessionId":"s3","wakeMode":null,"pendingWake":null}`, "s3"},
		{"no sessionId gets a new one", "application/json", `{"message":"hi"}`, "tok-2"},
		{"an escaped key is its name", "application/json", `{"mess\u0061ge":"hi","sessionId":"s4"}`, "s4"},
		{"a repeated key inside a value is no duplicate", "application/json", `{"message":"{\"message\":1,\"message\":2}","sessionId":"s5"}`, "s5"},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := d.do(t, http.MethodPost, "/api/chat", tt.contentType, tt.body)
			if res.Status != http.StatusOK {
				t.Fatalf("status %d, body %s; want 200", res.Status, res.Body)
			}
			if !strings.Contains(res.Body, `"sessionId":"`+tt.wantSession+`"`) {
				t.Errorf("body %s, want sessionId %q", res.Body, tt.wantSession)
			}
			if got, want := int(d.model.calls.Load()), i+1; got != want {
				t.Errorf("model calls %d, want %d", got, want)
			}
			if got, want := len(d.turns.made()), i+1; got != want {
				t.Errorf("%d turns of the turn service, want %d: %q", got, want, d.turns.made())
			}
		})
	}
}

// TestRoutes covers everything that is not a turn: none reaches the turn
// service or the model.
func TestRoutes(t *testing.T) {
	t.Parallel()
	plain := newDoor(t, nil)
	notReady := newDoor(t, func(c *chat.Config) {
		c.Ready = func() error { return errors.New("conductor plugin not running") }
	})
	ready := newDoor(t, func(c *chat.Config) { c.Ready = func() error { return nil } })

	tests := []struct {
		name       string
		srv        *door
		method     string
		path       string
		wantStatus int
		wantBody   string
		wantAllow  string
	}{
		{"unknown route", plain, http.MethodGet, "/api/nope", 404, `{"error":"no such endpoint: GET /api/nope; the API is POST /api/chat, GET /api/pods/{name}, GET /api/pods/{name}/events, GET /healthz and GET /readyz"}` + "\n", ""},
		// Not ServeMux's HTML redirect to the clean path: JSON like every answer.
		{"unclean path", plain, http.MethodPost, "/api//chat", 404, `{"error":"no such endpoint: POST /api//chat; the API is POST /api/chat, GET /api/pods/{name}, GET /api/pods/{name}/events, GET /healthz and GET /readyz"}` + "\n", ""},
		{"dot segments", plain, http.MethodGet, "/api/pods/../healthz", 404, `{"error":"no such endpoint: GET /api/pods/../healthz; the API is POST /api/chat, GET /api/pods/{name}, GET /api/pods/{name}/events, GET /healthz and GET /readyz"}` + "\n", ""},
		{"root", plain, http.MethodGet, "/", 404, `{"error":"no such endpoint: GET /; the API is POST /api/chat, GET /api/pods/{name}, GET /api/pods/{name}/events, GET /healthz and GET /readyz"}` + "\n", ""},
		// The host never offers a start: waking is the policy's alone.
		{"no start route", plain, http.MethodPost, "/api/pods/qwen/start", 404,
			`{"error":"no such endpoint: POST /api/pods/qwen/start; the API is POST /api/chat, GET /api/pods/{name}, GET /api/pods/{name}/events, GET /healthz and GET /readyz"}` + "\n", ""},
		{"healthz", plain, http.MethodGet, "/healthz", 200, `{"status":"ok"}` + "\n", ""},
		{"healthz POST", plain, http.MethodPost, "/healthz", 405, `{"error":"method POST not allowed; use GET"}` + "\n", "GET"},
		{"readyz without a check", plain, http.MethodGet, "/readyz", 200, `{"status":"ready"}` + "\n", ""},
		{"readyz ready", ready, http.MethodGet, "/readyz", 200, `{"status":"ready"}` + "\n", ""},
		{"readyz not ready", notReady, http.MethodGet, "/readyz", 503,
			`{"reason":"conductor plugin not running","status":"not ready"}` + "\n", ""},
		{"readyz DELETE", plain, http.MethodDelete, "/readyz", 405, `{"error":"method DELETE not allowed; use GET"}` + "\n", "GET"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := tt.srv.do(t, tt.method, tt.path, "", "")
			if res.Status != tt.wantStatus {
				t.Errorf("status %d, want %d", res.Status, tt.wantStatus)
			}
			if diff := cmp.Diff(tt.wantBody, res.Body); diff != "" {
				t.Errorf("body (-want +got):\n%s", diff)
			}
			if got := res.Header.Get("Allow"); got != tt.wantAllow {
				t.Errorf("Allow %q, want %q", got, tt.wantAllow)
			}
			if got := res.Header.Get("Content-Type"); got != "application/json" {
				t.Errorf("Content-Type %q, want application/json", got)
			}
		})
	}
	for _, d := range []*door{plain, notReady, ready} {
		if calls, n := d.turns.made(), d.model.calls.Load(); calls != nil || n != 0 {
			t.Errorf("routes reached the turn service (%q) and the model (%d calls)", calls, n)
		}
	}
}

// TestResponsesCarryNoURL: "No response ever carries a URL"
// (docs/http-contract.md, doc.go), even when the client puts one in the path
// or the body.
func TestResponsesCarryNoURL(t *testing.T) {
	t.Parallel()
	d := newDoor(t, nil)
	tests := []struct {
		name        string
		method      string
		path        string
		contentType string
		body        string
		wantStatus  int
	}{
		{"unknown route", http.MethodGet, "/http:%2F%2Fevil.example/x", "", "", 404},
		{"unknown pod", http.MethodGet, "/api/pods/http:%2F%2Fevil.example", "", "", 404},
		{"unknown field", http.MethodPost, "/api/chat", "application/json", `{"message":"hi","https://evil.example":1}`, 400},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := d.do(t, tt.method, tt.path, tt.contentType, tt.body)
			if res.Status != tt.wantStatus {
				t.Errorf("status %d, want %d", res.Status, tt.wantStatus)
			}
			if strings.Contains(res.Body, "://") {
				t.Errorf("the %d response reflects a URL from the request: %s", res.Status, res.Body)
			}
			if ct := res.Header.Get("Content-Type"); ct != "application/json" {
				t.Errorf("the %d response is not JSON: Content-Type %q, body %q", res.Status, ct, res.Body)
			}
		})
	}
	if got := d.model.calls.Load(); got != 0 {
		t.Errorf("%d completions, want 0", got)
	}
}

// TestMessageOverTheRequestLimit: a body within max_body_bytes whose
// message cannot fit in a completion request is a 413 naming the limit,
// before any model is asked. Invalid UTF-8 makes the message three times
// the body's bytes (each byte decodes to U+FFFD), so the body limit alone
// would not keep it under the plugin boundary.
func TestMessageOverTheRequestLimit(t *testing.T) {
	t.Parallel()
	model := &fakeModel{complete: echo}
	const requestBytes = 32 << 10
	ag := agent.New(agent.Config{
		Chain: []agent.Provider{{Name: "a", Model: model}}, History: &memHistory{},
		SystemPrompt: systemPrompt, HistoryMessages: 20, HistoryBytes: 256 << 10, RequestBytes: requestBytes,
	})
	limit := ag.MaxMessageBytes()
	d := newDoor(t, func(c *chat.Config) { c.Agent = ag; c.MaxBody = int64(limit) })

	invalid := `{"message":"` + strings.Repeat("\xff", limit/3+1) + `"}`
	tests := []struct {
		name       string
		body       string
		wantStatus int
		wantBody   string
	}{
		{"a body of exactly the body limit", `{"message":"` + strings.Repeat("x", limit-len(`{"message":""}`)) + `"}`, 200, ""},
		{"invalid UTF-8 that decodes to the limit or less", `{"message":"` + strings.Repeat("\xff", limit/3) + `"}`, 200, ""},
		{"invalid UTF-8 that decodes past the limit", invalid, 413,
			fmt.Sprintf(`{"error":"message is larger than %d bytes"}`, limit) + "\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if len(tt.body) > limit {
				t.Fatalf("the body is %d bytes, over the body limit %d", len(tt.body), limit)
			}
			before, turns := model.calls.Load(), len(d.turns.made())
			res := d.do(t, http.MethodPost, "/api/chat", "application/json", tt.body)
			if res.Status != tt.wantStatus {
				t.Errorf("status %d, want %d; body %.200s", res.Status, tt.wantStatus, res.Body)
			}
			if tt.wantBody != "" {
				if diff := cmp.Diff(tt.wantBody, res.Body); diff != "" {
					t.Errorf("body (-want +got):\n%s", diff)
				}
			}
			wantCalls := 0
			if tt.wantStatus == 200 {
				wantCalls = 1
			}
			if got := int(model.calls.Load() - before); got != wantCalls {
				t.Errorf("%d model call(s), want %d", got, wantCalls)
			}
			if got := len(d.turns.made()) - turns; got != wantCalls {
				t.Errorf("%d turn(s) of the turn service, want %d", got, wantCalls)
			}
		})
	}
}
