package status

import (
	"math"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/wakeonchat/wakeonchat/machines"
)

func TestTickStep(t *testing.T) {
	for top, want := range map[time.Duration]time.Duration{
		time.Minute: time.Minute, 5 * time.Minute: time.Minute, 9 * time.Minute: 2 * time.Minute,
		10 * time.Minute: 2 * time.Minute, 11 * time.Minute: 5 * time.Minute, 35 * time.Minute: 10 * time.Minute,
		2 * time.Hour: 30 * time.Minute, 3 * time.Hour: time.Hour,
	} {
		if got := tickStep(top); got != want {
			t.Errorf("tickStep(%v) = %v, want %v", top, got, want)
		}
	}
}

// The chart's bars: heights in proportion to the phases on one scale, in
// the order of the log, a mark on each wake that never became ready, a dot
// over each ready one.
func TestDrawChart(t *testing.T) {
	wakes := []machines.Wake{
		wake(0, 6*time.Minute, 3*time.Minute, "ready", true),      // 9 min
		wake(time.Hour, 0, 0, "start-failed", false),              // nothing measured
		wake(2*time.Hour, 8*time.Minute, 0, "never-ready", false), // up, never ready
		wake(3*time.Hour, 2*time.Minute, 0, machines.WakeSuperseded, false),
	}
	c := drawChart(wakes, machines.Estimate{Wake: 9 * time.Minute, Wakes: 1})
	// The scale is 10 min (9 rounded up to the 2-min ticks): 12.2 units a
	// minute.
	perMin := (plotBottom - plotTop) / 10
	type shape struct {
		BootH, LoadH float64
		Mark, Dot    bool
		MarkTone     string
		Served       bool
	}
	var got []shape
	for _, b := range c.Bars {
		got = append(got, shape{b.BootH, b.LoadH, b.Mark, b.Dot, b.MarkTone, b.Served})
	}
	want := []shape{
		{BootH: 6 * perMin, LoadH: 3 * perMin, Dot: true, Served: true},
		{Mark: true, MarkTone: "bad"},
		{BootH: 8 * perMin, Mark: true, MarkTone: "bad"},
		{BootH: 2 * perMin, Mark: true, MarkTone: "idle"},
	}
	if diff := cmp.Diff(want, got, cmpopts.EquateApprox(0, 1e-9)); diff != "" {
		t.Errorf("bars (-want +got):\n%s", diff)
	}
	for i := 1; i < len(c.Bars); i++ {
		if c.Bars[i].X <= c.Bars[i-1].X {
			t.Errorf("bar %d at x %v, not right of bar %d at %v", i, c.Bars[i].X, i-1, c.Bars[i-1].X)
		}
	}
	if len(c.Ticks) != 6 || c.Ticks[5].Label != "10 min" || c.Ticks[5].Y != plotTop {
		t.Errorf("ticks %+v, want 0 to 10 min by 2, the last at the top", c.Ticks)
	}
	if math.Abs(c.EstimateY-(plotBottom-9*perMin)) > 1e-9 {
		t.Errorf("estimate line at %v, want at 9 min", c.EstimateY)
	}
	// Twenty wakes fill the plot and stay inside it.
	var many []machines.Wake
	for i := range ChartWakes {
		many = append(many, wake(time.Duration(i)*time.Hour, 40*time.Minute, 5*time.Minute, "ready", false))
	}
	c = drawChart(many, machines.Estimate{Wake: 9 * time.Minute})
	last := c.Bars[len(c.Bars)-1]
	if c.Bars[0].X < plotLeft || last.X+last.W > plotRight || last.LoadY < plotTop || last.DotY-dotR < 0 {
		t.Errorf("bars outside the plot: first %+v, last %+v", c.Bars[0], last)
	}
}

func TestDrawTimeline(t *testing.T) {
	now := t0.Add(7 * time.Minute)
	up := machines.Record{WakeRequestedAt: t0, RunningAt: t0.Add(5 * time.Minute)}
	down := machines.Record{WakeRequestedAt: t0}
	// The span is 1.1 × the larger of the estimate and the elapsed time.
	tests := []struct {
		name string
		rec  machines.Record
		est  time.Duration
		now  time.Time
		want timeline
	}{
		{"up, within the estimate", up, 10 * time.Minute, now, timeline{
			Boot: segment{0, 500 / 11.0}, Load: segment{500 / 11.0, 200 / 11.0}, Rest: segment{700 / 11.0, 300 / 11.0}, EstimateX: 1000 / 11.0}},
		{"booting", down, 10 * time.Minute, now, timeline{
			Boot: segment{0, 700 / 11.0}, Rest: segment{700 / 11.0, 300 / 11.0}, EstimateX: 1000 / 11.0}},
		{"past the estimate", up, 5 * time.Minute, now.Add(3 * time.Minute), timeline{
			Boot: segment{0, 500 / 11.0}, Load: segment{500 / 11.0, 500 / 11.0}, EstimateX: 500 / 11.0}},
	}
	for _, tt := range tests {
		got := drawTimeline(tt.rec, tt.est, tt.now)
		if diff := cmp.Diff(tt.want, got, cmpopts.EquateApprox(0, 1e-9)); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tt.name, diff)
		}
	}
}
