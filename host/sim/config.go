package sim

import (
	"math"
	"time"
)

// Default timings, in real-world time, taken from the 2026-09-09 wake.
const (
	DefaultCreateDelay = 15 * time.Second
	DefaultBootDelay   = 6*time.Minute + 30*time.Second
	DefaultLoadDelay   = 2*time.Minute + 30*time.Second
	DefaultIdleStop    = 15 * time.Minute
)

// DefaultPod is the pod served when Config.Pods is empty.
const DefaultPod = "qwen"

// Config configures a Sim. Its zero value is a realistic single-pod conductor
// in real time. Durations are real-world durations; Scale divides them.
type Config struct {
	// Pods lists the pod names served. Default ["qwen"]; duplicates are ignored.
	Pods []string

	// Scale compresses time: every delay below is divided by it. 0 or 1 is real
	// time; 27 turns a 9-minute wake into 20 seconds. Negative means 1.
	Scale float64

	// Clock tells the time. Default (nil) is the wall clock.
	Clock Clock

	// CreateDelay is start -> the replacement pod exists (status CREATED,
	// isRunning false, new podId). Default 15s. Capped at BootDelay.
	CreateDelay time.Duration

	// BootDelay is start -> RUNNING with a proxyUrl. Default 6m30s.
	BootDelay time.Duration

	// LoadDelay is RUNNING -> the model answers completions. Default 2m30s.
	LoadDelay time.Duration

	// IdleStop is how long a ready pod stays up with no answered completion
	// before it stops itself (EXITED). Default 15m.
	IdleStop time.Duration

	// NoIdleStop makes a pod never stop itself: it stays up until a stop
	// request, like a backend whose pods only the host stops (a container,
	// a RunPod pod). IdleStop is then unused. Default false: the pod stops
	// itself, as the conductor's do.
	NoIdleStop bool

	// NoStartHold makes start answer 202 at once instead of holding the request
	// until the pod is RUNNING, which is what the real conductor does. Default
	// false: start holds.
	NoStartHold bool

	// OnAnswer, when set, is told of each completion the model answers
	// (each one Completions counts), with when its handler began and when
	// its answer was written (AnswerTimes). It is called on the request's
	// own goroutine, before the answer is sent (a stream: once its first
	// chunk is sent), concurrently for concurrent requests: it must be
	// quick and must not block. Default nil: the model reads no clock for
	// it.
	OnAnswer func(AnswerTimes)
}

// AnswerTimes is one answered completion's two instants on the model's side,
// on the wall clock (time.Now, monotonic reading included), not on
// Config.Clock: a caller in the same process sets them beside its own
// instants to split a request into the leg before the model, the model's own
// work and the leg after it.
type AnswerTimes struct {
	// Began is when the completion's handler began: the request's head
	// had arrived (its body is read after).
	Began time.Time
	// Written is when the answer was written to the response, just before
	// it was sent on the connection: the whole answer, or a stream's first
	// chunk (the role chunk).
	Written time.Time
}

// timing holds the configured delays already divided by Scale: durations on
// the Sim's clock, all but idle measured from the start request.
type timing struct {
	create time.Duration // the pod exists
	boot   time.Duration // RUNNING
	ready  time.Duration // the model answers: BootDelay+LoadDelay, scaled as one
	idle   time.Duration // IdleStop; 0 never (NoIdleStop)
}

// timing resolves defaults and Scale.
func (c Config) timing() timing {
	scale := c.Scale
	if scale <= 0 || math.IsNaN(scale) || math.IsInf(scale, 0) {
		scale = 1
	}
	orDefault := func(d, def time.Duration) time.Duration {
		if d <= 0 {
			return def
		}
		return d
	}
	scaled := func(d time.Duration) time.Duration {
		f := math.Round(float64(d) / scale)
		if f >= math.MaxInt64 {
			return math.MaxInt64
		}
		return time.Duration(f)
	}
	create := orDefault(c.CreateDelay, DefaultCreateDelay)
	boot := orDefault(c.BootDelay, DefaultBootDelay)
	load := orDefault(c.LoadDelay, DefaultLoadDelay)
	tm := timing{
		create: scaled(min(create, boot)),
		boot:   scaled(boot),
		ready:  scaled(boot + load),
		idle:   scaled(orDefault(c.IdleStop, DefaultIdleStop)),
	}
	// A huge Scale could round a delay to zero; keep IdleStop positive so a
	// ready pod is ready for at least an instant.
	tm.idle = max(tm.idle, time.Nanosecond)
	if c.NoIdleStop {
		tm.idle = 0
	}
	return tm
}
