package config

import (
	"fmt"
	"net/url"
	"strings"
	"time"
)

// The cold-start modes of the OpenAI-compatible door ([openai] cold_start).
const (
	// ColdStartReply answers a request that finds the model not ready at
	// once, with the wake policy's reply as the assistant message.
	ColdStartReply = "reply"
	// ColdStartHold holds the request while the pod wakes, up to hold_max,
	// and runs it once the model is freshly ready.
	ColdStartHold = "hold"
)

// OpenAI is the OpenAI-compatible door: GET /v1/models and
// POST /v1/chat/completions (docs/openai.md).
type OpenAI struct {
	ColdStart   string   `toml:"cold_start"`   // "reply" or "hold"; default "reply"
	HoldMax     Duration `toml:"hold_max"`     // the longest a request is held in "hold" mode; default 9m30s (under the OpenAI SDKs' 600 s timeout)
	Keepalive   Duration `toml:"keepalive"`    // how often a held stream gets an SSE comment; default 15s
	APIKeysEnv  string   `toml:"api_keys_env"` // NAME of the environment variable holding the door's keys, comma-separated (never the keys); "" requires none
	CORSOrigins []string `toml:"cors_origins"` // origins browsers may call the door from ("*" for any); default none
}

// DefaultOpenAI is the [openai] table DefaultConfig holds.
func DefaultOpenAI() OpenAI {
	return OpenAI{
		ColdStart:   ColdStartReply,
		HoldMax:     Duration{9*time.Minute + 30*time.Second},
		Keepalive:   Duration{15 * time.Second},
		CORSOrigins: []string{},
	}
}

// validateOpenAI checks the [openai] table.
func (c Config) validateOpenAI() []*Error {
	var errs []*Error
	o := c.OpenAI
	if o.ColdStart != ColdStartReply && o.ColdStart != ColdStartHold {
		errs = append(errs, problem("openai.cold_start", "%q: must be %q or %q", o.ColdStart, ColdStartReply, ColdStartHold))
	}
	if o.HoldMax.Duration <= 0 {
		errs = append(errs, problem("openai.hold_max", "must be positive"))
	}
	if o.Keepalive.Duration <= 0 {
		errs = append(errs, problem("openai.keepalive", "must be positive"))
	}
	if o.APIKeysEnv != "" && !envNamePattern.MatchString(o.APIKeysEnv) {
		// Not quoted: keys pasted here instead of their variable's name
		// must not reach a log.
		errs = append(errs, problem("openai.api_keys_env", "must be the name of an environment variable (letters, digits and \"_\", not starting with a digit), not the keys themselves"))
	}
	for i, origin := range o.CORSOrigins {
		if err := checkOrigin(origin); err != nil {
			errs = append(errs, &Error{Key: fmt.Sprintf("openai.cors_origins[%d]", i), Err: err})
		}
	}
	return errs
}

// checkOrigin accepts "*" or a browser origin: scheme://host[:port], with
// nothing after it.
func checkOrigin(s string) error {
	if s == "*" {
		return nil
	}
	u, err := url.Parse(s)
	switch {
	case err != nil, u.Scheme != "http" && u.Scheme != "https", u.Host == "", u.User != nil,
		u.Path != "", u.RawQuery != "", u.Fragment != "", strings.HasSuffix(s, "/"):
		return fmt.Errorf("%q: must be \"*\" or an origin such as \"https://chat.example.com\" (scheme and host, no path)", s)
	}
	return nil
}
