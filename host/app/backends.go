package app

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/wakeonchat/wakeonchat/host/config"
	"github.com/wakeonchat/wakeonchat/host/wake"
	"github.com/wakeonchat/wakeonchat/plugins/command"
	"github.com/wakeonchat/wakeonchat/plugins/pluginapi"
	"github.com/wakeonchat/wakeonchat/plugins/runpod"
)

// backendEnv is the whole environment of backend b's GPU plugin, and the
// secrets in it (for the supervisor to scrub from what the plugin says):
//
//   - conductor: its URL and caps, and RIG_WAKE_TOKEN from the variable
//     token_env names when that is set;
//   - command: its commands (JSON arrays), status mode, URL and caps,
//     WAKE_COMMAND_PASS_ENV and each variable it names that is set (all
//     but PATH counted secret: the host cannot tell which hold one);
//   - runpod: its API's URL, port, proxy URL, pods and caps,
//     WAKE_RUNPOD_API_KEY_ENV and the key's variable, which must be set.
//
// The error, about a RunPod key variable that is not set
// (runPodKeySet), names the key and the variable, never a value.
func backendEnv(b config.Backend, getenv func(string) string) (env, secrets []string, err error) {
	set := func(name, value string) { env = append(env, name+"="+value) }
	switch b.Kind {
	case config.KindConductor:
		set(pluginapi.EnvConductorURL, b.URL)
		set(pluginapi.EnvLookupTimeout, b.LookupTimeout.String())
		set(pluginapi.EnvStartTimeout, b.StartTimeout.String())
		if tok := getenv(b.TokenEnv); tok != "" {
			set(pluginapi.EnvWakeToken, tok)
			secrets = append(secrets, tok)
		}
	case config.KindCommand:
		argv := func(name string, a []string) {
			if len(a) > 0 {
				j, _ := json.Marshal(a) // strings always marshal
				set(name, string(j))
			}
		}
		argv(command.EnvStart, b.Start)
		argv(command.EnvStop, b.Stop)
		argv(command.EnvStatus, b.Status)
		set(command.EnvStatusBy, b.StatusBy)
		if len(b.StatusDownCodes) > 0 {
			codes := make([]string, len(b.StatusDownCodes))
			for i, c := range b.StatusDownCodes {
				codes[i] = strconv.Itoa(c)
			}
			set(command.EnvStatusDownCodes, strings.Join(codes, ","))
		}
		if b.URL != "" {
			set(command.EnvURL, b.URL)
		}
		set(command.EnvStartTimeout, b.StartTimeout.String())
		set(command.EnvStopTimeout, b.StopTimeout.String())
		set(command.EnvStatusTimeout, b.StatusTimeout.String())
		if len(b.PassEnv) > 0 {
			set(command.EnvPassEnv, strings.Join(b.PassEnv, ","))
		}
		for _, name := range b.PassEnv {
			if v := getenv(name); v != "" {
				set(name, v)
				if name != "PATH" {
					secrets = append(secrets, v)
				}
			}
		}
	case config.KindRunPod:
		if err := runPodKeySet(b, getenv); err != nil {
			return nil, nil, err
		}
		key := getenv(b.APIKeyEnv)
		set(runpod.EnvAPIKeyEnv, b.APIKeyEnv)
		set(b.APIKeyEnv, key)
		secrets = append(secrets, key)
		set(runpod.EnvURL, b.URL)
		set(runpod.EnvPort, strconv.Itoa(b.Port))
		set(runpod.EnvProxyURL, b.ProxyURL)
		if len(b.Pods) > 0 {
			var pods []string
			for _, name := range slices.Sorted(maps.Keys(b.Pods)) {
				pods = append(pods, name+"="+b.Pods[name])
			}
			set(runpod.EnvPods, strings.Join(pods, ","))
		}
		set(pluginapi.EnvLookupTimeout, b.LookupTimeout.String())
		set(pluginapi.EnvStartTimeout, b.StartTimeout.String())
	}
	return env, secrets, nil
}

// runPodKeySet says, as a *config.Error naming the key, that the variable
// RunPod backend b reads its API key from is not set; nil when it is.
func runPodKeySet(b config.Backend, getenv func(string) string) error {
	if b.Kind != config.KindRunPod || getenv(b.APIKeyEnv) != "" {
		return nil
	}
	return &config.Error{Key: b.Table + ".api_key_env", Err: fmt.Errorf("%s is not set: the RunPod backend %q reads its API key there", b.APIKeyEnv, b.Name)}
}

// backendOf is the backend of pod: the [conductor] backend's for a pod no
// provider has.
func (a *App) backendOf(pod string) config.Backend {
	for _, p := range a.cfg.Providers {
		if p.Pod == pod {
			name := config.BackendOf(p)
			for _, b := range a.backends {
				if b.Name == name {
					return b
				}
			}
		}
	}
	return a.backends[0]
}

// startCap is the longest any backend's plugin may take over a start or a
// stop: the coordinator's cap on those calls (wake.Config.StartTimeout),
// so that each plugin's own cap, which reports the call in flight, fires
// first.
func startCap(backends []config.Backend) time.Duration {
	var d time.Duration
	for _, b := range backends {
		d = max(d, b.StartTimeout.Duration, b.StopTimeout.Duration)
	}
	return d
}

// podPolicies are, by pod, the stop policies of the pods whose backends
// stop them (wake.Config.Stops) and the credential variables of the pods
// whose backends are not the conductor's RIG_WAKE_TOKEN
// (wake.Config.Credentials).
func (a *App) podPolicies() (stops map[string]wake.StopPolicy, credentials map[string]string) {
	stops, credentials = map[string]wake.StopPolicy{}, map[string]string{}
	for _, p := range a.cfg.Providers {
		if p.Pod == "" {
			continue
		}
		b := a.backendOf(p.Pod)
		if sp := (wake.StopPolicy{AfterIdle: b.StopAfterIdle.Duration, UnservedAfter: b.StopUnservedAfter.Duration}); sp != (wake.StopPolicy{}) {
			stops[p.Pod] = sp
		}
		switch {
		case b.Kind == config.KindRunPod:
			credentials[p.Pod] = b.APIKeyEnv
		case b.Kind == config.KindConductor && b.TokenEnv != config.DefaultTokenEnv:
			credentials[p.Pod] = b.TokenEnv
		}
	}
	return stops, credentials
}
