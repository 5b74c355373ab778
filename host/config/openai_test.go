package config

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestValidateOpenAI(t *testing.T) {
	tests := []struct {
		name   string
		change func(o *OpenAI)
		want   []string // nil: valid
	}{
		{name: "defaults", change: func(o *OpenAI) {}},
		{name: "hold", change: func(o *OpenAI) { o.ColdStart = ColdStartHold }},
		{name: "origins", change: func(o *OpenAI) {
			o.CORSOrigins = []string{"*", "https://chat.example.com", "http://localhost:3000"}
		}},
		{name: "keys variable", change: func(o *OpenAI) { o.APIKeysEnv = "DOOR_KEYS" }},
		{
			name:   "unknown cold start",
			change: func(o *OpenAI) { o.ColdStart = "wait" },
			want:   []string{`openai.cold_start: "wait": must be "reply" or "hold"`},
		},
		{
			name:   "durations not positive",
			change: func(o *OpenAI) { o.HoldMax, o.Keepalive = Duration{0}, Duration{-time.Second} },
			want:   []string{"openai.hold_max: must be positive", "openai.keepalive: must be positive"},
		},
		{
			name:   "a key instead of its variable",
			change: func(o *OpenAI) { o.APIKeysEnv = "sk-abc,sk-def" },
			want:   []string{`openai.api_keys_env: must be the name of an environment variable (letters, digits and "_", not starting with a digit), not the keys themselves`},
		},
		{
			name:   "origins with a path or no scheme",
			change: func(o *OpenAI) { o.CORSOrigins = []string{"https://chat.example.com/", "chat.example.com"} },
			want: []string{
				`openai.cors_origins[0]: "https://chat.example.com/": must be "*" or an origin such as "https://chat.example.com" (scheme and host, no path)`,
				`openai.cors_origins[1]: "chat.example.com": must be "*" or an origin such as "https://chat.example.com" (scheme and host, no path)`,
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := DefaultConfig()
			tt.change(&c.OpenAI)
			var got []string
			if err := c.Validate(); err != nil {
				got = strings.Split(err.Error(), "\n")
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Validate (-want +got):\n%s", diff)
			}
		})
	}
}

// A key the file sets wrong is reported with its line.
func TestParseOpenAIErrorHasLine(t *testing.T) {
	_, err := Parse([]byte("[openai]\nkeepalive = \"15s\"\ncold_start = \"later\"\n"), "/etc/wake")
	want := `line 3: openai.cold_start: "later": must be "reply" or "hold"`
	if err == nil || err.Error() != want {
		t.Errorf("Parse error = %v, want %q", err, want)
	}
}
