package machines

import "time"

// defaultReplies are the default replies the tests render what they expect
// from.
var defaultReplies = MustDefaultReplies()

// say is the default wording of key (DefaultReplies) with the data
// DefaultPolicy fills for pod qwen (expected_wake as the eta, pod_idle_stop,
// the conductor), changed by with: the text a pod with the default policy
// answers. The wording is TestDefaultRepliesWording's to pin; every other
// test renders the reply it expects here, with the data its row means. A
// default that does not render is a bug of the defaults: say panics.
func say(key ReplyKey, with ...replyWith) string {
	t := DefaultTimings()
	d := ReplyData{
		Pod:             "qwen",
		ExpectedMinutes: int(t.ExpectedWake / time.Minute),
		EtaMinutes:      int(t.ExpectedWake / time.Minute),
		IdleMinutes:     int(t.PodIdleStop / time.Minute),
		Backend:         DefaultBackend,
	}
	for _, w := range with {
		w(&d)
	}
	text, err := defaultReplies.Render(key, d)
	if err != nil {
		panic(err)
	}
	return text
}

// replyWith sets what a reply says beside the defaults.
type replyWith func(*ReplyData)

// elapsed is a wake requested minutes ago.
func elapsed(minutes int) replyWith { return func(d *ReplyData) { d.ElapsedMinutes = minutes } }

// eta is a wake that takes minutes: a measured estimate, or an
// expected_wake other than the default.
func eta(minutes int) replyWith { return func(d *ReplyData) { d.EtaMinutes = minutes } }

// loadingFor is a model loading for minutes.
func loadingFor(minutes int) replyWith { return func(d *ReplyData) { d.LoadingMinutes = minutes } }

// wasReadyAt is the last ready boot's time, as the replies write it
// ("12:09 UTC").
func wasReadyAt(clock string) replyWith { return func(d *ReplyData) { d.ReadyAt = clock } }

// requestedAt is the current wake's request time, as the replies write it.
func requestedAt(clock string) replyWith { return func(d *ReplyData) { d.WakeRequestedAt = clock } }

// httpStatus is the status a refused start got.
func httpStatus(status int) replyWith { return func(d *ReplyData) { d.Status = status } }

// backend is how the replies name the pod's GPU backend.
func backend(name string) replyWith { return func(d *ReplyData) { d.Backend = name } }
