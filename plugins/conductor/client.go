package conductor

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/wakeonchat/wakeonchat/plugins/pluginapi"
)

// Defaults for the zero Config fields.
const (
	DefaultLookupTimeout = 3 * time.Second
	DefaultStartTimeout  = 3 * time.Second
)

// TokenHeader carries Config.Token on start requests, and only there.
const TokenHeader = "X-Rig-Operator-Token"

// Token is the wake-only operator token (RIG_WAKE_TOKEN): a secret, which
// formats as "[redacted]".
type Token = pluginapi.Secret

// maxBody bounds how much of a conductor answer is read.
const maxBody = 1 << 20

// Config configures a Client. Its zero value is not usable: URL is
// required; every other field has a default.
type Config struct {
	// URL is the conductor's base URL, such as http://conductor:8080
	// (http or https; a path prefix is kept). Required.
	URL string
	// LookupTimeout caps one GetPod. Zero means DefaultLookupTimeout (3s).
	LookupTimeout time.Duration
	// StartTimeout caps one StartPod or StopPod. Zero means
	// DefaultStartTimeout (3s).
	StartTimeout time.Duration
	// Token is the wake-only operator token (RIG_WAKE_TOKEN). When set it
	// is sent as X-Rig-Operator-Token on start requests and nowhere else.
	// Empty means no header.
	Token Token
	// HTTPClient makes the requests. Nil means a client of the Client's own
	// that ignores proxy settings and follows no redirects (a redirect is
	// answered as its own status).
	HTTPClient *http.Client
	// Logger gets one line per start and stop outcome. Nil means none.
	Logger hclog.Logger
}

// Client is a pluginapi.GPU backed by the conductor's HTTP API. It is safe
// for concurrent use.
type Client struct {
	base          string
	lookupTimeout time.Duration
	startTimeout  time.Duration
	token         Token
	http          *http.Client
	startHTTP     *http.Client // http for starts and stops: see pluginapi.SendClient
	log           hclog.Logger
}

var _ pluginapi.GPU = (*Client)(nil)

// New validates cfg and returns a Client.
func New(cfg Config) (*Client, error) {
	u, err := url.Parse(cfg.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		// The URL is configuration, not a secret, but it may carry
		// credentials: say what is wrong without echoing it.
		return nil, errors.New("conductor url must be an absolute http or https url")
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return nil, errors.New("conductor url must not have a query or fragment")
	}
	if cfg.LookupTimeout < 0 || cfg.StartTimeout < 0 {
		return nil, errors.New("conductor timeouts must not be negative")
	}
	c := &Client{
		base:          strings.TrimRight(u.String(), "/"),
		lookupTimeout: cmp.Or(cfg.LookupTimeout, DefaultLookupTimeout),
		startTimeout:  cmp.Or(cfg.StartTimeout, DefaultStartTimeout),
		token:         cfg.Token,
		http:          cfg.HTTPClient,
		log:           cfg.Logger,
	}
	if c.http == nil {
		c.http = pluginapi.NewHTTPClient()
	}
	c.startHTTP = pluginapi.SendClient(c.http)
	if c.log == nil {
		c.log = hclog.NewNullLogger()
	}
	return c, nil
}

func (c *Client) podURL(name, action string) string {
	u := c.base + "/api/pods/" + url.PathEscape(name)
	if action != "" {
		u += "/" + action
	}
	return u
}

// podJSON is the conductor's GET /api/pods/{name} answer. Unknown fields
// are ignored: the conductor adds fields over time.
type podJSON struct {
	Name       string  `json:"name"`
	Status     string  `json:"status"`
	IsRunning  bool    `json:"isRunning"`
	ProxyURL   string  `json:"proxyUrl"`
	PodID      string  `json:"podId"`
	ReadySince string  `json:"readySince"`
	Lookup     *string `json:"lookup"`
}

// GetPod asks the conductor about one pod, within LookupTimeout.
//
// A 200 answer is the pod; an absent or empty lookup means FOUND, and
// readySince is parsed (RFC 3339; one that does not parse counts as none). A 404 whose JSON body says lookup
// NOT_FOUND is a Pod with Lookup NOT_FOUND (the conductor's definite "no
// such pod"), not an error. Everything else is a *pluginapi.LookupError
// that says what happened without the URL: "conductor answered status
// 500", "conductor answered malformed JSON: ...", "conductor timed out
// after 3s", "conductor unreachable: ECONNREFUSED", "invalid pod name".
func (c *Client) GetPod(ctx context.Context, name string) (pluginapi.Pod, error) {
	if !pluginapi.ValidPodName(name) {
		return pluginapi.Pod{}, &pluginapi.LookupError{Message: "invalid pod name"}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.podURL(name, ""), nil)
	if err != nil {
		return pluginapi.Pod{}, &pluginapi.LookupError{Message: "conductor request: " + pluginapi.ErrorClass(err)}
	}
	req.Header.Set("Accept", "application/json")
	a, err := pluginapi.Fetch(c.http, req, c.lookupTimeout, maxBody)
	var fe *pluginapi.FetchError
	if errors.As(err, &fe) {
		return pluginapi.Pod{}, fe.LookupError("conductor")
	}

	switch a.Status {
	case http.StatusOK:
		pod, err := decodePod(name, a.Body)
		if err != nil {
			return pluginapi.Pod{}, &pluginapi.LookupError{Status: a.Status, Message: err.Error()}
		}
		return pod, nil
	case http.StatusNotFound:
		if pod, err := decodePod(name, a.Body); err == nil && pod.Lookup == pluginapi.LookupNotFound {
			return pod, nil
		}
	}
	return pluginapi.Pod{}, &pluginapi.LookupError{
		Status:  a.Status,
		Message: fmt.Sprintf("conductor answered status %d", a.Status),
	}
}

func decodePod(name string, body []byte) (pluginapi.Pod, error) {
	trimmed := strings.TrimLeft(string(body), " \t\r\n")
	if !strings.HasPrefix(trimmed, "{") {
		return pluginapi.Pod{}, errors.New("conductor answered malformed JSON: not an object")
	}
	var p podJSON
	if err := json.Unmarshal(body, &p); err != nil {
		return pluginapi.Pod{}, fmt.Errorf("conductor answered malformed JSON: %s", pluginapi.JSONProblem(err))
	}
	lookup := pluginapi.LookupFound
	if p.Lookup != nil && *p.Lookup != "" {
		switch l := pluginapi.Lookup(*p.Lookup); l {
		case pluginapi.LookupFound, pluginapi.LookupNotFound, pluginapi.LookupUnreadable:
			lookup = l
		default:
			return pluginapi.Pod{}, fmt.Errorf("conductor answered an unknown lookup %.32q", *p.Lookup)
		}
	}
	if p.Name == "" {
		p.Name = name
	}
	return pluginapi.Pod{
		Name:       p.Name,
		Status:     p.Status,
		IsRunning:  p.IsRunning,
		ProxyURL:   p.ProxyURL,
		PodID:      p.PodID,
		ReadySince: pluginapi.ParseReadySince(p.ReadySince),
		Lookup:     lookup,
	}, nil
}
