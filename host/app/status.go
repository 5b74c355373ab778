package app

import (
	"net/http"
	"time"

	"github.com/wakeonchat/wakeonchat/host/status"
	"github.com/wakeonchat/wakeonchat/machines"
)

// statusPage is the operators' status page (host/status): GET / and its
// parts under /status/ (status.IsPath), on the operators' surface
// (adminRoutes: the main listener, or [server] admin_listen). It reads the
// pods from the event hub (no conductor lookup), the wake log from the
// store and the plugins' health from their supervisors; pod is the
// machine, for the reply a turn would get; refresh is Options.StatusRefresh.
func (a *App) statusPage(pod *machines.Pod, refresh time.Duration) http.Handler {
	plugins := []status.Plugin{{For: "conductor", Health: a.gpus[0]}}
	for i, b := range a.backends[1:] {
		plugins = append(plugins, status.Plugin{For: "backend " + b.Name, Health: a.gpus[i+1]})
	}
	for i, p := range a.cfg.Providers {
		plugins = append(plugins, status.Plugin{For: "provider " + p.Name, Health: a.provs[i]})
	}
	return status.New(status.Config{
		Names: a.configuredPods(), Pods: a.hub, Policy: pod, Estimate: a.coord.Estimate, Wakes: a.store.WakeLog,
		Plugins: plugins, Clock: a.clock, Logger: a.log, Refresh: refresh,
	}).Handler()
}
