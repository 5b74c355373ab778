package clock

import "testing"

// wall is a Clock that does not say its rate.
type wall struct{ Clock }

func TestRate(t *testing.T) {
	tests := []struct {
		name string
		c    Clock
		want float64
	}{
		{"real", Real(), 1},
		{"scaled", Scaled(27), 27},
		{"scaled at most 1 is the wall clock", Scaled(0.5), 1},
		{"one that does not say", wall{Real()}, 1},
	}
	for _, tt := range tests {
		if got := Rate(tt.c); got != tt.want {
			t.Errorf("%s: Rate %v, want %v", tt.name, got, tt.want)
		}
	}
}
