package pluginapi

import (
	"fmt"
	"os"
	"time"
)

// The environment contract. The host configures a plugin only through
// these environment variables; a plugin inherits nothing else from the host
// (no PATH, no HOME, no proxy settings, no secrets of other plugins).
// go-plugin adds its own variables (the magic cookie, PLUGIN_MIN_PORT,
// PLUGIN_MAX_PORT, PLUGIN_PROTOCOL_VERSIONS, PLUGIN_CLIENT_CERT) which a
// plugin should leave to go-plugin.
//
// Durations use Go's syntax (time.ParseDuration): "3s", "1500ms", "2m".
// An unset or empty variable means the plugin's default.
const (
	// EnvConductorURL is the conductor's base URL, such as
	// http://conductor:8080 (GPU plugin; required).
	EnvConductorURL = "WAKE_CONDUCTOR_URL"
	// EnvLookupTimeout caps one GetPod (GPU plugin; default 3s).
	EnvLookupTimeout = "WAKE_LOOKUP_TIMEOUT"
	// EnvStartTimeout caps one StartPod or StopPod (GPU plugin; default 3s).
	EnvStartTimeout = "WAKE_START_TIMEOUT"
	// EnvWakeToken is the wake-only operator token (GPU plugin; set only
	// when the host has it). The conductor plugin sends it as
	// X-Rig-Operator-Token on start requests and nowhere else, and never
	// logs it.
	EnvWakeToken = "RIG_WAKE_TOKEN"
	// EnvAPIKeyEnv is the NAME of the environment variable that holds the
	// model API key (provider plugin). The host passes both this variable
	// and the one it names; an empty name or an empty key means no key.
	EnvAPIKeyEnv = "WAKE_API_KEY_ENV"
	// EnvCompletionTimeout caps one Complete (provider plugin; default
	// 120s, D6).
	EnvCompletionTimeout = "WAKE_COMPLETION_TIMEOUT"
	// EnvLogLevel is the lowest level of the plugin's log lines the host
	// keeps, in hclog's words (trace, debug, info, warn, error, off; every
	// plugin; default debug). NewLogger writes nothing below it: a line
	// the host would drop still cost the plugin its encoding and a write,
	// on a call's way.
	EnvLogLevel = "WAKE_LOG_LEVEL"
)

// DurationEnv reads the duration in the environment variable name. It
// returns def when the variable is unset or empty, and an error naming the
// variable when it does not parse or is not positive.
func DurationEnv(name string, def time.Duration) (time.Duration, error) {
	v := os.Getenv(name)
	if v == "" {
		return def, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", name, err)
	}
	if d <= 0 {
		return 0, fmt.Errorf("%s: %q is not a positive duration", name, v)
	}
	return d, nil
}

// APIKeyFromEnv returns the model API key: the value of the variable whose
// name is in WAKE_API_KEY_ENV. It is empty when either is unset.
func APIKeyFromEnv() string {
	name := os.Getenv(EnvAPIKeyEnv)
	if name == "" {
		return ""
	}
	return os.Getenv(name)
}
