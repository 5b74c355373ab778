package command

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// The plugin's environment: the host configures wake-plugin-command only
// through these variables (see the package doc and docs/backends.md).
// Durations use Go's syntax ("10s", "1m30s"); an unset or empty variable
// means the default.
const (
	// EnvStart is the start command, a JSON array of strings
	// (required): ["systemctl","start","vllm"].
	EnvStart = "WAKE_COMMAND_START"
	// EnvStop is the stop command, like EnvStart (optional: without it
	// StopPod answers Error "no stop command").
	EnvStop = "WAKE_COMMAND_STOP"
	// EnvStatus is the status command, like EnvStart (required).
	EnvStatus = "WAKE_COMMAND_STATUS"
	// EnvStatusBy is how the status command's answer is read: "json"
	// (default: it prints one JSON object) or "exit" (its exit code).
	EnvStatusBy = "WAKE_COMMAND_STATUS_BY"
	// EnvStatusDownCodes lists, comma-separated, the exit codes that mean
	// EXITED in exit mode (default "1,2,3", the LSB "not running" codes;
	// "3" for systemctl is-active, which exits 1 when it cannot reach
	// systemd at all).
	EnvStatusDownCodes = "WAKE_COMMAND_STATUS_DOWN_CODES"
	// EnvURL is the model endpoint's base URL, such as
	// http://10.0.0.7:8000/v1 ({pod} is replaced by the pod name).
	// Required with WAKE_COMMAND_STATUS_BY=exit; in json mode the URL of a
	// RUNNING answer that gives none.
	EnvURL = "WAKE_COMMAND_URL"
	// EnvStartTimeout caps one start command (default 60s).
	EnvStartTimeout = "WAKE_COMMAND_START_TIMEOUT"
	// EnvStopTimeout caps one stop command (default 60s).
	EnvStopTimeout = "WAKE_COMMAND_STOP_TIMEOUT"
	// EnvStatusTimeout caps one status command (default 10s).
	EnvStatusTimeout = "WAKE_COMMAND_STATUS_TIMEOUT"
	// EnvPassEnv names, comma-separated, the variables of the plugin's
	// own environment that the commands get (besides PATH), such as
	// "DOCKER_HOST,RUNPOD_API_KEY". The host must pass them to the plugin.
	EnvPassEnv = "WAKE_COMMAND_PASS_ENV"
	// EnvPath is the commands' PATH, and where a command name without a
	// slash is looked up. Unset, DefaultPath.
	EnvPath = "PATH"
)

// DefaultPath is the commands' PATH when the plugin was given none (the
// host passes a plugin no PATH of its own unless configured to).
const DefaultPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// FromEnv reads a Config from the plugin's environment through getenv
// (os.Getenv in main). Every error names the variable it is about and
// never quotes its value, which may hold a secret. It does not validate
// what New validates (the URL, the commands' shape beyond their JSON);
// New does.
func FromEnv(getenv func(string) string) (Config, error) {
	var cfg Config
	var err error
	if cfg.Start, err = argvEnv(getenv, EnvStart); err != nil {
		return Config{}, err
	}
	if cfg.Stop, err = argvEnv(getenv, EnvStop); err != nil {
		return Config{}, err
	}
	if cfg.Status, err = argvEnv(getenv, EnvStatus); err != nil {
		return Config{}, err
	}
	switch by := getenv(EnvStatusBy); by {
	case "", string(StatusByJSON):
		cfg.StatusBy = StatusByJSON
	case string(StatusByExit):
		cfg.StatusBy = StatusByExit
	default:
		return Config{}, fmt.Errorf("%s: must be %q or %q", EnvStatusBy, StatusByJSON, StatusByExit)
	}
	if cfg.DownCodes, err = downCodes(getenv(EnvStatusDownCodes)); err != nil {
		return Config{}, err
	}
	cfg.URL = getenv(EnvURL)
	for _, d := range []struct {
		name string
		to   *time.Duration
	}{
		{EnvStartTimeout, &cfg.StartTimeout},
		{EnvStopTimeout, &cfg.StopTimeout},
		{EnvStatusTimeout, &cfg.StatusTimeout},
	} {
		if *d.to, err = durationEnv(getenv, d.name); err != nil {
			return Config{}, err
		}
	}
	path := getenv(EnvPath)
	if path == "" {
		path = DefaultPath
	}
	cfg.Env = []string{EnvPath + "=" + path}
	names, err := passEnvNames(getenv(EnvPassEnv))
	if err != nil {
		return Config{}, err
	}
	for _, name := range names {
		if v := getenv(name); v != "" {
			cfg.Env = append(cfg.Env, name+"="+v)
		} else {
			cfg.Unset = append(cfg.Unset, name)
		}
	}
	return cfg, nil
}

// argvEnv reads a command: a JSON array of strings. Unset or empty is a
// nil command; New says whether one is required.
func argvEnv(getenv func(string) string, name string) ([]string, error) {
	v := getenv(name)
	if strings.TrimSpace(v) == "" {
		return nil, nil
	}
	var argv []string
	if err := json.Unmarshal([]byte(v), &argv); err != nil {
		return nil, fmt.Errorf("%s: must be a JSON array of strings, such as [\"systemctl\",\"start\",\"vllm\"]", name)
	}
	if len(argv) == 0 {
		return nil, fmt.Errorf("%s: the array is empty", name)
	}
	if argv[0] == "" {
		return nil, fmt.Errorf("%s: the program name (the array's first string) is empty", name)
	}
	return argv, nil
}

// downCodes reads WAKE_COMMAND_STATUS_DOWN_CODES: exit codes separated by
// commas. Unset is nil (the default); New checks the range.
func downCodes(v string) ([]int, error) {
	if strings.TrimSpace(v) == "" {
		return nil, nil
	}
	var codes []int
	for i, f := range strings.Split(v, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil {
			return nil, fmt.Errorf("%s: entry %d is not an exit code", EnvStatusDownCodes, i+1)
		}
		codes = append(codes, n)
	}
	return codes, nil
}

func durationEnv(getenv func(string) string, name string) (time.Duration, error) {
	v := getenv(name)
	if v == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		return 0, fmt.Errorf("%s: not a duration such as 10s or 1m30s", name)
	}
	if d <= 0 {
		return 0, fmt.Errorf("%s: not a positive duration", name)
	}
	return d, nil
}

// passEnvNames splits WAKE_COMMAND_PASS_ENV: names separated by commas
// (an error counts the entries from 1),
// spaces around them ignored, each a valid variable name, PATH and
// duplicates dropped (the commands always get PATH).
func passEnvNames(v string) ([]string, error) {
	var names []string
	seen := map[string]bool{EnvPath: true}
	for i, f := range strings.Split(v, ",") {
		name := strings.TrimSpace(f)
		if name == "" {
			continue
		}
		if !validEnvName(name) {
			// Not quoted: an operator who wrote NAME=value wrote a value.
			return nil, fmt.Errorf("%s: entry %d is not a variable name (letters, digits and _, not starting with a digit)", EnvPassEnv, i+1)
		}
		if !seen[name] {
			seen[name] = true
			names = append(names, name)
		}
	}
	return names, nil
}

func validEnvName(s string) bool { return envNamePattern.MatchString(s) }

var envNamePattern = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
