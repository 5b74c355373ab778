package runpod_test

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/wakeonchat/wakeonchat/plugins/runpod"
)

func TestConfigFromEnv(t *testing.T) {
	t.Parallel()
	base := map[string]string{"WAKE_RUNPOD_API_KEY_ENV": "RUNPOD_API_KEY", "RUNPOD_API_KEY": testKey}
	with := func(kv ...string) map[string]string {
		env := map[string]string{}
		for k, v := range base {
			env[k] = v
		}
		for i := 0; i < len(kv); i += 2 {
			env[kv[i]] = kv[i+1]
		}
		return env
	}
	tests := []struct {
		name    string
		env     map[string]string
		want    runpod.Config
		wantErr string
	}{
		{
			name: "defaults",
			env:  base,
			want: runpod.Config{Key: testKey, LookupTimeout: 3 * time.Second, StartTimeout: 3 * time.Second},
		},
		{
			name: "every variable",
			env: with("WAKE_RUNPOD_URL", "http://127.0.0.1:9/v2", "WAKE_RUNPOD_PORT", "11434",
				"WAKE_RUNPOD_PROXY_URL", "http://127.0.0.1:8/{id}", "WAKE_RUNPOD_PODS", " qwen = pod_abc123 , llama=xedezhzb9la3ye",
				"WAKE_LOOKUP_TIMEOUT", "2s", "WAKE_START_TIMEOUT", "1500ms"),
			want: runpod.Config{URL: "http://127.0.0.1:9/v2", Key: testKey, Port: 11434, ProxyURL: "http://127.0.0.1:8/{id}",
				Pods:          map[string]string{"qwen": "pod_abc123", "llama": "xedezhzb9la3ye"},
				LookupTimeout: 2 * time.Second, StartTimeout: 1500 * time.Millisecond},
		},
		{name: "no key variable", env: map[string]string{}, wantErr: "WAKE_RUNPOD_API_KEY_ENV: not set"},
		{name: "an empty key", env: with("RUNPOD_API_KEY", ""), wantErr: "WAKE_RUNPOD_API_KEY_ENV: the variable it names, RUNPOD_API_KEY, is empty"},
		{name: "a bad port", env: with("WAKE_RUNPOD_PORT", "80000"), wantErr: `WAKE_RUNPOD_PORT: "80000" is not a port`},
		{name: "a pod entry without id", env: with("WAKE_RUNPOD_PODS", "qwen"), wantErr: "WAKE_RUNPOD_PODS: entry 1 is not name=id"},
		{name: "a bad pod id", env: with("WAKE_RUNPOD_PODS", "a=x,qwen=../x"), wantErr: "WAKE_RUNPOD_PODS: entry 2 (qwen): the pod id is not"},
		{name: "a pod twice", env: with("WAKE_RUNPOD_PODS", "a=x,a=y"), wantErr: "WAKE_RUNPOD_PODS: entry 2: pod a is listed twice"},
		{name: "a bad timeout", env: with("WAKE_START_TIMEOUT", "-1s"), wantErr: `WAKE_START_TIMEOUT: "-1s" is not a positive duration`},
		{name: "a lookup timeout", env: with("WAKE_LOOKUP_TIMEOUT", "soon"), wantErr: `WAKE_LOOKUP_TIMEOUT: "soon" is not a positive duration`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := runpod.ConfigFromEnv(func(k string) string { return tt.env[k] })
			if tt.wantErr != "" {
				if err == nil || !strings.HasPrefix(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want one starting %q", err, tt.wantErr)
				}
				if strings.Contains(err.Error(), testKey) {
					t.Errorf("the error quotes the key: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("config (-want +got):\n%s", diff)
			}
		})
	}
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
