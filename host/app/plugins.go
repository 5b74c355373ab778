package app

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/wakeonchat/wakeonchat/host/clock"
	"github.com/wakeonchat/wakeonchat/host/config"
	"github.com/wakeonchat/wakeonchat/host/resolve"
	"github.com/wakeonchat/wakeonchat/host/sim"
	"github.com/wakeonchat/wakeonchat/host/supervisor"
	"github.com/wakeonchat/wakeonchat/plugins/pluginapi"
)

// simulatedKey stands in for a provider's API key under -simulate: the
// simulator's model takes any key, and a demo needs none.
const simulatedKey = "simulated"

// startPlugins launches one GPU plugin per GPU backend (the [conductor]
// table's and each [[backends]] table's) and one provider plugin per
// configured provider, each with an explicit environment: a GPU plugin
// gets only what its backend needs (backendEnv: the conductor's
// RIG_WAKE_TOKEN, a RunPod backend's key, the variables a command backend
// passes on), a provider only its own key variable. Each is its file in
// plugins.dir, or else, built in, self in plugin mode (pluginCommand). The
// coordinator and the resolvers get a.gpu, which routes each pod to its
// backend's plugin.
func (a *App) startPlugins(ctx context.Context, getenv func(string) string, simulate bool, self string) error {
	c := a.cfg
	a.backends = c.GPUBackends()
	router := gpuRouter{byPod: map[string]pluginapi.GPU{}}
	for _, b := range a.backends {
		env, secrets, err := backendEnv(b, getenv)
		if err != nil {
			return err
		}
		path, args, _ := pluginCommand(c, b.Plugin, self)
		log := a.log
		if b.Table != "conductor" {
			log = log.With("backend", b.Name)
		}
		g := supervisor.NewGPU(supervisor.Spec{
			Name: b.Plugin, Path: path, Args: args, Env: env, Secrets: secrets,
			Logger: log, Metrics: a.metrics,
		})
		a.gpus = append(a.gpus, g)
		a.metrics.WatchPlugin(b.Plugin, g.Ready)
		if err := g.Start(ctx); err != nil {
			return fmt.Errorf("%s.plugin: %w", b.Table, err)
		}
		if router.def == nil {
			router.def = g // the [conductor] backend's, first
		}
		for _, p := range c.Providers {
			if p.Pod != "" && config.BackendOf(p) == b.Name {
				router.byPod[p.Pod] = g
			}
		}
	}
	a.gpu = router
	for i, p := range c.Providers {
		env := []string{pluginapi.EnvCompletionTimeout + "=" + c.Timings.CompletionTimeout.String()}
		var secrets []string
		if p.APIKeyEnv != "" {
			key := getenv(p.APIKeyEnv)
			if key == "" && simulate {
				key = simulatedKey
			}
			env = append(env, pluginapi.EnvAPIKeyEnv+"="+p.APIKeyEnv, p.APIKeyEnv+"="+key)
			if key != "" && key != simulatedKey {
				secrets = append(secrets, key)
			}
		}
		path, args, _ := pluginCommand(c, p.Plugin, self)
		sp := supervisor.NewProvider(supervisor.Spec{
			Name: p.Plugin, Path: path, Args: args, Env: env, Secrets: secrets,
			Logger: a.log.With("provider", p.Name), Metrics: a.metrics,
		})
		a.metrics.WatchPlugin(p.Plugin, sp.Ready)
		a.provs = append(a.provs, sp)
		if err := sp.Start(ctx); err != nil {
			return fmt.Errorf("providers[%d].plugin: %w", i, err)
		}
	}
	return nil
}

// models builds one resolve.Model per provider, and one resolver per pod.
// A provider whose API key variable is unset is a config-class failure at
// every turn (D5): the host starts, logs it once, and answers 502.
func (a *App) models(getenv func(string) string, simulate bool, observer resolve.Observer) (map[string]*resolve.Model, map[string]*resolve.Resolver, error) {
	models := make(map[string]*resolve.Model, len(a.cfg.Providers))
	pods := make(map[string]*resolve.Resolver)         // by pod: the view GET /api/pods serves
	resolvers := make(map[[2]string]*resolve.Resolver) // by pod and path: shared by providers
	for i, p := range a.cfg.Providers {
		m := &resolve.Model{Name: p.Name, Provider: resolve.NewDirect(a.provs[i]), ModelName: p.Model}
		switch {
		case p.Pod != "":
			key := [2]string{p.Pod, p.Path}
			r, ok := resolvers[key]
			if !ok {
				r = resolve.NewResolver(a.gpu, p.Pod, p.Path)
				r.SetLookupTimeout(a.backendOf(p.Pod).LookupCap() + time.Second)
				r.SetObserver(observer)
				resolvers[key] = r
			}
			if _, ok := pods[p.Pod]; !ok {
				pods[p.Pod] = r
			}
			m.Resolver = r
		default:
			m.BaseURL = strings.TrimSuffix(p.BaseURL, "/") + "/" + strings.TrimPrefix(p.Path, "/")
		}
		if p.APIKeyEnv != "" && getenv(p.APIKeyEnv) == "" && !simulate {
			m.ConfigErr = &resolve.ConfigError{Provider: p.Name, Reason: "the API key variable " + p.APIKeyEnv + " is not set"}
			a.log.Error("provider unusable: its API key variable is not set", "provider", p.Name, "api_key_env", p.APIKeyEnv)
		}
		models[p.Name] = m
	}
	return models, pods, nil
}

// startSimulator starts the built-in conductor and model on loopback and
// points the host at them, with a fresh data dir and a scaled clock.
func (a *App) startSimulator(o Options) error {
	scale := o.Scale
	if scale <= 0 {
		scale = 1
	}
	if a.clock == nil {
		a.clock = clock.Scaled(scale)
	}
	pods := []string{}
	for _, p := range a.cfg.Providers {
		if p.Pod != "" {
			pods = append(pods, p.Pod)
		}
	}
	a.sim = sim.New(sim.Config{Pods: pods, Clock: a.clock, IdleStop: a.cfg.Timings.PodIdleStop.Duration})
	if err := a.sim.Start(); err != nil {
		return fmt.Errorf("simulator: %w", err)
	}
	a.cfg.Conductor.URL = a.sim.URL()
	dir, err := os.MkdirTemp("", "wakehost-sim-")
	if err != nil {
		return fmt.Errorf("simulator data dir: %w", err)
	}
	a.tempDir = dir
	return nil
}
