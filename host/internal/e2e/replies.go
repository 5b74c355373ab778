package e2e

import (
	"time"

	"github.com/wakeonchat/wakeonchat/machines"
)

// ProviderFailed is the generic body of every 502 (D5).
const ProviderFailed = `{"error":"the agent provider failed"}`

// Render is the default wording of key (machines.DefaultReplies) with the
// data the default policy fills for pod qwen (expected_wake 9m,
// pod_idle_stop 15m, the conductor), changed by set (nil: none): the text
// the host answers with by default. The wording is machines' to pin
// (TestDefaultRepliesWording), never copied into a test elsewhere. A reply
// that does not render is a bug of the defaults: Render panics.
func Render(key machines.ReplyKey, set func(*machines.ReplyData)) string {
	eta := int(machines.DefaultTimings().ExpectedWake / time.Minute)
	d := machines.ReplyData{
		Pod: "qwen", ExpectedMinutes: eta, EtaMinutes: eta,
		IdleMinutes: int(machines.DefaultTimings().PodIdleStop / time.Minute),
		Backend:     machines.DefaultBackend,
	}
	if set != nil {
		set(&d)
	}
	text, err := machines.MustDefaultReplies().Render(key, d)
	if err != nil {
		panic(err)
	}
	return text
}

// ReplyWaking is the reply to the ask that wakes the pod.
var ReplyWaking = Render(machines.ReplyWaking, nil)

// ReplyStillWaking is the reply to an ask minutes into a wake.
func ReplyStillWaking(minutes int) string {
	return Render(machines.ReplyStillWaking, func(d *machines.ReplyData) { d.ElapsedMinutes = minutes })
}

// ReplyRefused is the reply to the ask after the conductor refused a start
// with status.
func ReplyRefused(status int) string { return ReplyRefusedBy(machines.DefaultBackend, status) }

// ReplyRefusedBy is the reply to the ask after the GPU backend the replies
// call backend refused a start with status.
func ReplyRefusedBy(backend string, status int) string {
	return Render(machines.ReplyRefused, func(d *machines.ReplyData) { d.Status, d.Backend = status, backend })
}
