package pluginapi

import "fmt"

// LookupError is a GetPod that could not learn the pod's state: the
// conductor answered a non-200 status or a malformed body, timed out, or
// could not be reached. It travels across the plugin boundary as data, so
// the host receives the same *LookupError the plugin returned; any other
// error a plugin's GetPod returns reaches the host as a *LookupError with
// that error's text as Message.
type LookupError struct {
	// Status is the HTTP status the conductor answered, 0 when there was none.
	Status int
	// Message is a short description without URLs or secrets, such as
	// "conductor answered status 500" or "conductor unreachable: ECONNREFUSED".
	Message string
}

func (e *LookupError) Error() string {
	if e.Message == "" {
		return fmt.Sprintf("pod lookup failed: status=%d", e.Status)
	}
	return e.Message
}
