package clock

import "time"

// scaled is a clock that runs factor times faster than the wall clock,
// starting at the wall clock's now. It lets a demo run a 9-minute wake in 20
// seconds while every reply still counts real-world minutes.
type scaled struct {
	factor    float64
	startWall time.Time
}

// Scaled returns a clock that runs factor times faster than the wall clock
// (factor <= 1 is the wall clock). Now starts at the wall clock's now; After
// waits d of this clock's time, d/factor of the wall clock's.
func Scaled(factor float64) Clock {
	if factor <= 1 {
		return Real()
	}
	return &scaled{factor: factor, startWall: time.Now()}
}

func (s *scaled) Now() time.Time {
	elapsed := time.Since(s.startWall)
	return s.startWall.Add(time.Duration(float64(elapsed) * s.factor))
}

func (s *scaled) After(d time.Duration) <-chan time.Time {
	out := make(chan time.Time, 1)
	time.AfterFunc(time.Duration(float64(d)/s.factor), func() { out <- s.Now() })
	return out
}
