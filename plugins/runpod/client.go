package runpod

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/wakeonchat/wakeonchat/plugins/pluginapi"
)

// maxBody bounds how much of a RunPod answer is read.
const maxBody = 1 << 20

// RunPod's pod statuses (PodStatus in the v2 OpenAPI schema).
const (
	StatusProvisioning = "PROVISIONING" // being allocated
	StatusStarting     = "STARTING"     // the container is starting
	StatusRunning      = "RUNNING"      // the container is healthy
	StatusExited       = "EXITED"       // stopped
	StatusError        = "ERROR"        // the container is in an unrecoverable error state
	StatusTerminated   = "TERMINATED"   // permanently deleted
)

// Client is a pluginapi.GPU backed by RunPod's REST API v2. It is safe for
// concurrent use.
type Client struct {
	base          string
	key           Key
	port          string
	proxyURL      string
	pods          map[string]string
	lookupTimeout time.Duration
	startTimeout  time.Duration
	http          *http.Client
	sendHTTP      *http.Client // http for starts and stops: see pluginapi.SendClient
	log           hclog.Logger
}

var _ pluginapi.GPU = (*Client)(nil)

// New validates cfg and returns a Client.
func New(cfg Config) (*Client, error) {
	if cfg.URL == "" {
		cfg.URL = DefaultURL
	}
	if err := checkURL("runpod url", cfg.URL); err != nil {
		return nil, err
	}
	if cfg.Key == "" {
		return nil, errors.New("runpod api key is required")
	}
	if cfg.Port == 0 {
		cfg.Port = DefaultPort
	}
	if cfg.Port < 1 || cfg.Port > 65535 {
		return nil, errors.New("runpod port must be 1 to 65535")
	}
	if cfg.ProxyURL == "" {
		cfg.ProxyURL = DefaultProxyURL
	}
	if err := checkURL("runpod proxy url", expand(cfg.ProxyURL, "podid", "8000")); err != nil {
		return nil, err
	}
	for name, id := range cfg.Pods {
		if !validID(id) {
			return nil, fmt.Errorf("runpod pod %s: the pod id is not 1 to 64 letters, digits, '_' or '-'", name)
		}
	}
	if cfg.LookupTimeout < 0 || cfg.StartTimeout < 0 {
		return nil, errors.New("runpod timeouts must not be negative")
	}
	c := &Client{
		base:          strings.TrimRight(cfg.URL, "/"),
		key:           cfg.Key,
		port:          strconv.Itoa(cfg.Port),
		proxyURL:      cfg.ProxyURL,
		pods:          cfg.Pods,
		lookupTimeout: cmp.Or(cfg.LookupTimeout, DefaultLookupTimeout),
		startTimeout:  cmp.Or(cfg.StartTimeout, DefaultStartTimeout),
		http:          cfg.HTTPClient,
		log:           cfg.Logger,
	}
	if c.http == nil {
		c.http = pluginapi.NewHTTPClient()
	}
	c.sendHTTP = pluginapi.SendClient(c.http)
	if c.log == nil {
		c.log = hclog.NewNullLogger()
	}
	return c, nil
}

// expand fills a proxy URL template.
func expand(tmpl, id, port string) string {
	return strings.NewReplacer("{id}", id, "{port}", port).Replace(tmpl)
}

// podID is the RunPod id of the host's pod name: its entry in Pods, or the
// name itself; false when that is no valid id.
func (c *Client) podID(name string) (string, bool) {
	if id, ok := c.pods[name]; ok {
		return id, true
	}
	return name, validID(name)
}

// request builds a request to RunPod with the key and JSON headers.
func (c *Client) request(ctx context.Context, method, path string, body io.Reader) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, body)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+string(c.key))
	req.Header.Set("Accept", "application/json")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	return req, nil
}

// podJSON is the part of RunPod's v2 Pod object the plugin reads. Unknown
// fields are ignored.
type podJSON struct {
	ID     string `json:"id"`
	Status string `json:"status"`
}

// GetPod asks RunPod about one pod (GET {url}/pods/{id}), within
// LookupTimeout.
//
// A 200 is the pod: RUNNING is running, with the model's proxy URL;
// PROVISIONING, STARTING, EXITED and ERROR are not running; TERMINATED
// (permanently deleted) is Lookup NOT_FOUND, as is a 404. ReadySince is
// always zero: RunPod knows when the container started, not when the
// model answered, and the host's probe finds that. Everything else is a
// *pluginapi.LookupError that says what happened without the URL or the
// key: "runpod answered status 401 (API key rejected)", "runpod answered
// status 429 (rate limited)", "runpod answered status 503", "runpod
// answered malformed JSON: ...", "runpod answered an unknown status
// \"PAUSED\"", "runpod timed out after 3s", "runpod unreachable:
// ECONNREFUSED", "invalid pod name".
func (c *Client) GetPod(ctx context.Context, name string) (pluginapi.Pod, error) {
	id, ok := c.podID(name)
	if !ok {
		return pluginapi.Pod{}, &pluginapi.LookupError{Message: "invalid pod name"}
	}
	return c.read(ctx, c.lookupTimeout, name, id)
}

// read is GetPod's request within ctx, capped at limit.
func (c *Client) read(ctx context.Context, limit time.Duration, name, id string) (pluginapi.Pod, error) {
	req, err := c.request(ctx, http.MethodGet, "/pods/"+id, nil)
	if err != nil {
		return pluginapi.Pod{}, &pluginapi.LookupError{Message: "runpod request: " + pluginapi.ErrorClass(err)}
	}
	a, err := pluginapi.Fetch(c.http, req, limit, maxBody)
	var fe *pluginapi.FetchError
	if errors.As(err, &fe) {
		return pluginapi.Pod{}, fe.LookupError("runpod")
	}
	switch a.Status {
	case http.StatusOK:
		pod, err := c.decodePod(name, id, a.Body)
		if err != nil {
			return pluginapi.Pod{}, &pluginapi.LookupError{Status: a.Status, Message: err.Error()}
		}
		return pod, nil
	case http.StatusNotFound:
		return pluginapi.Pod{Name: name, PodID: id, Lookup: pluginapi.LookupNotFound}, nil
	}
	return pluginapi.Pod{}, &pluginapi.LookupError{Status: a.Status, Message: "runpod answered status " + statusWords(a.Status)}
}

// statusWords is an HTTP status with what it means from RunPod.
func statusWords(status int) string {
	s := strconv.Itoa(status)
	switch status {
	case http.StatusUnauthorized, http.StatusForbidden:
		return s + " (API key rejected)"
	case http.StatusTooManyRequests:
		return s + " (rate limited)"
	}
	return s
}

func (c *Client) decodePod(name, id string, body []byte) (pluginapi.Pod, error) {
	if !strings.HasPrefix(strings.TrimLeft(string(body), " \t\r\n"), "{") {
		return pluginapi.Pod{}, errors.New("runpod answered malformed JSON: not an object")
	}
	var p podJSON
	if err := json.Unmarshal(body, &p); err != nil {
		return pluginapi.Pod{}, fmt.Errorf("runpod answered malformed JSON: %s", pluginapi.JSONProblem(err))
	}
	if p.ID != id {
		return pluginapi.Pod{}, errors.New("runpod answered about another pod")
	}
	pod := pluginapi.Pod{Name: name, Status: p.Status, PodID: id, Lookup: pluginapi.LookupFound}
	switch p.Status {
	case StatusRunning:
		pod.IsRunning = true
		pod.ProxyURL = expand(c.proxyURL, id, c.port)
	case StatusProvisioning, StatusStarting, StatusExited, StatusError:
	case StatusTerminated:
		pod.Lookup = pluginapi.LookupNotFound
	case "":
		return pluginapi.Pod{}, errors.New("runpod answered no status")
	default:
		return pluginapi.Pod{}, fmt.Errorf("runpod answered an unknown status %.32q", p.Status)
	}
	return pod, nil
}
