package config

import (
	"fmt"
	"time"
)

// Duration is a time.Duration written in wake.toml as a Go duration string,
// such as "15m", "90s" or "1h30m".
type Duration struct{ time.Duration }

// UnmarshalText parses a Go duration string; the error quotes the bad value.
func (d *Duration) UnmarshalText(text []byte) error {
	v, err := time.ParseDuration(string(text))
	if err != nil {
		return fmt.Errorf("invalid duration %q: want a number with a unit, such as \"15m\" or \"90s\"", text)
	}
	d.Duration = v
	return nil
}

// MarshalText writes the duration as time.Duration.String does ("15m0s").
func (d Duration) MarshalText() ([]byte, error) { return []byte(d.Duration.String()), nil }
