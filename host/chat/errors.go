package chat

import (
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
)

// ErrShutdown is the cause with which the host cancels the context of the
// requests still in flight when its shutdown grace ran out (see
// context.WithCancelCause): a turn it cuts answers 503 and is logged "turn
// cut by shutdown", not "turn failed".
var ErrShutdown = errors.New("the host is shutting down")

// providerFailed is the body of every 502, byte for byte what clients know (D5).
const providerFailed = `{"error":"the agent provider failed"}`

// writeJSON writes v as the response body with status.
func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		status, b = http.StatusInternalServerError, []byte(`{"error":"internal error"}`)
	}
	b = append(b, '\n')
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	w.Write(b)
}

// writeError writes {"error": msg}. msg is written by this package, never
// copied from an error.
func writeError(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, map[string]string{"error": msg})
}

// writeProviderFailed writes the generic 502.
func writeProviderFailed(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(providerFailed)))
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(http.StatusBadGateway)
	w.Write([]byte(providerFailed))
}
