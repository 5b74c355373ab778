package resolve

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/wakeonchat/wakeonchat/plugins/pluginapi"
)

func fmtV(v any) string { return fmt.Sprintf("%v %+v", v, v) }

func jsonOf(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("json.Marshal: %v", err)
	}
	return string(b)
}

var (
	exitedResolution  = Resolution{Pod: "qwen", Status: "EXITED", PodID: "abc", Lookup: pluginapi.LookupFound}
	runningResolution = readyResolution(oldURL)
)

func TestNotReadyErrorJSON(t *testing.T) {
	tests := []struct {
		name         string
		res          Resolution
		modelLoading bool
		want         string
	}{
		{
			name: "asleep",
			res:  exitedResolution,
			want: `{"pod":"qwen","status":"EXITED","lookup":"FOUND","podId":"abc","retryable":true,"fallbackEligible":false,"userMessage":"The model server is not running right now."}`,
		},
		{
			name:         "model loading",
			res:          runningResolution,
			modelLoading: true,
			want:         `{"pod":"qwen","status":"RUNNING","lookup":"FOUND","podId":"abc","modelLoading":true,"retryable":true,"fallbackEligible":false,"userMessage":"The GPU is up and the model is still loading — try again shortly."}`,
		},
		{
			name: "unreadable",
			res:  Resolution{Pod: "qwen", Lookup: pluginapi.LookupUnreadable},
			want: `{"pod":"qwen","status":"","lookup":"UNREADABLE","podId":"","retryable":true,"fallbackEligible":false,"userMessage":"The model server is not running right now."}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := NewNotReadyError("qwen", tt.res, tt.modelLoading)
			e.Provider = "openai-api"
			// Pointer, value and a wrapping struct all give the same bytes.
			for _, got := range []string{jsonOf(t, e), jsonOf(t, *e)} {
				if diff := cmp.Diff(tt.want, got); diff != "" {
					t.Errorf("JSON (-want +got):\n%s", diff)
				}
			}
			wrapped := jsonOf(t, struct {
				NotReady *NotReadyError `json:"providerNotReady"`
			}{e})
			if diff := cmp.Diff(`{"providerNotReady":`+tt.want+`}`, wrapped); diff != "" {
				t.Errorf("wrapped JSON (-want +got):\n%s", diff)
			}
		})
	}
}

func TestNotReadyErrorMessage(t *testing.T) {
	tests := []struct {
		name         string
		provider     string
		res          Resolution
		modelLoading bool
		want         string
	}{
		{"asleep", "openai-api", exitedResolution, false, "provider openai-api: pod qwen not ready (status EXITED)"},
		{"loading", "openai-api", runningResolution, true, "provider openai-api: pod qwen not ready (status RUNNING, model loading)"},
		{"unreadable", "openai-api", Resolution{Lookup: pluginapi.LookupUnreadable}, false, "provider openai-api: pod qwen not ready (lookup UNREADABLE)"},
		{"no provider name", "", exitedResolution, false, "pod qwen not ready (status EXITED)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := NewNotReadyError("qwen", tt.res, tt.modelLoading)
			e.Provider = tt.provider
			if diff := cmp.Diff(tt.want, e.Error()); diff != "" {
				t.Errorf("Error() (-want +got):\n%s", diff)
			}
		})
	}
}

func TestNotReadyErrorLogValue(t *testing.T) {
	for _, loading := range []bool{false, true} {
		t.Run(fmt.Sprintf("modelLoading=%t", loading), func(t *testing.T) {
			e := NewNotReadyError("qwen", runningResolution, loading)
			e.Provider = "openai-api"
			var buf bytes.Buffer
			logger := slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{
				ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
					if a.Key == slog.TimeKey {
						return slog.Attr{}
					}
					return a
				},
			}))
			logger.Info("not ready", "notReady", e)

			var got map[string]any
			if err := json.Unmarshal(buf.Bytes(), &got); err != nil {
				t.Fatalf("log line is not JSON: %v\n%s", err, buf.String())
			}
			// The logged group holds exactly the error's JSON fields.
			var want map[string]any
			if err := json.Unmarshal([]byte(jsonOf(t, e)), &want); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, got["notReady"]); diff != "" {
				t.Errorf("logged fields (-want +got):\n%s", diff)
			}
			for _, leak := range []string{"func", "0x", "://", "proxy", "wake", "readPod"} {
				if strings.Contains(buf.String(), leak) {
					t.Errorf("log line contains %q:\n%s", leak, buf.String())
				}
			}
		})
	}
}

func TestNotReadyErrorSurvivesWrapping(t *testing.T) {
	var err error = NewNotReadyError("qwen", exitedResolution, false)
	err = fmt.Errorf("openai-api: %w", err)
	err = fmt.Errorf("process with providers: %w", err)
	err = fmt.Errorf("agent turn: %w", err)

	var nr *NotReadyError
	if !errors.As(err, &nr) {
		t.Fatalf("errors.As found no *NotReadyError in %v", err)
	}
	if nr.Pod != "qwen" || nr.Status != "EXITED" || !nr.Retryable {
		t.Errorf("fields lost in wrapping: %+v", *nr)
	}
}
