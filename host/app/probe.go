package app

import (
	"context"
	"fmt"
	"strings"

	"github.com/wakeonchat/wakeonchat/host/supervisor"
	"github.com/wakeonchat/wakeonchat/host/wake"
	"github.com/wakeonchat/wakeonchat/plugins/pluginapi"
)

// probers is how the wake watch probes a pod's model: through the provider
// plugin of the first provider in wake.toml whose model is on that pod (the
// one whose resolver GET /api/pods/{name} reads), at that provider's path
// under the pod's proxy URL.
type probers map[string]prober

type prober struct {
	provider *supervisor.Provider
	path     string
}

var _ wake.Prober = probers(nil)

// probers maps every configured pod to its prober. It runs after
// startPlugins.
func (a *App) probers() probers {
	ps := probers{}
	for i, p := range a.cfg.Providers {
		if _, ok := ps[p.Pod]; p.Pod != "" && !ok {
			ps[p.Pod] = prober{provider: a.provs[i], path: p.Path}
		}
	}
	return ps
}

// Probe probes the model of pod behind proxyURL once. A pod no provider
// serves is an error (the watch follows configured pods only).
func (ps probers) Probe(ctx context.Context, pod, proxyURL string) (pluginapi.ProbeResult, error) {
	p, ok := ps[pod]
	if !ok {
		return pluginapi.ProbeResult{}, fmt.Errorf("no provider serves pod %s", pod)
	}
	return p.provider.Probe(ctx, joinPath(proxyURL, p.path))
}

// joinPath appends path to a proxy URL with exactly one slash between, as
// the resolvers make a provider's endpoint.
func joinPath(proxy, path string) string {
	if path == "" {
		return proxy
	}
	return strings.TrimSuffix(proxy, "/") + "/" + strings.TrimPrefix(path, "/")
}
