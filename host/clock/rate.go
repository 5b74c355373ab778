package clock

// Rate is how fast c runs against the wall clock, for whoever shows a
// time that moves on its own (the status page's elapsed times): 1 for
// Real, the factor of Scaled, 0 for a test's fake clock (it moves only when told to).
// A Clock that has a method Rate() float64 says its own; any other is
// taken to run like the wall clock.
func Rate(c Clock) float64 {
	if r, ok := c.(interface{ Rate() float64 }); ok {
		return r.Rate()
	}
	return 1
}

func (realClock) Rate() float64 { return 1 }
func (s *scaled) Rate() float64 { return s.factor }
