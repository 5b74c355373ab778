package app

import (
	"fmt"
	"slices"

	"github.com/wakeonchat/wakeonchat/host/metrics"
	"github.com/wakeonchat/wakeonchat/host/wake"
	"github.com/wakeonchat/wakeonchat/machines"
)

// startMetrics creates the host's metrics: a series for every configured
// pod, its state set from its stored record, then kept by every change the
// coordinator stores.
func (a *App) startMetrics(pod *machines.Pod) error {
	var pods []string
	for _, p := range a.cfg.Providers {
		if p.Pod != "" && !slices.Contains(pods, p.Pod) {
			pods = append(pods, p.Pod)
		}
	}
	a.metrics = metrics.New(metrics.Options{Pods: pods, States: pod.Table().States})
	for _, name := range pods {
		rec, err := a.store.Record(name)
		if err != nil {
			return fmt.Errorf("reading the record of pod %s: %w", name, err)
		}
		a.metrics.PodRecord(rec)
	}
	a.onChange = append(a.onChange, func(c wake.Change) { a.metrics.RecordChanged(c.Before, c.After, c.Event.At) })
	return nil
}

// changed is the coordinator's Config.Changed: each change goes to every
// one of onChange, in order. It runs under the pod's lock; none of them
// blocks.
func (a *App) changed(c wake.Change) {
	for _, f := range a.onChange {
		f(c)
	}
}
