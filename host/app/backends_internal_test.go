package app

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/wakeonchat/wakeonchat/host/config"
	"github.com/wakeonchat/wakeonchat/host/wake"
	"github.com/wakeonchat/wakeonchat/plugins/pluginapi"
)

// Each backend's plugin gets exactly its kind's variables, and the values
// that are secrets are the ones the supervisor scrubs.
func TestBackendEnv(t *testing.T) {
	t.Parallel()
	env := map[string]string{
		"RIG_WAKE_TOKEN": "tok-conductor", "LAB_TOKEN": "tok-lab", "RUNPOD_API_KEY": "rpa_key",
		"DOCKER_HOST": "tcp://10.0.0.1:2375", "PATH": "/opt/bin:/usr/bin", "UNRELATED": "never passed",
	}
	getenv := func(k string) string { return env[k] }
	conductor := config.DefaultConfig().GPUBackends()[0]
	lab := config.DefaultBackend(config.KindConductor)
	lab.Name, lab.URL, lab.TokenEnv, lab.Table = "lab", "http://lab:8080", "LAB_TOKEN", "backends[0]"
	command := config.DefaultBackend(config.KindCommand)
	command.Name, command.Table = "box", "backends[1]"
	command.Start, command.Stop, command.Status = []string{"docker", "start", "vllm"}, []string{"docker", "stop", "vllm"}, []string{"docker", "inspect", "vllm"}
	command.URL, command.PassEnv = "http://127.0.0.1:8000", []string{"DOCKER_HOST", "PATH", "NOT_SET"}
	bare := config.DefaultBackend(config.KindCommand)
	bare.Start, bare.Status = []string{"s"}, []string{"t"}
	rp := config.DefaultBackend(config.KindRunPod)
	rp.Name, rp.APIKeyEnv, rp.Pods, rp.Table = "rp", "RUNPOD_API_KEY", map[string]string{"qwen": "abc", "big": "xyz"}, "backends[2]"
	tests := []struct {
		name        string
		b           config.Backend
		env, secret []string
	}{
		{"the [conductor] table: as before", conductor, []string{
			"WAKE_CONDUCTOR_URL=http://127.0.0.1:8081", "WAKE_LOOKUP_TIMEOUT=3s", "WAKE_START_TIMEOUT=3s", "RIG_WAKE_TOKEN=tok-conductor",
		}, []string{"tok-conductor"}},
		{"a conductor backend's token from its variable", lab, []string{
			"WAKE_CONDUCTOR_URL=http://lab:8080", "WAKE_LOOKUP_TIMEOUT=3s", "WAKE_START_TIMEOUT=3s", "RIG_WAKE_TOKEN=tok-lab",
		}, []string{"tok-lab"}},
		{"command: the commands, the caps, the variables it passes", command, []string{
			`WAKE_COMMAND_START=["docker","start","vllm"]`, `WAKE_COMMAND_STOP=["docker","stop","vllm"]`, `WAKE_COMMAND_STATUS=["docker","inspect","vllm"]`,
			"WAKE_COMMAND_STATUS_BY=json", "WAKE_COMMAND_STATUS_DOWN_CODES=1,2,3", "WAKE_COMMAND_URL=http://127.0.0.1:8000",
			"WAKE_COMMAND_START_TIMEOUT=1m0s", "WAKE_COMMAND_STOP_TIMEOUT=1m0s", "WAKE_COMMAND_STATUS_TIMEOUT=10s",
			"WAKE_COMMAND_PASS_ENV=DOCKER_HOST,PATH,NOT_SET", "DOCKER_HOST=tcp://10.0.0.1:2375", "PATH=/opt/bin:/usr/bin",
		}, []string{"tcp://10.0.0.1:2375"}},
		{"command: no stop, no url, nothing passed", bare, []string{
			`WAKE_COMMAND_START=["s"]`, `WAKE_COMMAND_STATUS=["t"]`, "WAKE_COMMAND_STATUS_BY=json", "WAKE_COMMAND_STATUS_DOWN_CODES=1,2,3",
			"WAKE_COMMAND_START_TIMEOUT=1m0s", "WAKE_COMMAND_STOP_TIMEOUT=1m0s", "WAKE_COMMAND_STATUS_TIMEOUT=10s",
		}, nil},
		{"runpod: the key's variable, and the pods sorted", rp, []string{
			"WAKE_RUNPOD_API_KEY_ENV=RUNPOD_API_KEY", "RUNPOD_API_KEY=rpa_key", "WAKE_RUNPOD_URL=https://api.runpod.io/v2", "WAKE_RUNPOD_PORT=8000",
			"WAKE_RUNPOD_PROXY_URL=https://{id}-{port}.proxy.runpod.net", "WAKE_RUNPOD_PODS=big=xyz,qwen=abc",
			"WAKE_LOOKUP_TIMEOUT=3s", "WAKE_START_TIMEOUT=3s",
		}, []string{"rpa_key"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			gotEnv, gotSecrets, err := backendEnv(tt.b, getenv)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.env, gotEnv); diff != "" {
				t.Errorf("env (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.secret, gotSecrets); diff != "" {
				t.Errorf("secrets (-want +got):\n%s", diff)
			}
		})
	}
}

// A RunPod backend whose key variable is empty does not start: the error
// names the key and the variable.
func TestBackendEnvRunPodWithoutKey(t *testing.T) {
	t.Parallel()
	rp := config.DefaultBackend(config.KindRunPod)
	rp.Name, rp.APIKeyEnv, rp.Table = "rp", "RUNPOD_API_KEY", "backends[0]"
	_, _, err := backendEnv(rp, func(string) string { return "" })
	want := errors.New(`backends[0].api_key_env: RUNPOD_API_KEY is not set: the RunPod backend "rp" reads its API key there`)
	if err == nil || err.Error() != want.Error() {
		t.Errorf("backendEnv: %v, want %v", err, want)
	}
}

// Each pod gets its backend's stops and credential; the coordinator's cap
// on a start covers every backend's.
func TestPodPolicies(t *testing.T) {
	t.Parallel()
	cfg := config.DefaultConfig()
	rp := config.DefaultBackend(config.KindRunPod)
	rp.Name, rp.APIKeyEnv = "rp", "RUNPOD_API_KEY"
	box := config.DefaultBackend(config.KindCommand)
	box.Name, box.StopAfterIdle, box.StopUnservedAfter = "box", config.Duration{Duration: 0}, config.Duration{Duration: 5 * time.Minute}
	lab := config.DefaultBackend(config.KindConductor)
	lab.Name, lab.TokenEnv = "lab", "LAB_TOKEN"
	cfg.Backends = []config.Backend{rp, box, lab}
	cfg.Providers = append(cfg.Providers,
		config.Provider{Name: "a", Pod: "gpu-a", Backend: "rp"},
		config.Provider{Name: "b", Pod: "gpu-b", Backend: "box"},
		config.Provider{Name: "c", Pod: "gpu-c", Backend: "lab"},
		config.Provider{Name: "d", BaseURL: "http://llm"},
	)
	a := &App{cfg: cfg, backends: cfg.GPUBackends()}
	stops, credentials := a.podPolicies()
	wantStops := map[string]wake.StopPolicy{
		"gpu-a": {AfterIdle: 15 * time.Minute},
		"gpu-b": {UnservedAfter: 5 * time.Minute},
	}
	if diff := cmp.Diff(wantStops, stops); diff != "" {
		t.Errorf("stops (-want +got):\n%s", diff)
	}
	wantCredentials := map[string]string{"gpu-a": "RUNPOD_API_KEY", "gpu-c": "LAB_TOKEN"}
	if diff := cmp.Diff(wantCredentials, credentials); diff != "" {
		t.Errorf("credentials (-want +got):\n%s", diff)
	}
	if got, want := startCap(a.backends), time.Minute; got != want {
		t.Errorf("startCap: %v, want %v (the command backend's)", got, want)
	}
	if got := a.backendOf("qwen").Name; got != "conductor" {
		t.Errorf("backendOf(qwen) = %q, want conductor", got)
	}
}

// The router sends each pod's calls to its backend's plugin, and a pod no
// provider has to the [conductor] backend's.
func TestGPURouter(t *testing.T) {
	t.Parallel()
	var calls []string
	gpu := func(name string) pluginapi.GPU {
		return fakeGPU{record: func(op, pod string) { calls = append(calls, name+" "+op+" "+pod) }}
	}
	r := gpuRouter{byPod: map[string]pluginapi.GPU{"a": gpu("runpod"), "b": gpu("command")}, def: gpu("conductor")}
	ctx := t.Context()
	r.GetPod(ctx, "a")
	r.StartPod(ctx, "b")
	r.StopPod(ctx, "a")
	r.StartPod(ctx, "elsewhere")
	want := []string{"runpod get a", "command start b", "runpod stop a", "conductor start elsewhere"}
	if diff := cmp.Diff(want, calls); diff != "" {
		t.Errorf("calls (-want +got):\n%s", diff)
	}
}

type fakeGPU struct{ record func(op, pod string) }

func (f fakeGPU) GetPod(_ context.Context, name string) (pluginapi.Pod, error) {
	f.record("get", name)
	return pluginapi.Pod{}, nil
}

func (f fakeGPU) StartPod(_ context.Context, name string) (pluginapi.StartResult, error) {
	f.record("start", name)
	return pluginapi.StartResult{}, nil
}

func (f fakeGPU) StopPod(_ context.Context, name string) (pluginapi.StartResult, error) {
	f.record("stop", name)
	return pluginapi.StartResult{}, nil
}
