package main

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/wakeonchat/wakeonchat/host/sim"
)

// µs is n microseconds.
func µs(n int) time.Duration { return time.Duration(n) * time.Microsecond }

var cmpLegs = cmp.AllowUnexported(legs{})

func TestSplit(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC)
	at := func(n int) time.Time { return t0.Add(µs(n)) }
	tests := []struct {
		name                 string
		sent, began, written int // µs after t0
		in                   int
		want                 legs
	}{
		{"through a proxy", 0, 120, 135, 290, legs{µs(120), µs(15), µs(155)}},
		{"direct", 0, 30, 42, 70, legs{µs(30), µs(12), µs(28)}},
		{"a model that answers in no time", 10, 60, 60, 100, legs{µs(50), 0, µs(40)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := split(span{at(tt.sent), at(tt.in)}, sim.AnswerTimes{Began: at(tt.began), Written: at(tt.written)})
			if diff := cmp.Diff(tt.want, got, cmpLegs); diff != "" {
				t.Errorf("split (-want +got):\n%s", diff)
			}
			if sum, whole := got.request+got.model+got.answer, at(tt.in).Sub(at(tt.sent)); sum != whole {
				t.Errorf("legs add up to %v, want the request's %v", sum, whole)
			}
		})
	}
}

func TestLegsP50(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		xs   []legs
		want legs
	}{
		{"none", nil, legs{}},
		{"one", []legs{{µs(1), µs(2), µs(3)}}, legs{µs(1), µs(2), µs(3)}},
		{
			// Each leg's p50 on its own: the 2nd smallest of each of four,
			// here from three different requests.
			"each leg on its own",
			[]legs{{µs(400), µs(10), µs(90)}, {µs(100), µs(30), µs(80)}, {µs(200), µs(20), µs(300)}, {µs(300), µs(40), µs(70)}},
			legs{µs(200), µs(20), µs(80)},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if diff := cmp.Diff(tt.want, legsP50(tt.xs), cmpLegs); diff != "" {
				t.Errorf("legsP50 (-want +got):\n%s", diff)
			}
		})
	}
}

// TestTraced: a request is split at the one completion the model answered
// while it ran; one that made none, or two, is counted apart.
func TestTraced(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC)
	answer := func(began, written int) sim.AnswerTimes {
		return sim.AnswerTimes{Began: t0.Add(µs(began)), Written: t0.Add(µs(written))}
	}
	w := &answerWatch{}
	var tr traced

	// Answered once: split.
	mark := w.mark()
	w.observe(answer(100, 110))
	tr.add(w, mark, span{t0, t0.Add(µs(200))})

	// Not answered (a failure the host answered itself): not split.
	mark = w.mark()
	tr.add(w, mark, span{t0, t0.Add(µs(300))})

	// Answered twice (a retry): not split, whichever came last.
	mark = w.mark()
	w.observe(answer(50, 60))
	w.observe(answer(150, 160))
	tr.add(w, mark, span{t0, t0.Add(µs(400))})

	// Once again.
	mark = w.mark()
	w.observe(answer(40, 45))
	tr.add(w, mark, span{t0, t0.Add(µs(90))})

	want := []legs{{µs(100), µs(10), µs(90)}, {µs(40), µs(5), µs(45)}}
	if diff := cmp.Diff(want, tr.legs, cmpLegs); diff != "" {
		t.Errorf("legs (-want +got):\n%s", diff)
	}
	if tr.untraced != 2 {
		t.Errorf("untraced = %d, want 2", tr.untraced)
	}
}

// TestLegRunsRows: each path's legs are the median over runs of each run's
// p50s, and the host's extra over the floor is taken per run, then its
// median.
func TestLegRunsRows(t *testing.T) {
	t.Parallel()
	series := func(l ...legs) traced { return traced{legs: l} }
	var lr legRuns
	// Run 1: host 300/20/200, floor 150/20/120, direct 40/20/30.
	lr.add(pathLegs{
		host:   series(legs{µs(300), µs(20), µs(200)}),
		direct: series(legs{µs(40), µs(20), µs(30)}),
		floor:  series(legs{µs(150), µs(20), µs(120)}),
	})
	// Run 2, slower throughout, with one host request not split.
	lr.add(pathLegs{
		host:   traced{legs: []legs{{µs(500), µs(30), µs(300)}}, untraced: 1},
		direct: series(legs{µs(60), µs(30), µs(50)}),
		floor:  series(legs{µs(250), µs(30), µs(180)}),
	})
	// Run 3, the floor's answer leg slower than the host's.
	lr.add(pathLegs{
		host:   series(legs{µs(320), µs(22), µs(150)}),
		direct: series(legs{µs(42), µs(22), µs(32)}),
		floor:  series(legs{µs(160), µs(21), µs(160)}),
	})
	got := lr.rows("2", "the ready path, split at the model", wholeLegs)
	want := []row{
		{"2", "the ready path, split at the model, per leg on the bench's one clock (sequential requests, each leg's p50): " + wholeLegs,
			"host 320 / 22 / 200 µs; direct 42 / 22 / 32 µs; floor 160 / 21 / 160 µs (1 of 10 requests not split: not one completion each)",
			noTarget, noTarget},
		// Per run: +150/+0/+80, +250/+0/+120, +160/+1/-10.
		{"2", "… added by the host over the floor, per leg (host − floor, per run): request / model / answer", "+160 / +0 / +80 µs", noTarget, noTarget},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("rows (-want +got):\n%s", diff)
	}
}
