// Command wakehost serves wake-on-chat: POST /api/chat in front of a
// self-hosted model on a GPU pod that sleeps when idle.
//
//	wakehost [-config wake.toml] [-listen ADDR] [-simulate [-scale 27]] [-log-format text|json] [-shutdown-grace D]
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
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "wakehost:", err)
		os.Exit(1)
	}
}

func run() error {
	configPath := flag.String("config", "wake.toml", "path of the config file")
	listen := flag.String("listen", "", "address to listen on (overrides [server] listen)")
	simulate := flag.Bool("simulate", false, "run against the built-in simulator of a conductor and a model")
	scale := flag.Float64("scale", 27, "with -simulate: how much faster than real time the host and simulator run (27 makes a 9-minute wake take 20 s)")
	logFormat := flag.String("log-format", "text", "log format: text or json")
	grace := flag.Duration("shutdown-grace", 0, "how long in-flight turns may take to finish on SIGINT/SIGTERM (0: completion_timeout + 2 × (lookup_timeout + 1s) + 5s, 133s with the defaults)")
	flag.Parse()
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
