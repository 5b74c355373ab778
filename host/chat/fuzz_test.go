package chat

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzDecodeRequest feeds the /api/chat body decoder arbitrary bytes: it
// never panics; what it accepts is valid by every rule of the contract,
// its keys (and those of a pendingWake object) spelled exactly and each
// given once; what it rejects is a 400 whose message is short, valid UTF-8
// and never the message itself.
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
		`{"message":"hi","sessionID":"s1"}`,
		`{"Message":"hi"}`,
		`{"message":"hi","SESSIONID":"s1"}`,
		`{"meſſage":"hi"}`,
		`{"message":"hi","wa\u212aeMode":"wait"}`,
		`{"message":"hi","message":"again"}`,
		`{"message":"hi","mess\u0061ge":"again"}`,
		`{"message":"hi","sessionId":"s1","wakeMode":"resume","pendingWake":{"Key":"k1"}}`,
		`{"message":"hi","sessionId":"s1","wakeMode":"resume","pendingWake":{"key":"k1","key":"k2"}}`,
		`{"message":"hi","sessionId":"s1","wakeMode":"resume","pendingWake":{"key":"k1","extra":{"a":[1,{"b":2}]}}}`,
		`{"message":"{\"message\":1,\"message\":2}"}`,
		"{\"message\":\"\xff\xfe\"}",
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
		checkExactKeys(t, body)
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

// checkExactKeys fails unless body's keys, and those of its pendingWake
// object, are each one of the fields, spelled exactly, given once. It reads
// the keys as a map does, which matches them exactly, and counts them with
// Token.
func checkExactKeys(t *testing.T, body []byte) {
	t.Helper()
	var top map[string]json.RawMessage
	if err := json.Unmarshal(body, &top); err != nil {
		t.Fatalf("accepted a body a map cannot hold: %v", err)
	}
	exact(t, "", body, top, requestKeys)
	if raw := top["pendingWake"]; len(raw) > 0 && raw[0] == '{' {
		var inner map[string]json.RawMessage
		if err := json.Unmarshal(raw, &inner); err != nil {
			t.Fatalf("accepted a pendingWake a map cannot hold: %v", err)
		}
		exact(t, "pendingWake.", raw, inner, pendingKeys)
	}
}

func exact(t *testing.T, prefix string, obj []byte, keys map[string]json.RawMessage, names []string) {
	t.Helper()
	for k := range keys {
		if !slices.Contains(names, k) {
			t.Fatalf("accepted the unknown field %q", prefix+k)
		}
	}
	// Count the object's keys: a key, then its value, until the brace.
	dec := json.NewDecoder(bytes.NewReader(obj))
	dec.Token()
	n := 0
	for dec.More() {
		if _, err := dec.Token(); err != nil {
			t.Fatalf("accepted an object whose keys do not scan: %v", err)
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			t.Fatalf("accepted an object whose values do not scan: %v", err)
		}
		n++
	}
	if n != len(keys) {
		t.Fatalf("accepted an object with %d keys of which %d are distinct: a duplicate", n, len(keys))
	}
}
