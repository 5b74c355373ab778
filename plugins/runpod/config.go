package runpod

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/wakeonchat/wakeonchat/plugins/pluginapi"
)

// The plugin's environment: the host configures it through these variables
// and WAKE_LOOKUP_TIMEOUT, WAKE_START_TIMEOUT and WAKE_LOG_LEVEL of
// pluginapi, and nothing else (see ConfigFromEnv).
const (
	// EnvURL is the base URL of RunPod's REST API v2 (default
	// DefaultURL). Tests point it at a fake.
	EnvURL = "WAKE_RUNPOD_URL"
	// EnvAPIKeyEnv is the NAME of the environment variable that holds the
	// RunPod API key, such as RUNPOD_API_KEY (required). The host passes
	// both this variable and the one it names.
	EnvAPIKeyEnv = "WAKE_RUNPOD_API_KEY_ENV"
	// EnvPort is the pod's internal port the model serves HTTP on, exposed
	// as "PORT/http" in the pod's ports (default 8000, vLLM's).
	EnvPort = "WAKE_RUNPOD_PORT"
	// EnvProxyURL is the model's base URL for a running pod, with {id} for
	// the pod's id and {port} for the port (default DefaultProxyURL).
	EnvProxyURL = "WAKE_RUNPOD_PROXY_URL"
	// EnvPods maps the host's pod names to RunPod pod ids, as
	// "name=id,name=id". A name it does not list is the pod's id itself.
	EnvPods = "WAKE_RUNPOD_PODS"
)

// Defaults for the zero Config fields.
const (
	DefaultURL           = "https://api.runpod.io/v2"
	DefaultProxyURL      = "https://{id}-{port}.proxy.runpod.net"
	DefaultPort          = 8000
	DefaultLookupTimeout = 3 * time.Second
	DefaultStartTimeout  = 3 * time.Second
)

// Key is the RunPod API key: a secret, which formats as "[redacted]".
type Key = pluginapi.Secret

// Config configures a Client. Key is required; every other field has a
// default.
type Config struct {
	// URL is the base URL of RunPod's REST API v2, to which /pods/{id}
	// is appended. Empty means DefaultURL (https://api.runpod.io/v2).
	URL string
	// Key is the RunPod API key, sent as "Authorization: Bearer" on every
	// request. Required.
	Key Key
	// Port is the pod's internal HTTP port of the model. Zero means
	// DefaultPort (8000).
	Port int
	// ProxyURL is the model's base URL for a running pod: {id} becomes the
	// pod's id and {port} Port. Empty means DefaultProxyURL, RunPod's HTTP
	// proxy (https://{id}-{port}.proxy.runpod.net).
	ProxyURL string
	// Pods maps the host's pod names to RunPod pod ids. A name it does not
	// hold is the pod's id.
	Pods map[string]string
	// LookupTimeout caps one GetPod. Zero means DefaultLookupTimeout (3s).
	LookupTimeout time.Duration
	// StartTimeout caps one StartPod or StopPod, the read that follows a
	// 409 included. Zero means DefaultStartTimeout (3s).
	StartTimeout time.Duration
	// HTTPClient makes the requests. Nil means pluginapi.NewHTTPClient().
	HTTPClient *http.Client
	// Logger gets one line per start and stop outcome. Nil means none.
	Logger hclog.Logger
}

// ConfigFromEnv reads a Config from the plugin's environment through
// getenv (os.Getenv in main). Every error names the variable that is wrong
// and never quotes a secret.
func ConfigFromEnv(getenv func(string) string) (Config, error) {
	cfg := Config{URL: getenv(EnvURL), ProxyURL: getenv(EnvProxyURL)}
	name := getenv(EnvAPIKeyEnv)
	if name == "" {
		return Config{}, fmt.Errorf("%s: not set: name the variable that holds the RunPod API key", EnvAPIKeyEnv)
	}
	if cfg.Key = Key(getenv(name)); cfg.Key == "" {
		return Config{}, fmt.Errorf("%s: the variable it names, %s, is empty", EnvAPIKeyEnv, name)
	}
	if v := getenv(EnvPort); v != "" {
		p, err := strconv.Atoi(v)
		if err != nil || p < 1 || p > 65535 {
			return Config{}, fmt.Errorf("%s: %q is not a port", EnvPort, v)
		}
		cfg.Port = p
	}
	pods, err := parsePods(getenv(EnvPods))
	if err != nil {
		return Config{}, fmt.Errorf("%s: %w", EnvPods, err)
	}
	cfg.Pods = pods
	getDuration := func(env string, def time.Duration) (time.Duration, error) {
		v := getenv(env)
		if v == "" {
			return def, nil
		}
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			return 0, fmt.Errorf("%s: %q is not a positive duration", env, v)
		}
		return d, nil
	}
	if cfg.LookupTimeout, err = getDuration(pluginapi.EnvLookupTimeout, DefaultLookupTimeout); err != nil {
		return Config{}, err
	}
	if cfg.StartTimeout, err = getDuration(pluginapi.EnvStartTimeout, DefaultStartTimeout); err != nil {
		return Config{}, err
	}
	return cfg, nil
}

// parsePods reads "name=id,name=id" (spaces around entries are ignored).
func parsePods(v string) (map[string]string, error) {
	if strings.TrimSpace(v) == "" {
		return nil, nil
	}
	pods := map[string]string{}
	for i, entry := range strings.Split(v, ",") {
		name, id, ok := strings.Cut(strings.TrimSpace(entry), "=")
		name, id = strings.TrimSpace(name), strings.TrimSpace(id)
		switch {
		case !ok || name == "":
			return nil, fmt.Errorf("entry %d is not name=id", i+1)
		case !validID(id):
			return nil, fmt.Errorf("entry %d (%s): the pod id is not 1 to 64 letters, digits, '_' or '-'", i+1, name)
		case pods[name] != "":
			return nil, fmt.Errorf("entry %d: pod %s is listed twice", i+1, name)
		}
		pods[name] = id
	}
	return pods, nil
}

// validID reports whether id can be a RunPod pod id, and so a path
// segment as it is: 1 to 64 ASCII letters, digits, '_' or '-'. The API's
// examples are "xedezhzb9la3ye" and "pod_abc123".
func validID(id string) bool { return podIDPattern.MatchString(id) }

var podIDPattern = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// checkURL says what is wrong with an absolute http or https base URL,
// without echoing it (it may carry credentials).
func checkURL(what, raw string) error {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return errors.New(what + " must be an absolute http or https url")
	}
	if u.RawQuery != "" || u.Fragment != "" || u.User != nil {
		return errors.New(what + " must not have a query, a fragment or credentials")
	}
	return nil
}
