package command_test

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/wakeonchat/wakeonchat/plugins/command"
)

// getenv is a fake environment.
func getenv(env map[string]string) func(string) string {
	return func(name string) string { return env[name] }
}

func TestFromEnv(t *testing.T) {
	t.Parallel()
	base := map[string]string{
		command.EnvStart:  `["systemctl","start","vllm"]`,
		command.EnvStatus: `["systemctl","is-active","--quiet","vllm"]`,
	}
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
		want    command.Config
		wantErr string
	}{
		{
			name: "the least: start and status, everything else its default",
			env:  base,
			want: command.Config{
				Start:    []string{"systemctl", "start", "vllm"},
				Status:   []string{"systemctl", "is-active", "--quiet", "vllm"},
				StatusBy: command.StatusByJSON,
				Env:      []string{"PATH=" + command.DefaultPath},
			},
		},
		{
			name: "everything",
			env: with(
				command.EnvStop, `["systemctl","stop","vllm"]`,
				command.EnvStatusBy, "exit",
				command.EnvStatusDownCodes, "3, 7",
				command.EnvURL, "http://127.0.0.1:8000/v1",
				command.EnvStartTimeout, "90s",
				command.EnvStopTimeout, "2m",
				command.EnvStatusTimeout, "1500ms",
				command.EnvPassEnv, " DOCKER_HOST , RUNPOD_API_KEY,,PATH,DOCKER_HOST,NOT_SET ",
				"PATH", "/opt/bin:/usr/bin",
				"DOCKER_HOST", "unix:///run/docker.sock",
				"RUNPOD_API_KEY", secret,
				"HOME", "/root",
			),
			want: command.Config{
				Start:         []string{"systemctl", "start", "vllm"},
				Stop:          []string{"systemctl", "stop", "vllm"},
				Status:        []string{"systemctl", "is-active", "--quiet", "vllm"},
				StatusBy:      command.StatusByExit,
				DownCodes:     []int{3, 7},
				URL:           "http://127.0.0.1:8000/v1",
				StartTimeout:  90 * time.Second,
				StopTimeout:   2 * time.Minute,
				StatusTimeout: 1500 * time.Millisecond,
				Env:           []string{"PATH=/opt/bin:/usr/bin", "DOCKER_HOST=unix:///run/docker.sock", "RUNPOD_API_KEY=" + secret},
				Unset:         []string{"NOT_SET"},
			},
		},
		{name: "a command that is not JSON", env: with(command.EnvStart, `systemctl start `+secret), wantErr: command.EnvStart + ": must be a JSON array of strings"},
		{name: "a command that is a string", env: with(command.EnvStatus, `"systemctl is-active `+secret+`"`), wantErr: command.EnvStatus + ": must be a JSON array of strings"},
		{name: "a command with a number", env: with(command.EnvStop, `["sleep",3]`), wantErr: command.EnvStop + ": must be a JSON array of strings"},
		{name: "an empty command", env: with(command.EnvStart, `[]`), wantErr: command.EnvStart + ": the array is empty"},
		{name: "an empty program name", env: with(command.EnvStatus, `["","x"]`), wantErr: command.EnvStatus + ": the program name (the array's first string) is empty"},
		{name: "an unknown status mode", env: with(command.EnvStatusBy, "exitcode"), wantErr: command.EnvStatusBy + `: must be "json" or "exit"`},
		{name: "a down code that is not a number", env: with(command.EnvStatusDownCodes, "3,inactive"), wantErr: command.EnvStatusDownCodes + ": entry 2 is not an exit code"},
		{name: "a timeout that does not parse", env: with(command.EnvStartTimeout, "60"), wantErr: command.EnvStartTimeout + ": not a duration such as 10s or 1m30s"},
		{name: "a timeout that is not positive", env: with(command.EnvStatusTimeout, "0s"), wantErr: command.EnvStatusTimeout + ": not a positive duration"},
		{name: "a negative timeout", env: with(command.EnvStopTimeout, "-1s"), wantErr: command.EnvStopTimeout + ": not a positive duration"},
		{name: "a bad variable name", env: with(command.EnvPassEnv, "DOCKER_HOST,1KEY"), wantErr: command.EnvPassEnv + ": entry 2 is not a variable name"},
		{name: "a value for a name", env: with(command.EnvPassEnv, "KEY="+secret), wantErr: command.EnvPassEnv + ": entry 1 is not a variable name"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := command.FromEnv(getenv(tt.env))
			if tt.wantErr != "" {
				if err == nil || !strings.HasPrefix(err.Error(), tt.wantErr) {
					t.Fatalf("FromEnv error = %v, want one starting %q", err, tt.wantErr)
				}
				if strings.Contains(err.Error(), secret) {
					t.Errorf("FromEnv error %q quotes the value", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("FromEnv: %v", err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("config (-want +got):\n%s", diff)
			}
		})
	}
}

func TestNewRejects(t *testing.T) {
	t.Parallel()
	ok := command.Config{Start: []string{"true"}, Status: []string{"true"}}
	tests := []struct {
		name    string
		edit    func(*command.Config)
		wantErr string
	}{
		{"no start", func(c *command.Config) { c.Start = nil }, command.EnvStart + ": required"},
		{"no status", func(c *command.Config) { c.Status = nil }, command.EnvStatus + ": required"},
		{"an empty stop", func(c *command.Config) { c.Stop = []string{} }, command.EnvStop + ": the program name (the array's first string) is empty"},
		{"an empty program", func(c *command.Config) { c.Start = []string{"", "x"} }, command.EnvStart + ": the program name (the array's first string) is empty"},
		{"exit mode without a url", func(c *command.Config) { c.StatusBy = command.StatusByExit }, command.EnvURL + ": required with WAKE_COMMAND_STATUS_BY=exit"},
		{"an unknown mode", func(c *command.Config) { c.StatusBy = "yaml" }, command.EnvStatusBy + `: must be "json" or "exit"`},
		{"down codes in json mode", func(c *command.Config) { c.DownCodes = []int{3} }, command.EnvStatusDownCodes + ": only with WAKE_COMMAND_STATUS_BY=exit"},
		{"down code 0", func(c *command.Config) {
			c.StatusBy, c.URL, c.DownCodes = command.StatusByExit, "http://h/v1", []int{0}
		}, command.EnvStatusDownCodes + ": 0 is not an exit code from 1 to 255"},
		{"down code 256", func(c *command.Config) {
			c.StatusBy, c.URL, c.DownCodes = command.StatusByExit, "http://h/v1", []int{3, 256}
		}, command.EnvStatusDownCodes + ": 256 is not an exit code from 1 to 255"},
		{"a url that is not http", func(c *command.Config) { c.URL = "ftp://u:" + secret + "@h/" }, command.EnvURL + ": must be an absolute http or https url"},
		{"a relative url", func(c *command.Config) { c.URL = "127.0.0.1:8000/v1" }, command.EnvURL + ": must be an absolute http or https url"},
		{"a url with a query", func(c *command.Config) { c.URL = "http://h/v1?key=" + secret }, command.EnvURL + ": must be an absolute http or https url"},
		{"a negative timeout", func(c *command.Config) { c.StatusTimeout = -time.Second }, "command timeouts must not be negative"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cfg := ok
			tt.edit(&cfg)
			_, err := command.New(cfg)
			if err == nil || err.Error() != tt.wantErr {
				t.Fatalf("New error = %v, want %q", err, tt.wantErr)
			}
		})
	}
	if _, err := command.New(ok); err != nil {
		t.Errorf("New(%+v) = %v, want a Runner", ok, err)
	}
	withPod := ok
	withPod.URL = "http://{pod}.lan:8000/v1"
	if _, err := command.New(withPod); err != nil {
		t.Errorf("New with {pod} in the url: %v", err)
	}
}
