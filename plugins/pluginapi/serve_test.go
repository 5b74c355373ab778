package pluginapi_test

import (
	"testing"

	"github.com/wakeonchat/wakeonchat/plugins/pluginapi"
)

// NewLogger writes from the level the host keeps, and from debug when the
// host named none or no level.
func TestNewLoggerLevel(t *testing.T) {
	for _, tt := range []struct {
		env         string
		debug, info bool
	}{
		{"", true, true},
		{"debug", true, true},
		{"info", false, true},
		{"warn", false, false},
		{"off", false, false},
		{"loud", true, true},
	} {
		t.Run(tt.env, func(t *testing.T) {
			t.Setenv(pluginapi.EnvLogLevel, tt.env)
			l := pluginapi.NewLogger()
			if l.IsDebug() != tt.debug || l.IsInfo() != tt.info {
				t.Errorf("%s=%q: debug %v, info %v; want %v, %v", pluginapi.EnvLogLevel, tt.env, l.IsDebug(), l.IsInfo(), tt.debug, tt.info)
			}
		})
	}
}
