package pluginapi

import (
	"os"

	"github.com/hashicorp/go-hclog"
)

// Main is a plugin's whole main: it makes the plugin's logger (NewLogger),
// runs serve with it and, when serve returns an error (its configuration
// from the environment is invalid), logs "invalid configuration" with the
// error and exits with status 1. serve reads its configuration and then
// serves (ServeGPU, ServeProvider), returning nil once the host stopped it.
//
// A plugin binary's main is pluginapi.Main(pkg.Serve); wakehost calls the
// same for a plugin built into it (`wakehost plugin NAME`).
func Main(serve func(hclog.Logger) error) {
	logger := NewLogger()
	if err := serve(logger); err != nil {
		logger.Error("invalid configuration", "error", err)
		os.Exit(1)
	}
}
