package config

import (
	"fmt"
	"time"
)

// Duration is a time.Duration written in wake.toml as a Go duration string,
// such as "15m", "90s" or "1h30m".
type Duration struct{ time.Duration }

// UnmarshalTOML takes a duration string; any other TOML value is an error
// naming its type (a bare 15 is not read as 15 nanoseconds).
func (d *Duration) UnmarshalTOML(v any) error {
	s, ok := v.(string)
	if !ok {
		return fmt.Errorf("want a duration string such as \"15m\", got %s", describe(v))
	}
	return d.UnmarshalText([]byte(s))
}

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
