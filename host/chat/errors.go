package chat

import (
	"errors"
	"net/http"

	"github.com/wakeonchat/wakeonchat/host/internal/jsonhttp"
)

// ErrShutdown is the cause with which the host cancels the context of the
// requests still in flight when its shutdown grace ran out (see
// context.WithCancelCause): a turn it cuts answers 503 and is logged "turn
// cut by shutdown", not "turn failed".
var ErrShutdown = errors.New("the host is shutting down")

// providerFailed is the body of every 502, byte for byte what clients know (D5).
const providerFailed = `{"error":"the agent provider failed"}`

// writeProviderFailed writes the generic 502.
func writeProviderFailed(w http.ResponseWriter) {
	jsonhttp.WriteRaw(w, http.StatusBadGateway, []byte(providerFailed))
}
