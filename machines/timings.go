package machines

import "time"

// Timings are the durations the wake policy decides by. Every one is
// inclusive at its edge: a wake requested exactly WakeWindow ago is still
// inside the window.
type Timings struct {
	WakeWindow     time.Duration // a second ask within it waits; beyond it wakes again
	LoadingCeiling time.Duration // loading this long or longer is called stuck (D9)
	WakeWatch      time.Duration // a wake not ready by then is recorded never-ready (D12)
	ExpectedWake   time.Duration // how long a wake usually takes, for the replies
	PodIdleStop    time.Duration // how long the pod idles before it stops itself, for the replies
	ReadySlack     time.Duration // a readySince this much before the wake still counts (D12)
}

// DefaultTimings returns the design's timings.
func DefaultTimings() Timings {
	return Timings{
		WakeWindow:     15 * time.Minute,
		LoadingCeiling: 20 * time.Minute,
		WakeWatch:      35 * time.Minute,
		ExpectedWake:   9 * time.Minute,
		PodIdleStop:    15 * time.Minute,
		ReadySlack:     60 * time.Second,
	}
}
