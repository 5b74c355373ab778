package status

import (
	"fmt"
	"time"
)

// duration is d as the page writes it: "45 s", "6 min 30 s", "1 h 5 min";
// whole seconds, rounded down.
func duration(d time.Duration) string {
	s := int64(max(0, d) / time.Second)
	h, m := s/3600, s/60%60
	s %= 60
	switch {
	case h > 0:
		return fmt.Sprintf("%d h %d min", h, m)
	case m > 0 && s > 0:
		return fmt.Sprintf("%d min %d s", m, s)
	case m > 0:
		return fmt.Sprintf("%d min", m)
	}
	return fmt.Sprintf("%d s", s)
}

// clockTime is t as "12:26:25 UTC", date-prefixed ("2026-09-09 12:26:25
// UTC") when it is not on now's UTC day.
func clockTime(t, now time.Time) string {
	t, now = t.UTC(), now.UTC()
	if t.Year() == now.Year() && t.YearDay() == now.YearDay() {
		return t.Format("15:04:05") + " UTC"
	}
	return t.Format("2006-01-02 15:04:05") + " UTC"
}
