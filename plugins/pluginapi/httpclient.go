package pluginapi

import "net/http"

// NewHTTPClient returns the HTTP client a plugin should talk to its service
// with: a fresh transport that ignores proxy settings (a plugin's
// environment is exactly what the host gave it) and never follows a
// redirect, so a request with a token or a key goes only where it was
// configured to go. Timeouts are per request, through the context.
func NewHTTPClient() *http.Client {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.Proxy = nil
	return &http.Client{
		Transport:     t,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}
