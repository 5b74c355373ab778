// Command wakehost serves wake-on-chat: POST /api/chat in front of a
// self-hosted model on a GPU pod that sleeps when idle.
//
//	wakehost [-config wake.toml] [-listen ADDR] [-simulate [-scale 27]] [-log-format text|json] [-shutdown-grace D]
//	wakehost check [-config wake.toml]
//	wakehost plugin NAME
//
// The first form runs the host. check checks a config as the host would
// before it starts, opening nothing, and exits 0 printing one line or 1
// printing every problem (docs/operations.md). plugin serves one of the
// plugins built into wakehost (wake-plugin-conductor,
// wake-plugin-provider-openai): the host runs its own executable so, as a
// go-plugin subprocess, for a plugin with no file in plugins.dir; it is
// not meant to be run by hand.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/wakeonchat/wakeonchat/host/app"
	"github.com/wakeonchat/wakeonchat/host/clock"
)

func main() {
	args := os.Args[1:]
	if len(args) > 0 {
		switch args[0] {
		case app.PluginMode:
			// Nothing may reach stdout before go-plugin's handshake line.
			if err := servePlugin(args[1:]); err != nil {
				fmt.Fprintln(os.Stderr, "wakehost plugin:", err)
				os.Exit(1)
			}
			return
		case "check":
			os.Exit(check(args[1:], os.Stdout, os.Stderr))
		}
	}
	if err := run(args); err != nil {
		fmt.Fprintln(os.Stderr, "wakehost:", err)
		os.Exit(1)
	}
}

// servePlugin is `wakehost plugin NAME`.
func servePlugin(args []string) error {
	if len(args) != 1 {
		return fmt.Errorf("want one plugin name (one of %q), not %q", app.Builtins(), args)
	}
	return app.ServePlugin(args[0])
}

func run(args []string) error {
	configPath := flag.String("config", "wake.toml", "path of the config file")
	listen := flag.String("listen", "", "address to listen on (overrides [server] listen)")
	simulate := flag.Bool("simulate", false, "run against the built-in simulator of a conductor and a model")
	scale := flag.Float64("scale", 27, "with -simulate: how much faster than real time the host and simulator run (27 makes a 9-minute wake take 20 s)")
	logFormat := flag.String("log-format", "text", "log format: text or json")
	grace := flag.Duration("shutdown-grace", 0, "how long in-flight turns may take to finish on SIGINT/SIGTERM (0: completion_timeout + 2 × (lookup_timeout + 1s) + 5s, 133s with the defaults)")
	flag.CommandLine.Parse(args) // ExitOnError
	if flag.NArg() > 0 {
		return fmt.Errorf("unexpected arguments: %q", flag.Args())
	}
	if *grace < 0 {
		return fmt.Errorf("-shutdown-grace must not be negative, not %v", *grace)
	}

	// Under -simulate the host and the simulator share one scaled clock,
	// and every log record carries its time as sim_time.
	var clk clock.Clock
	var simNow func() time.Time
	if *simulate {
		clk = clock.Scaled(*scale)
		simNow = clk.Now
	}
	log, err := newLogger(os.Stderr, *logFormat, simNow)
	if err != nil {
		return err
	}
	slog.SetDefault(log)

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	a, err := app.New(ctx, app.Options{
		ConfigPath: *configPath, Listen: *listen, Simulate: *simulate, Scale: *scale, Logger: log, Clock: clk,
		Executable: executable(),
	})
	if err != nil {
		return err
	}
	if *grace == 0 {
		*grace = a.ShutdownGrace()
	}
	served := make(chan error, 1)
	go func() { served <- a.Serve() }()
	select {
	case err = <-served:
	case <-ctx.Done():
		log.Info("shutting down", "grace", *grace)
	}
	sctx, cancel := context.WithTimeout(context.Background(), *grace)
	defer cancel()
	if serr := a.Shutdown(sctx); serr != nil && err == nil {
		err = serr
	}
	return err
}

// newLogger is wakehost's logger: text or JSON lines on w; with simNow (the
// simulated clock, under -simulate), each record also carries sim_time.
func newLogger(w io.Writer, format string, simNow func() time.Time) (*slog.Logger, error) {
	var h slog.Handler
	switch format {
	case "text":
		h = slog.NewTextHandler(w, nil)
	case "json":
		h = slog.NewJSONHandler(w, nil)
	default:
		return nil, fmt.Errorf("-log-format must be text or json, not %q", format)
	}
	if simNow != nil {
		h = newSimTimeHandler(h, simNow)
	}
	return slog.New(h), nil
}
