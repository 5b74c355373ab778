package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/wakeonchat/wakeonchat/host/config"
	"github.com/wakeonchat/wakeonchat/host/sim"
)

// Measurement 7's second table: what the GPU costs over the same day and
// the same users under four stop policies. A pod that stops itself after
// idling (the conductor's) is today's; a backend whose pods do not (a
// container, a RunPod pod) is up until someone stops it, and the host's
// stop_after_idle and stop_unserved_after are that someone. The host's
// stops go through the GPU plugin's StopPod to the simulator's
// POST /api/pods/{name}/stop, which counts them and ends the wake.

// stopPolicy is who stops the pod during a day.
type stopPolicy struct {
	name string // its letter, as the table and docs/performance.md name it
	// podStops: the pod stops itself sim.DefaultIdleStop after its last
	// answer (the simulator's default); false: never (sim NoIdleStop).
	podStops bool
	host     hostStops // the host's stop_after_idle and stop_unserved_after
}

// unservedAfter is policy d's stop_unserved_after: longer than the 3
// minutes a legacy client waits before it asks again ("in a few
// minutes"), so that a user still asking keeps the pod, and a third of
// stop_after_idle.
const unservedAfter = 5 * time.Minute

// stopPolicies are measurement 7's policies; the first, todayPolicy, is
// what the first table reports.
var stopPolicies = []stopPolicy{
	{name: "a", podStops: true},
	{name: "b"},
	{name: "c", host: hostStops{afterIdle: config.DefaultStopAfterIdle}},
	{name: "d", host: hostStops{afterIdle: config.DefaultStopAfterIdle, unservedAfter: unservedAfter}},
}

// todayPolicy is the index in stopPolicies of today's: the conductor's pods
// stop themselves, and the host stops nothing.
const todayPolicy = 0

// String says what the policy is, in words.
func (p stopPolicy) String() string {
	pod := "the pod never stops itself"
	if p.podStops {
		pod = fmt.Sprintf("the pod stops itself %s after its last answer", tomlDuration(sim.DefaultIdleStop))
	}
	var host []string
	if d := p.host.afterIdle; d > 0 {
		host = append(host, "stop_after_idle "+tomlDuration(d))
	}
	if d := p.host.unservedAfter; d > 0 {
		host = append(host, "stop_unserved_after "+tomlDuration(d))
	}
	if len(host) == 0 {
		return pod + "; the host stops nothing"
	}
	return pod + "; the host stops it: " + strings.Join(host, ", ")
}

// tomlDuration writes d as wake.toml would: "15m", not "15m0s".
func tomlDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	return s
}

// gpuCost is what one day under one stop policy cost, in simulated time.
type gpuCost struct {
	users, answered int
	wakes           int
	// up is the GPU-up time: each wake from its start request to its end,
	// or to the day's end if it was still up then.
	up time.Duration
	// stopRequests are the stop requests the conductor received: the
	// host's StopPod calls. hostStopped, selfStopped and upAtEnd are the
	// wakes one of them ended, that stopped themselves, and still up at
	// the day's end.
	stopRequests                      int
	hostStopped, selfStopped, upAtEnd int
	// servedTail is, for each wake that ended having answered, the time
	// from its last answer to its end; unservedTail, for each that ended
	// ready without answering anything, from its readiness to its end.
	servedTail, unservedTail []time.Duration
}

// cost derives a day's GPU cost from the users, the simulator's wakes and
// the stop requests it received; end is when the day ended.
func cost(users []*user, wakes []sim.WakeReport, stopRequests int, end time.Time) gpuCost {
	c := gpuCost{users: len(users), wakes: len(wakes), stopRequests: stopRequests}
	for _, u := range users {
		if !u.answered.IsZero() {
			c.answered++
		}
	}
	for _, w := range wakes {
		ended := !w.EndedAt.IsZero() && !w.EndedAt.After(end)
		stopped := end
		if ended {
			stopped = w.EndedAt
		}
		c.up += max(0, stopped.Sub(w.StartedAt))
		switch {
		case !ended:
			c.upAtEnd++
			continue
		case w.Stopped:
			c.hostStopped++
		default:
			c.selfStopped++
		}
		switch {
		case w.Answered > 0:
			c.servedTail = append(c.servedTail, w.EndedAt.Sub(w.LastAnswerAt))
		case !w.ReadyAt.IsZero() && w.ReadyAt.Before(w.EndedAt):
			c.unservedTail = append(c.unservedTail, w.EndedAt.Sub(w.ReadyAt))
		}
	}
	return c
}

// renderCosts renders measurement 7's cost table: costs by population
// (populations' order), then by stop policy (stopPolicies' order).
func renderCosts(d dayPlan, costs [][]gpuCost) string {
	var b strings.Builder
	fmt.Fprintf(&b, "7, GPU cost: the same days and users under each stop policy; GPU up from each wake's start request to its end, or to the day's end (%s after the last possible arrival); simulated minutes, one run each\n\n",
		tomlDuration(dayTail))
	b.WriteString("| population | policy | users answered | wakes | GPU-up min | per answered user | per wake | stop requests (wakes they ended) | wakes that stopped themselves | up at the day's end | served wake: last answer → end, min | unserved wake: ready → end, min |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	perMinutes := func(up time.Duration, n int) string {
		if n == 0 {
			return noTarget
		}
		return fmt.Sprintf("%.0f", up.Minutes()/float64(n))
	}
	for i, p := range populations {
		for j, pol := range stopPolicies {
			c := costs[i][j]
			fmt.Fprintf(&b, "| %s | %s | %d of %d | %d | %.0f | %s | %s | %d (%d) | %d | %d | %s | %s |\n",
				p.name, pol.name, c.answered, c.users, c.wakes, c.up.Minutes(), perMinutes(c.up, c.answered), perMinutes(c.up, c.wakes),
				c.stopRequests, c.hostStopped, c.selfStopped, c.upAtEnd, tail(c.servedTail), tail(c.unservedTail))
		}
	}
	b.WriteString("\n")
	for _, pol := range stopPolicies {
		fmt.Fprintf(&b, "%s: %s.\n", pol.name, pol)
	}
	return b.String()
}

// tail formats a set of wake tails in minutes: the median and the range.
func tail(ds []time.Duration) string {
	if len(ds) == 0 {
		return noTarget
	}
	return fmt.Sprintf("%.1f (%.1f–%.1f, n=%d)", percentile(ds, 50).Minutes(), percentile(ds, 0).Minutes(), percentile(ds, 100).Minutes(), len(ds))
}
