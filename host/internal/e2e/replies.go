package e2e

import (
	"fmt"

	"github.com/wakeonchat/wakeonchat/machines"
)

// The host's answers both suites assert byte for byte, with the default
// wording and timings (expected_wake 9m).
const (
	ReplyWaking = "Waking the GPU brain — that takes about 9 minutes. Ask me again in a few minutes."
	// ProviderFailed is the generic body of every 502 (D5).
	ProviderFailed = `{"error":"the agent provider failed"}`
)

// ReplyStillWaking is the reply to an ask minutes into a wake.
func ReplyStillWaking(minutes int) string {
	return fmt.Sprintf("Still waking — %d min elapsed, usually ready by ~9. Ask again shortly.", minutes)
}

// ReplyRefused is the reply to the ask after the conductor refused a start
// with status.
func ReplyRefused(status int) string { return ReplyRefusedBy(machines.DefaultBackend, status) }

// ReplyRefusedBy is the reply to the ask after the GPU backend the replies
// call backend refused a start with status, rendered from the default
// wording.
func ReplyRefusedBy(backend string, status int) string {
	text, err := machines.MustDefaultReplies().Render(machines.ReplyRefused,
		machines.ReplyData{EtaMinutes: 9, Status: status, Backend: backend})
	if err != nil {
		panic(err)
	}
	return text
}
