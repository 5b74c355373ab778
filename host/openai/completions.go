package openai

import "net/http"

// The X-Wake-State header on every completion answer: the pod lifecycle
// state of the model's pod, or "unknown" when the answer concerns no pod.
const (
	wakeStateHeader = "X-Wake-State"
	stateUnknown    = "unknown"
)

func (s *Server) handleCompletions(w http.ResponseWriter, r *http.Request) {
	w.Header().Set(wakeStateHeader, stateUnknown)
	writeError(w, &apiError{kind: kindNotFound, message: "not served yet"})
}
