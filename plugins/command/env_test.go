package command_test

import (
	"testing"
	"time"

	"github.com/wakeonchat/wakeonchat/plugins/command"
	"github.com/wakeonchat/wakeonchat/plugins/pluginapi/plugintest"
)

func TestFromEnv(t *testing.T) {
	t.Parallel()
	base := plugintest.Env{
		command.EnvStart:  `["systemctl","start","vllm"]`,
		command.EnvStatus: `["systemctl","is-active","--quiet","vllm"]`,
	}
	plugintest.RunFromEnv(t, command.FromEnv, secret, []plugintest.EnvCase[command.Config]{
		{
			Name: "the least: start and status, everything else its default",
			Env:  base,
			Want: command.Config{
				Start:    []string{"systemctl", "start", "vllm"},
				Status:   []string{"systemctl", "is-active", "--quiet", "vllm"},
				StatusBy: command.StatusByJSON,
				Env:      []string{"PATH=" + command.DefaultPath},
			},
		},
		{
			Name: "everything",
			Env: base.With(
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
			Want: command.Config{
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
		{Name: "a command that is not JSON", Env: base.With(command.EnvStart, `systemctl start `+secret), WantErr: command.EnvStart + ": must be a JSON array of strings"},
		{Name: "a command that is a string", Env: base.With(command.EnvStatus, `"systemctl is-active `+secret+`"`), WantErr: command.EnvStatus + ": must be a JSON array of strings"},
		{Name: "a command with a number", Env: base.With(command.EnvStop, `["sleep",3]`), WantErr: command.EnvStop + ": must be a JSON array of strings"},
		{Name: "an empty command", Env: base.With(command.EnvStart, `[]`), WantErr: command.EnvStart + ": the array is empty"},
		{Name: "an empty program name", Env: base.With(command.EnvStatus, `["","x"]`), WantErr: command.EnvStatus + ": the program name (the array's first string) is empty"},
		{Name: "an unknown status mode", Env: base.With(command.EnvStatusBy, "exitcode"), WantErr: command.EnvStatusBy + `: must be "json" or "exit"`},
		{Name: "a down code that is not a number", Env: base.With(command.EnvStatusDownCodes, "3,inactive"), WantErr: command.EnvStatusDownCodes + ": entry 2 is not an exit code"},
		{Name: "a timeout that does not parse", Env: base.With(command.EnvStartTimeout, "60"), WantErr: command.EnvStartTimeout + ": not a duration such as 10s or 1m30s"},
		{Name: "a timeout that is not positive", Env: base.With(command.EnvStatusTimeout, "0s"), WantErr: command.EnvStatusTimeout + ": not a positive duration"},
		{Name: "a negative timeout", Env: base.With(command.EnvStopTimeout, "-1s"), WantErr: command.EnvStopTimeout + ": not a positive duration"},
		{Name: "a bad variable name", Env: base.With(command.EnvPassEnv, "DOCKER_HOST,1KEY"), WantErr: command.EnvPassEnv + ": entry 2 is not a variable name"},
		{Name: "a value for a name", Env: base.With(command.EnvPassEnv, "KEY="+secret), WantErr: command.EnvPassEnv + ": entry 1 is not a variable name"},
	})
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
