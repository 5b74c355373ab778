// Command wakehost serves wake-on-chat: POST /api/chat in front of a
// self-hosted model on a GPU pod that sleeps when idle.
//
//	wakehost [-config wake.toml] [-listen ADDR] [-simulate [-scale 27]] [-log-format text|json] [-shutdown-grace D]
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/wakeonchat/wakeonchat/host/app"
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

	var h slog.Handler
	switch *logFormat {
	case "text":
		h = slog.NewTextHandler(os.Stderr, nil)
	case "json":
		h = slog.NewJSONHandler(os.Stderr, nil)
	default:
		return fmt.Errorf("-log-format must be text or json, not %q", *logFormat)
	}
	log := slog.New(h)
	slog.SetDefault(log)

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	a, err := app.New(ctx, app.Options{
		ConfigPath: *configPath, Listen: *listen, Simulate: *simulate, Scale: *scale, Logger: log,
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
