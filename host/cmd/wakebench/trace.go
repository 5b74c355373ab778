package main

import (
	"fmt"
	"sync"
	"time"

	"github.com/wakeonchat/wakeonchat/host/sim"
)

// The per-leg split of measurements 2 and 6. The bench's client and the
// simulated model share this process and its clock, so each sequential
// request (concurrency 1) is split at the model without instrumenting
// what sits between them (the host, the floor, or nothing):
//
//	t0 the client begins to send            (span.sent)
//	t1 the model's handler begins           (sim.AnswerTimes.Began)
//	t2 the model has written its answer,    (sim.AnswerTimes.Written)
//	   or a stream's first chunk
//	t3 the client has the whole answer,     (span.in)
//	   or a stream's first byte
//
// The request leg t1 − t0 is the client's send, the proxy's own work before
// the model and its send to the model; the model leg t2 − t1 is the model
// reading the request and making the answer; the answer leg t3 − t2 is the
// model's send, the proxy's relay and its send to the client.

// legs is one request, or a series' p50s, split at the model.
type legs struct{ request, model, answer time.Duration }

// split is the legs of the request the client sent and had back over sp,
// which the model answered at a.
func split(sp span, a sim.AnswerTimes) legs {
	return legs{a.Began.Sub(sp.sent), a.Written.Sub(a.Began), sp.in.Sub(a.Written)}
}

// minus is l − m, leg by leg.
func (l legs) minus(m legs) legs {
	return legs{l.request - m.request, l.model - m.model, l.answer - m.answer}
}

// legsP50 is each leg's own p50 over xs: three percentiles, which need not
// add up to the p50 of the whole requests.
func legsP50(xs []legs) legs {
	req, model, answer := make([]time.Duration, len(xs)), make([]time.Duration, len(xs)), make([]time.Duration, len(xs))
	for i, x := range xs {
		req[i], model[i], answer[i] = x.request, x.model, x.answer
	}
	return legs{percentile(req, 50), percentile(model, 50), percentile(answer, 50)}
}

// medianLegs is the median over runs of each leg.
func medianLegs(runs []legs) legs {
	var req, model, answer []time.Duration
	for _, l := range runs {
		req, model, answer = append(req, l.request), append(model, l.model), append(answer, l.answer)
	}
	return legs{median(req), median(model), median(answer)}
}

// microseconds formats l in whole microseconds: "212 / 18 / 150 µs".
func (l legs) microseconds() string {
	r := func(d time.Duration) time.Duration { return d.Round(time.Microsecond) / time.Microsecond }
	return fmt.Sprintf("%d / %d / %d µs", r(l.request), r(l.model), r(l.answer))
}

// signed formats l as differences: "+90 / +0 / -4 µs".
func (l legs) signed() string {
	r := func(d time.Duration) time.Duration { return d.Round(time.Microsecond) / time.Microsecond }
	return fmt.Sprintf("%+d / %+d / %+d µs", r(l.request), r(l.model), r(l.answer))
}

// answerWatch is the simulated model's sim.Config.OnAnswer for measurements
// 2 and 6: it keeps the last answered completion's instants and counts
// them, under a mutex and with no allocation, since it runs on the model's
// path.
type answerWatch struct {
	mu   sync.Mutex
	n    int
	last sim.AnswerTimes
}

// observe is sim.Config.OnAnswer.
func (w *answerWatch) observe(a sim.AnswerTimes) {
	w.mu.Lock()
	w.n++
	w.last = a
	w.mu.Unlock()
}

// mark is how many completions the model has answered so far.
func (w *answerWatch) mark() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.n
}

// since is the completion the model answered after mark, and whether it
// answered exactly one.
func (w *answerWatch) since(mark int) (sim.AnswerTimes, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.last, w.n == mark+1
}

// traced is the legs of one path's sequential requests in one run.
type traced struct {
	legs     []legs
	untraced int // requests that made no completion, or more than one
}

// add splits the request sp, which began at mark on w, and keeps its legs;
// a request the model did not answer exactly once is counted apart.
func (t *traced) add(w *answerWatch, mark int, sp span) {
	a, ok := w.since(mark)
	if !ok {
		t.untraced++
		return
	}
	t.legs = append(t.legs, split(sp, a))
}

// pathLegs is one run's split requests of one series, by path.
type pathLegs struct{ host, direct, floor traced }

// of is path's series: "host", "direct" or "floor".
func (p *pathLegs) of(path string) *traced {
	switch path {
	case "host":
		return &p.host
	case "floor":
		return &p.floor
	}
	return &p.direct
}

// hostOverFloor is the host's p50s less the floor's, leg by leg.
func (p pathLegs) hostOverFloor() legs {
	return legsP50(p.host.legs).minus(legsP50(p.floor.legs))
}

// legRuns is the per-leg split of one series (measurement 2's completion,
// 6's first byte or non-streaming answer) over the runs: each run's p50s by
// path.
type legRuns struct {
	host, direct, floor []legs
	untraced, total     int
}

// add appends one run's series.
func (lr *legRuns) add(p pathLegs) {
	lr.host = append(lr.host, legsP50(p.host.legs))
	lr.direct = append(lr.direct, legsP50(p.direct.legs))
	lr.floor = append(lr.floor, legsP50(p.floor.legs))
	for _, t := range []traced{p.host, p.direct, p.floor} {
		lr.untraced += t.untraced
		lr.total += t.untraced + len(t.legs)
	}
}

// hostOverFloor is host − floor per leg, per run, and its median.
func (lr legRuns) hostOverFloor() legs {
	var extra []legs
	for i := range min(len(lr.host), len(lr.floor)) {
		extra = append(extra, lr.host[i].minus(lr.floor[i]))
	}
	return medianLegs(extra)
}

// The legs as the rows name them.
const (
	wholeLegs = "request leg (the client sends → the model's handler begins) / model (→ its answer written) / answer leg (→ the client has all of it)"
	firstLegs = "request leg (the client sends → the model's handler begins) / model (→ its first chunk written) / answer leg (→ the client's first byte)"
)

// rows are the series' two rows: each path's legs, then the host's extra
// over the floor. what names the series, split its legs.
func (lr legRuns) rows(num, what, split string) []row {
	result := fmt.Sprintf("host %s; direct %s; floor %s",
		medianLegs(lr.host).microseconds(), medianLegs(lr.direct).microseconds(), medianLegs(lr.floor).microseconds())
	if lr.untraced > 0 {
		result += fmt.Sprintf(" (%d of %d requests not split: not one completion each)", lr.untraced, lr.total)
	}
	return []row{
		{num, what + ", per leg on the bench's one clock (sequential requests, each leg's p50): " + split, result, noTarget, noTarget},
		{num, "… added by the host over the floor, per leg (host − floor, per run): request / model / answer", lr.hostOverFloor().signed(), noTarget, noTarget},
	}
}
