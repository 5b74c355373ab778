package app

import (
	"slices"

	"github.com/wakeonchat/wakeonchat/host/metrics"
	"github.com/wakeonchat/wakeonchat/host/wake"
	"github.com/wakeonchat/wakeonchat/machines"
)

// startMetrics creates the host's metrics: a series for every configured
// pod (seedMetrics sets its state from its stored record), then kept by
// every change the coordinator stores.
func (a *App) startMetrics(pod *machines.Pod) {
	a.metrics = metrics.New(metrics.Options{Pods: a.configuredPods(), States: pod.Table().States})
	a.onChange = append(a.onChange, func(c wake.Change) { a.metrics.RecordChanged(c.Before, c.After) })
}

// configuredPods are the pods the providers name, in config order.
func (a *App) configuredPods() []string {
	var pods []string
	for _, p := range a.cfg.Providers {
		if p.Pod != "" && !slices.Contains(pods, p.Pod) {
			pods = append(pods, p.Pod)
		}
	}
	return pods
}

// seedMetrics sets each configured pod's state from recs, the stored
// records at start-up; a pod with none stays asleep, as metrics.New set it.
func (a *App) seedMetrics(recs []machines.Record) {
	pods := a.configuredPods()
	for _, rec := range recs {
		if slices.Contains(pods, rec.Pod) {
			a.metrics.PodRecord(rec)
		}
	}
}

// changed is the coordinator's Config.Changed: each change goes to every
// one of onChange, in order. It runs under the pod's lock; none of them
// blocks.
func (a *App) changed(c wake.Change) {
	for _, f := range a.onChange {
		f(c)
	}
}
