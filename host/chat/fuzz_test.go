package chat

import (
	"errors"
	"net/http"
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzDecodeRequest feeds the /api/chat body decoder arbitrary bytes: it
// never panics; what it accepts is valid by every rule of the contract; what
// it rejects is a 400 whose message is short, valid UTF-8 and never the
// message itself.
func FuzzDecodeRequest(f *testing.F) {
	for _, seed := range []string{
		`{"message":"hello"}`,
		`{"message":"hello","sessionId":"s-1_A"}`,
		`{"message":"hello","sessionId":"s1","wakeMode":"wait"}`,
		`{"message":"hello","sessionId":"s1","wakeMode":"resume","pendingWake":"k1"}`,
		`{"message":"hello","sessionId":"s1","wakeMode":"resume","pendingWake":{"key":"k1","pod":"qwen"}}`,
		`{"message":""}`,
		`{"message":"  "}`,
		`{"message":1}`,
		`{"message":"hi","extra":true}`,
		`{"message":"hi"} {"message":"again"}`,
		`[]`,
		`null`,
		`{"message":"hi","sessionId":"../etc"}`,
		`{"message":"hi","wakeMode":"later"}`,
		``,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		req, err := decodeRequest(body)
		if err != nil {
			var re *requestError
			if !errors.As(err, &re) || re.Status != http.StatusBadRequest {
				t.Fatalf("error %v is not a 400 requestError", err)
			}
			if len(re.Msg) > 200 || !utf8.ValidString(re.Msg) || re.Msg == "" {
				t.Fatalf("bad error message %q", re.Msg)
			}
			return
		}
		if strings.TrimSpace(req.Message) == "" {
			t.Fatal("accepted a blank message")
		}
		if req.SessionID != "" && !sessionIDPattern.MatchString(req.SessionID) {
			t.Fatalf("accepted session id %q", req.SessionID)
		}
		switch req.WakeMode {
		case ModeLegacy, ModeWait:
			if req.PendingWake != "" {
				t.Fatal("accepted pendingWake without resume")
			}
		case ModeResume:
			if req.PendingWake == "" || req.SessionID == "" {
				t.Fatal("accepted resume without its key or session")
			}
		default:
			t.Fatalf("accepted wakeMode %q", req.WakeMode)
		}
	})
}
