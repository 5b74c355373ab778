package runpod_test

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/wakeonchat/wakeonchat/plugins/pluginapi/plugintest"
	"github.com/wakeonchat/wakeonchat/plugins/runpod"
)

func TestConfigFromEnv(t *testing.T) {
	t.Parallel()
	base := plugintest.Env{"WAKE_RUNPOD_API_KEY_ENV": "RUNPOD_API_KEY", "RUNPOD_API_KEY": testKey}
	plugintest.RunFromEnv(t, runpod.ConfigFromEnv, testKey, []plugintest.EnvCase[runpod.Config]{
		{
			Name: "defaults",
			Env:  base,
			Want: runpod.Config{Key: testKey, LookupTimeout: 3 * time.Second, StartTimeout: 3 * time.Second},
		},
		{
			Name: "every variable",
			Env: base.With("WAKE_RUNPOD_URL", "http://127.0.0.1:9/v2", "WAKE_RUNPOD_PORT", "11434",
				"WAKE_RUNPOD_PROXY_URL", "http://127.0.0.1:8/{id}", "WAKE_RUNPOD_PODS", " qwen = pod_abc123 , llama=xedezhzb9la3ye",
				"WAKE_LOOKUP_TIMEOUT", "2s", "WAKE_START_TIMEOUT", "1500ms"),
			Want: runpod.Config{URL: "http://127.0.0.1:9/v2", Key: testKey, Port: 11434, ProxyURL: "http://127.0.0.1:8/{id}",
				Pods:          map[string]string{"qwen": "pod_abc123", "llama": "xedezhzb9la3ye"},
				LookupTimeout: 2 * time.Second, StartTimeout: 1500 * time.Millisecond},
		},
		{Name: "no key variable", Env: plugintest.Env{}, WantErr: "WAKE_RUNPOD_API_KEY_ENV: not set"},
		{Name: "an empty key", Env: base.With("RUNPOD_API_KEY", ""), WantErr: "WAKE_RUNPOD_API_KEY_ENV: the variable it names, RUNPOD_API_KEY, is empty"},
		{Name: "a bad port", Env: base.With("WAKE_RUNPOD_PORT", "80000"), WantErr: `WAKE_RUNPOD_PORT: "80000" is not a port`},
		{Name: "a pod entry without id", Env: base.With("WAKE_RUNPOD_PODS", "qwen"), WantErr: "WAKE_RUNPOD_PODS: entry 1 is not name=id"},
		{Name: "a bad pod id", Env: base.With("WAKE_RUNPOD_PODS", "a=x,qwen=../x"), WantErr: "WAKE_RUNPOD_PODS: entry 2 (qwen): the pod id is not"},
		{Name: "a pod twice", Env: base.With("WAKE_RUNPOD_PODS", "a=x,a=y"), WantErr: "WAKE_RUNPOD_PODS: entry 2: pod a is listed twice"},
		{Name: "a bad timeout", Env: base.With("WAKE_START_TIMEOUT", "-1s"), WantErr: `WAKE_START_TIMEOUT: "-1s" is not a positive duration`},
		{Name: "a lookup timeout", Env: base.With("WAKE_LOOKUP_TIMEOUT", "soon"), WantErr: `WAKE_LOOKUP_TIMEOUT: "soon" is not a positive duration`},
	}, cmpopts.EquateEmpty())
}

func TestNewRejectsBadConfig(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		cfg  runpod.Config
	}{
		{"no key", runpod.Config{}},
		{"relative url", runpod.Config{Key: testKey, URL: "api.runpod.io/v2"}},
		{"other scheme", runpod.Config{Key: testKey, URL: "ftp://api.runpod.io"}},
		{"query", runpod.Config{Key: testKey, URL: "https://api.runpod.io/v2?x=1"}},
		{"credentials in the url", runpod.Config{Key: testKey, URL: "https://u:p@api.runpod.io/v2"}},
		{"a bad proxy url", runpod.Config{Key: testKey, ProxyURL: "{id}-{port}.proxy.runpod.net"}},
		{"a bad port", runpod.Config{Key: testKey, Port: -1}},
		{"a bad pod id", runpod.Config{Key: testKey, Pods: map[string]string{"qwen": "a/b"}}},
		{"negative timeout", runpod.Config{Key: testKey, StartTimeout: -time.Second}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if _, err := runpod.New(tt.cfg); err == nil {
				t.Error("New accepted the config")
			} else if strings.Contains(err.Error(), "u:p") {
				t.Errorf("the error echoes the url: %v", err)
			}
		})
	}
}
