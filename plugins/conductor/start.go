package conductor

import (
	"context"
	"net/http"
	"strings"

	"github.com/wakeonchat/wakeonchat/plugins/pluginapi"
)

// StartPod asks the conductor to start (wake) a pod: POST
// {url}/api/pods/{name}/start with Accept and Content-Type
// application/json, body {}, the token header when configured, within
// StartTimeout. It never returns an error: pluginapi.Send classifies the
// outcome (design D2, #684; the table in plugins/README.md). 200 or 202 is
// Requested, any other status a refusal (401/403 usually means
// RIG_WAKE_TOKEN is missing or wrong). A wait cut after the request was
// sent is in flight, TimedOut: the conductor's start blocks until the pod
// runs, so this is the normal outcome of a real wake. A connection cut
// after it was written whole is in flight too, Lost; anything else is not
// sent, with a short class in Error. An invalid name is Error "invalid pod
// name", nothing sent.
func (c *Client) StartPod(ctx context.Context, name string) (pluginapi.StartResult, error) {
	return c.post(ctx, name, "start", true), nil
}

// StopPod asks the conductor to stop a pod: POST {url}/api/pods/{name}/stop,
// with StartPod's rules and without the token.
func (c *Client) StopPod(ctx context.Context, name string) (pluginapi.StartResult, error) {
	return c.post(ctx, name, "stop", false), nil
}

func (c *Client) post(ctx context.Context, name, action string, withToken bool) pluginapi.StartResult {
	r := c.send(ctx, name, action, withToken)
	c.logOutcome(action, name, r)
	return r
}

func (c *Client) send(ctx context.Context, name, action string, withToken bool) pluginapi.StartResult {
	if !pluginapi.ValidPodName(name) {
		return pluginapi.StartResult{Error: "invalid pod name"}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.podURL(name, action), strings.NewReader("{}"))
	if err != nil {
		return pluginapi.StartResult{Error: pluginapi.ErrorClass(err)}
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("Content-Type", "application/json")
	if withToken && c.token != "" {
		req.Header.Set(TokenHeader, string(c.token))
	}
	// The status is the answer (200 and 202 are accepted); the body is not
	// read.
	return pluginapi.Send(c.startHTTP, req, c.startTimeout, nil)
}

// logOutcome writes the one line per start or stop outcome. Refusals and
// failures are warnings: the host logs the alertable line (#684).
func (c *Client) logOutcome(action, name string, r pluginapi.StartResult) {
	switch {
	case r.TimedOut:
		c.log.Info(action+" requested: in flight (client timed out; the conductor continues)",
			"pod", name, "timeout_ms", r.TimeoutMs)
	case r.Lost:
		c.log.Warn(action+" requested: in flight (the connection was cut after the request was sent; its answer is lost)",
			"pod", name, "error", r.Error)
	case r.Requested:
		c.log.Info(action+" accepted", "pod", name, "status", r.Status)
	case action == "start" && (r.Status == http.StatusUnauthorized || r.Status == http.StatusForbidden):
		// An enforced operator-token gate must not silently break wake.
		hint := "start refused: the conductor wants " + pluginapi.EnvWakeToken + ", which is not set"
		if c.token != "" {
			hint = "start refused: the conductor rejected " + pluginapi.EnvWakeToken
		}
		c.log.Warn(hint, "pod", name, "status", r.Status)
	case r.Status != 0:
		c.log.Warn(action+" refused", "pod", name, "status", r.Status)
	default:
		c.log.Warn(action+" failed", "pod", name, "error", r.Error)
	}
}
