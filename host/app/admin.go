package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/wakeonchat/wakeonchat/host/chat"
	"github.com/wakeonchat/wakeonchat/host/internal/jsonhttp"
	"github.com/wakeonchat/wakeonchat/host/status"
)

// The operators' surface: what [server] admin_listen moves to an address
// of its own. It is GET /metrics and the status page (GET / and its parts
// under /status/, status.IsPath), mounted on adminRoutes and named by
// isAdminPath. On an address of its own it also serves the pod event
// streams, which the page follows.

// isAdminPath reports whether a request for p goes to the operators'
// surface when the main listener serves it.
func isAdminPath(p string) bool {
	return p == "/metrics" || status.IsPath(p)
}

// adminRoutes serves the operators' surface. Every answer but the metrics
// themselves is JSON, like the main listener's.
func (a *App) adminRoutes() http.Handler {
	mux := http.NewServeMux()
	metrics := a.metrics.Handler()
	mux.HandleFunc("/metrics", func(w http.ResponseWriter, r *http.Request) {
		if !jsonhttp.Allow(w, r, http.MethodGet) {
			return
		}
		metrics.ServeHTTP(w, r)
	})
	mux.Handle("/{$}", a.page)
	mux.Handle(status.Prefix, a.page)
	// The page follows each pod's event stream where it was loaded from. On
	// the main listener this path never comes here (it is not isAdminPath):
	// the API serves it.
	mux.Handle("/api/pods/{name}/events", a.server.Handler())
	return jsonhttp.Guard(mux, func(w http.ResponseWriter, r *http.Request) {
		jsonhttp.Error(w, http.StatusNotFound, jsonhttp.NoEndpoint(r, adminServes))
	})
}

// adminServes is what a 404 on admin_listen says the address serves.
const adminServes = "this address serves GET /metrics, the status page (GET /, its parts under /status/) and the pod event streams (GET /api/pods/{name}/events)"

// listenAdmin opens [server] admin_listen, when it is set, and builds the
// server that serves the operators' surface there.
func (a *App) listenAdmin() error {
	addr := a.cfg.Server.AdminListen
	if addr == "" {
		return nil
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("server.admin_listen: %w", err)
	}
	a.adminLn = chat.Listener(ln, 0)
	a.admin = &http.Server{
		Handler:           a.adminRoutes(),
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      30 * time.Second,
		IdleTimeout:       90 * time.Second,
		ErrorLog:          slog.NewLogLogger(a.log.Handler(), slog.LevelWarn),
	}
	return nil
}

// AdminAddr is the address of the admin listener ([server] admin_listen),
// or "" when the main listener serves the operators' surface.
func (a *App) AdminAddr() string {
	if a.adminLn == nil {
		return ""
	}
	return a.adminLn.Addr().String()
}

// shutdownAdmin stops the admin server after the main one: it kept
// serving the metrics while the turns finished. When ctx has ended (the
// grace ran out) it is closed at once.
func (a *App) shutdownAdmin(ctx context.Context) error {
	if a.admin == nil {
		return nil
	}
	if ctx.Err() == nil {
		if err := a.admin.Shutdown(ctx); err == nil || ctx.Err() == nil {
			return wrapAdmin(err)
		}
	}
	return wrapAdmin(a.admin.Close())
}

func wrapAdmin(err error) error {
	if err == nil || errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return fmt.Errorf("admin http: %w", err)
}
