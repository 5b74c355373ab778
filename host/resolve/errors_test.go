package resolve

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"unicode"

	"github.com/google/go-cmp/cmp"
	"github.com/wakeonchat/wakeonchat/plugins/pluginapi"
)

func TestProviderErrorFallbackEligible(t *testing.T) {
	tests := []struct {
		name string
		err  *ProviderError
		want bool
	}{
		{"502", &ProviderError{Status: 502}, true},
		{"400", &ProviderError{Status: 400}, true},
		{"429", &ProviderError{Status: 429}, true},
		{"500", &ProviderError{Status: 500}, true},
		{"transport failure", &ProviderError{TransportFailure: true}, true},
		{"conductor lookup failed", lookupError("qwen", errors.New("down")), true},
		{"200 with a bad body", &ProviderError{Status: 200}, false},
		{"aborted", &ProviderError{Aborted: true}, false},
		{"aborted with a status", &ProviderError{Aborted: true, Status: 502}, false},
		{"plugin crashed", &ProviderError{Err: errors.New("plugin exited")}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.err.FallbackEligible(); got != tt.want {
				t.Errorf("FallbackEligible() = %t, want %t", got, tt.want)
			}
		})
	}
}

func TestErrorMessages(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want string
	}{
		{
			name: "completion failure",
			err:  &ProviderError{Provider: "openai-api", Status: 502, Err: &pluginapi.CompletionError{Status: 502, Message: "bad gateway"}},
			want: "provider openai-api: completion failed: status=502: bad gateway",
		},
		{
			name: "no underlying error",
			err:  &ProviderError{Provider: "openai-api", Status: 429},
			want: "provider openai-api: completion failed (status 429)",
		},
		{
			name: "plugin error quoting a url",
			err:  &ProviderError{Provider: "openai-api", Err: errors.New(`Post "https://abc-8000.proxy.runpod.net/v1/chat/completions": EOF`)},
			want: `provider openai-api: Post "[url]": EOF`,
		},
		{
			name: "bare urls",
			err:  &ProviderError{Err: errors.New("dial http://a/b: refused, then (https://c/d?key=x) failed")},
			want: "dial [url] refused, then ([url]) failed",
		},
		{
			name: "config",
			err:  &ConfigError{Provider: "openai-api", Reason: "api key variable OPENAI_API_KEY is not set"},
			want: "provider openai-api: config error: api key variable OPENAI_API_KEY is not set",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := tt.err.Error()
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Error() (-want +got):\n%s", diff)
			}
			if r := []rune(got)[0]; unicode.IsUpper(r) {
				t.Errorf("message starts uppercase: %q", got)
			}
			if strings.Contains(got, "://") {
				t.Errorf("message carries a url: %q", got)
			}
		})
	}
}

func TestProviderErrorUnwraps(t *testing.T) {
	ce := &pluginapi.CompletionError{Status: 502}
	err := fmt.Errorf("turn: %w", &ProviderError{Status: 502, Err: ce})
	var got *pluginapi.CompletionError
	if !errors.As(err, &got) || got != ce {
		t.Errorf("errors.As did not find the CompletionError through ProviderError")
	}
}

func TestConfigErrorIsNeverEligibleNorNotReady(t *testing.T) {
	var err error = &ConfigError{Provider: "p", Reason: "neither pod nor base_url"}
	if err.(*ConfigError).FallbackEligible() {
		t.Errorf("FallbackEligible() = true, want false")
	}
	var nr *NotReadyError
	if errors.As(err, &nr) {
		t.Errorf("a ConfigError carries a NotReadyError")
	}
}
