package resolve

import (
	"fmt"
	"net/http"
	"strings"
)

// ProviderError is a plain provider failure: the completion failed, or the
// conductor could not be reached and nothing was cached. It is never a
// reason to wake a pod.
type ProviderError struct {
	Provider string
	// Status is the HTTP status the model answered, 0 when there was none.
	Status int
	// TransportFailure is true when the request got no response at all.
	TransportFailure bool
	// Aborted is true when the completion timeout cut the request.
	Aborted bool
	// Err is the underlying failure: a *pluginapi.CompletionError, a plugin
	// error, or a conductor lookup failure.
	Err error

	// unsent is true when the payload never left the host (the conductor
	// lookup failed before any completion was attempted).
	unsent bool
}

func (e *ProviderError) Error() string {
	var detail string
	switch {
	case e.Err != nil:
		detail = scrubURLs(e.Err.Error())
	case e.Aborted:
		detail = "completion aborted"
	case e.TransportFailure:
		detail = "completion transport failure"
	default:
		detail = fmt.Sprintf("completion failed (status %d)", e.Status)
	}
	return withProvider(e.Provider, detail)
}

func (e *ProviderError) Unwrap() error { return e.Err }

// FallbackEligible reports whether the same payload may be sent to another
// provider. The rule is "only when the model cannot have processed it":
//
//   - true for an HTTP failure other than 200 (the model refused or never
//     got it), for a transport failure (no response at all), and for a
//     conductor lookup failure (nothing was sent);
//   - false for Status 200 (the model answered and the body died or did not
//     parse: it has processed the payload, D10), for Aborted (something held
//     the connection, possibly the model working on it), and for any other
//     failure without a status, such as a crashed provider plugin, because
//     nobody can say whether the request reached the model.
func (e *ProviderError) FallbackEligible() bool {
	switch {
	case e.Aborted:
		return false
	case e.unsent, e.TransportFailure:
		return true
	default:
		return e.Status != 0 && e.Status != http.StatusOK
	}
}

// lookupError is the failure of a conductor lookup with nothing cached.
func lookupError(pod string, err error) *ProviderError {
	return &ProviderError{Err: fmt.Errorf("conductor lookup for pod %s: %w", pod, err), unsent: true}
}

// ConfigError is a config-class failure: a provider with neither a pod nor a
// base_url, a missing API key variable, an unknown plugin. It never carries
// wake capabilities and is never a reason to fall back or retry.
type ConfigError struct {
	Provider string
	Reason   string // lowercase, without URLs or secrets
}

func (e *ConfigError) Error() string {
	return withProvider(e.Provider, "config error: "+e.Reason)
}

// FallbackEligible is always false: a broken configuration is the operator's
// to fix, not something another provider should paper over.
func (e *ConfigError) FallbackEligible() bool { return false }

func withProvider(provider, detail string) string {
	if provider == "" {
		return detail
	}
	return "provider " + provider + ": " + detail
}

// scrubURLs replaces every scheme://... token in s with "[url]". Plugin and
// conductor errors are not under this package's control (Go's *url.Error
// quotes the URL it failed on), and error messages never carry a URL.
func scrubURLs(s string) string {
	const (
		before = " \t\r\n\"'`(<[{=,"
		after  = " \t\r\n\"'`)>]},"
	)
	for {
		i := strings.Index(s, "://")
		if i < 0 {
			return s
		}
		start := strings.LastIndexAny(s[:i], before) + 1
		end := len(s)
		if j := strings.IndexAny(s[i+3:], after); j >= 0 {
			end = i + 3 + j
		}
		s = s[:start] + "[url]" + s[end:]
	}
}
