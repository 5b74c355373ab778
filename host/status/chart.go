package status

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/wakeonchat/wakeonchat/machines"
)

// The geometry of the server-drawn SVGs, in their viewBox units.

// timeline is the wake in progress as one bar (viewBox 0 0 100 10, drawn
// to the page's width): booting from the request until the pod was seen up
// (or until now), loading from then until now, and what the estimate
// expects beyond now; a line marks the estimate.
type timeline struct {
	Boot, Load, Rest segment
	EstimateX        float64
}

// segment is one part of the timeline bar; W is 0 for none.
type segment struct{ X, W float64 }

func drawTimeline(rec machines.Record, est time.Duration, now time.Time) timeline {
	elapsed := max(0, now.Sub(rec.WakeRequestedAt))
	span := float64(max(est, elapsed, time.Minute)) * 1.1
	x := func(d time.Duration) float64 { return math.Min(100, 100*float64(max(0, d))/span) }
	var t timeline
	nowX := x(elapsed)
	if rec.RunningAt.IsZero() {
		t.Boot = segment{0, nowX}
	} else {
		up := x(rec.RunningAt.Sub(rec.WakeRequestedAt))
		t.Boot = segment{0, up}
		t.Load = segment{up, math.Max(0, nowX-up)}
	}
	if estX := x(est); estX > nowX {
		t.Rest = segment{nowX, estX - nowX}
	}
	t.EstimateX = x(est)
	return t
}

// The chart's viewBox is 0 0 chartW chartH; bars stand on the plot's
// bottom, one slot per wake, ChartWakes slots, the oldest on the left.
const (
	chartW, chartH         = 320.0, 150.0
	plotLeft, plotRight    = 40.0, 314.0
	plotTop, plotBottom    = 10.0, 132.0
	barShare               = 0.64 // of a slot
	markH                  = 4.0  // the mark of a wake that never became ready
	dotR                   = 2.6
	minScale               = time.Minute
	chartLabelX, axisLabel = plotLeft - 4, plotBottom + 13
)

// chart is the last wakes as a stacked bar chart: per wake, booting
// (request to the pod up) under loading (up to the model ready); a mark on
// the bar of a wake that never became ready, coloured by its outcome; a
// dot over each ready wake, filled when it served somebody; and a dashed
// line at the estimate.
type chart struct {
	Empty     bool
	Ticks     []tick
	Bars      []bar
	EstimateY float64
	Estimate  string
	W, H      float64
	AxisY     float64
	LabelX    float64
	PlotLeft  float64
	PlotRight float64
	Baseline  float64
}

type tick struct {
	Y     float64
	Label string
}

type bar struct {
	Title        string // the wake in words: the bar's tooltip
	X, W         float64
	BootY, BootH float64
	LoadY, LoadH float64
	Mark         bool // never ready: a mark on top, coloured by MarkTone
	MarkY        float64
	MarkTone     string
	Dot          bool // ready: a dot over the bar, filled when Served
	DotX, DotY   float64
	Served       bool
}

func drawChart(wakes []machines.Wake, est machines.Estimate) chart {
	c := chart{W: chartW, H: chartH, AxisY: axisLabel, LabelX: chartLabelX,
		PlotLeft: plotLeft, PlotRight: plotRight, Baseline: plotBottom, Empty: len(wakes) == 0}
	top := max(est.Wake, minScale)
	for _, w := range wakes {
		b, _ := w.Booting()
		l, _ := w.Loading()
		top = max(top, b+l)
	}
	step := tickStep(top)
	top = time.Duration(math.Ceil(float64(top)/float64(step))) * step
	y := func(d time.Duration) float64 { return plotBottom - (plotBottom-plotTop)*float64(d)/float64(top) }
	for d := time.Duration(0); d <= top; d += step {
		c.Ticks = append(c.Ticks, tick{Y: y(d), Label: fmt.Sprintf("%d min", int(d/time.Minute))})
	}
	c.EstimateY, c.Estimate = y(est.Wake), "estimate "+duration(est.Wake)
	slot := (plotRight - plotLeft) / ChartWakes
	for i, w := range wakes {
		b := bar{Title: wakeTitle(w), W: slot * barShare}
		b.X = plotLeft + float64(i)*slot + (slot-b.W)/2
		boot, _ := w.Booting()
		load, _ := w.Loading()
		b.BootY, b.BootH = y(boot), plotBottom-y(boot)
		b.LoadY, b.LoadH = y(boot+load), y(boot)-y(boot+load)
		topY := b.LoadY
		if w.Outcome == string(machines.Ready) {
			b.Dot, b.Served = true, w.Served
			b.DotX, b.DotY = b.X+b.W/2, topY-dotR-1.5
		} else {
			b.Mark, b.MarkY, b.MarkTone = true, topY-markH, "bad"
			if w.Outcome == machines.WakeSuperseded {
				b.MarkTone = "idle"
			}
		}
		c.Bars = append(c.Bars, b)
	}
	return c
}

// tickStep is the step between the chart's gridlines for a scale of top:
// the smallest of 1, 2, 5, 10, 15, 30 and 60 minutes giving at most 5
// steps.
func tickStep(top time.Duration) time.Duration {
	for _, m := range []time.Duration{1, 2, 5, 10, 15, 30} {
		if top <= 5*m*time.Minute {
			return m * time.Minute
		}
	}
	return time.Hour
}

// wakeTitle is a wake in words, for its bar's tooltip.
func wakeTitle(w machines.Wake) string {
	parts := []string{"requested " + w.RequestedAt.UTC().Format("2006-01-02 15:04:05") + " UTC", outcome(w.Outcome)}
	if d, ok := w.Booting(); ok {
		parts = append(parts, "booting "+duration(d))
	}
	if d, ok := w.Loading(); ok {
		parts = append(parts, "loading "+duration(d))
	}
	if w.Served {
		parts = append(parts, "served a turn")
	} else if w.Outcome == string(machines.Ready) {
		parts = append(parts, "served nobody")
	}
	return strings.Join(parts, "; ")
}
