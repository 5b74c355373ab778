package runpod

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strings"

	"github.com/wakeonchat/wakeonchat/plugins/pluginapi"
)

// maxProblem bounds how much of a refusal's body is read.
const maxProblem = 64 << 10

// noFreeGPU is what RunPod says when a stopped pod's machine has no free
// GPU to resume it on (pods/troubleshooting/zero-gpus in RunPod's docs;
// the API reference does not list the answer, see the package doc).
const noFreeGPU = "not enough free gpus"

// The statuses in which an action has already had its effect: a start
// that RunPod answers 409 while the pod is in one of them joins the wake
// in progress, and a stop 409 finds the pod stopped.
var (
	startedStatuses = []string{StatusProvisioning, StatusStarting, StatusRunning}
	stoppedStatuses = []string{StatusExited}
)

// StartPod asks RunPod to start (resume) a pod: POST {url}/pods/{id}/action
// with body {"action":"start"}, within StartTimeout. It never returns an
// error: pluginapi.Send classifies the outcome (design D2, #684; the table
// in plugins/README.md), RunPod's answers read so:
//
//   - 200: Requested true with the status.
//   - 409 (the action is not valid for the pod's status): the pod is read
//     within what is left of StartTimeout; when it is PROVISIONING,
//     STARTING or RUNNING a wake is under way and the start joins it:
//     Requested true, Status 409. Otherwise Requested false, Status 409.
//   - any other HTTP status: Requested false with the status, a definite
//     refusal: 401/403 (the key), 404 (no such pod), 429 (rate limited:
//     nothing is retried; the host's next ask wakes again), 400 or 500
//     with "not enough free GPUs" (the pod's machine has no free GPU:
//     logged as such), any 5xx.
//
// A wait or a connection cut after the request was written whole is in
// flight (TimedOut, Lost); no answer otherwise is not sent, a short class
// in Error (start-failed); an invalid name is Error "invalid pod name".
func (c *Client) StartPod(ctx context.Context, name string) (pluginapi.StartResult, error) {
	return c.act(ctx, name, "start", startedStatuses), nil
}

// StopPod asks RunPod to stop a pod ({"action":"stop"}), with StartPod's
// rules; a 409 while the pod is EXITED is Requested: it is stopped.
func (c *Client) StopPod(ctx context.Context, name string) (pluginapi.StartResult, error) {
	return c.act(ctx, name, "stop", stoppedStatuses), nil
}

// outcome is a start's or stop's result and what the plugin's log line
// says about it.
type outcome struct {
	pluginapi.StartResult
	noFreeGPU  bool   // RunPod said the pod's machine has no free GPU
	retryAfter string // a 429's Retry-After
	joined     string // with a 409 that is Requested: the pod's status
}

func (c *Client) act(ctx context.Context, name, action string, done []string) pluginapi.StartResult {
	o := c.send(ctx, name, action, done)
	c.logOutcome(action, name, o)
	return o.StartResult
}

func (c *Client) send(ctx context.Context, name, action string, done []string) outcome {
	id, ok := c.podID(name)
	if !ok {
		return outcome{StartResult: pluginapi.StartResult{Error: "invalid pod name"}}
	}
	req, err := c.request(ctx, http.MethodPost, "/pods/"+id+"/action", strings.NewReader(`{"action":"`+action+`"}`))
	if err != nil {
		return outcome{StartResult: pluginapi.StartResult{Error: pluginapi.ErrorClass(err)}}
	}
	var o outcome
	o.StartResult = pluginapi.Send(c.sendHTTP, req, c.startTimeout, func(ctx context.Context, resp *http.Response) pluginapi.StartResult {
		o = c.answered(ctx, name, id, resp, done)
		return o.StartResult
	})
	return o
}

// answered classifies an HTTP answer to an action, within ctx (the
// action's, capped at StartTimeout). The status is the answer; a
// refusal's body is read (within the cap, and only to tell a machine with
// no free GPU), a 200's is not.
func (c *Client) answered(ctx context.Context, name, id string, resp *http.Response, done []string) outcome {
	o := outcome{StartResult: pluginapi.StartResult{Status: resp.StatusCode}}
	switch resp.StatusCode {
	case http.StatusOK:
		o.Requested = true
		return o
	case http.StatusConflict:
		// RunPod answers 409 to a start while the pod is already starting
		// or running; the wake the host asks for is under way. The read
		// has what is left of the action's cap.
		pod, err := c.read(ctx, c.startTimeout, name, id)
		if err == nil && slices.Contains(done, pod.Status) {
			o.Requested, o.joined = true, pod.Status
		}
		return o
	case http.StatusTooManyRequests:
		if v := resp.Header.Get("Retry-After"); len(v) <= 6 && strings.Trim(v, "0123456789") == "" {
			o.retryAfter = v // seconds; anything else is not logged
		}
	}
	body, _ := io.ReadAll(io.LimitReader(resp.Body, maxProblem))
	o.noFreeGPU = strings.Contains(strings.ToLower(problemText(body)), noFreeGPU)
	return o
}

// problemText is the human text of a RunPod error body: v2's RFC 9457
// problem (title, status, detail, errors) or an older {"error"} or
// {"message"} object, or the body itself when it is not JSON. It is only
// matched against, never logged or returned.
func problemText(body []byte) string {
	var p struct {
		Detail  string   `json:"detail"`
		Errors  []string `json:"errors"`
		Error   string   `json:"error"`
		Message string   `json:"message"`
	}
	if json.Unmarshal(body, &p) != nil {
		return string(body)
	}
	return strings.Join(append([]string{p.Detail, p.Error, p.Message}, p.Errors...), "\n")
}

// logOutcome writes the one line per start or stop outcome. Refusals and
// failures are warnings: the host logs the alertable line (#684).
func (c *Client) logOutcome(action, name string, o outcome) {
	switch {
	case o.TimedOut:
		c.log.Info(action+" requested: in flight (client timed out; RunPod continues)",
			"pod", name, "timeout_ms", o.TimeoutMs)
	case o.Lost:
		c.log.Warn(action+" requested: in flight (the connection was cut after the request was sent; its answer is lost)",
			"pod", name, "error", o.Error)
	case o.joined != "":
		c.log.Info(action+" requested: the pod is already where it leads (RunPod answered 409)",
			"pod", name, "status", o.Status, "pod_status", o.joined)
	case o.Requested:
		c.log.Info(action+" accepted", "pod", name, "status", o.Status)
	case o.noFreeGPU:
		c.log.Warn(action+" refused: the pod's machine has no free GPU", "pod", name, "status", o.Status)
	case o.Status == http.StatusUnauthorized || o.Status == http.StatusForbidden:
		c.log.Warn(action+" refused: RunPod rejected the API key (the variable "+EnvAPIKeyEnv+" names)",
			"pod", name, "status", o.Status)
	case o.Status == http.StatusTooManyRequests:
		c.log.Warn(action+" refused: rate limited by RunPod", "pod", name, "status", o.Status, "retry_after", o.retryAfter)
	case o.Status != 0:
		c.log.Warn(action+" refused", "pod", name, "status", o.Status)
	default:
		c.log.Warn(action+" failed", "pod", name, "error", o.Error)
	}
}
