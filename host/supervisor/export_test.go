package supervisor

import "time"

// QuickRelaunch is s with a relaunch schedule that starts at 10ms instead
// of firstRelaunchDelay, and doubles as the real one does: for the tests
// of real plugin processes, which crash them several times and would
// otherwise wait out the real schedule's 100, 200 and 400 ms. The real
// schedule is tested on a fake clock (relaunch_test.go).
func QuickRelaunch(s Spec) Spec {
	s.firstRelaunch = 10 * time.Millisecond
	return s
}
