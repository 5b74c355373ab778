package openai

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"time"

	"github.com/wakeonchat/wakeonchat/plugins/pluginapi"
)

// ProbeTimeout caps one probe when the host's deadline is later (the host
// caps each probe at its probe interval, 1 s by default).
const ProbeTimeout = 10 * time.Second

// maxModelList is the part of a model list that is read: vLLM lists one
// model, OpenAI itself about a hundred in some 10 KiB.
const maxModelList = 1 << 20

var _ pluginapi.Prober = (*Client)(nil)

// Probe asks the model API at endpoint whether it answers: one GET
// {endpoint}/models with the API key, which vLLM answers only once its
// engine is up and which runs no model. It is answered when the model API
// answers 200 with a model list ({"data": [...]}); otherwise the result
// says why, classified like a completion's failure:
//
//   - the model API (or the proxy in front of it) answered another status:
//     Status and Message "HTTP 502 Bad Gateway", or "HTTP 401: <the JSON
//     error message>" (the key redacted);
//   - a 200 that is not a model list: Status 200, Message "HTTP 200 without
//     a model list";
//   - no response at all: TransportFailure, Message "no response:
//     ECONNREFUSED";
//   - the cap (ProbeTimeout, or ctx's earlier deadline) or ctx cut it:
//     Aborted, Message "timed out after 1s" or "canceled".
//
// The error is always nil.
func (c *Client) Probe(ctx context.Context, endpoint string) (pluginapi.ProbeResult, error) {
	began := time.Now()
	r := c.probe(ctx, endpoint)
	c.log.Debug("probe", "answered", r.Answered, "status", r.Status, "transport_failure", r.TransportFailure,
		"aborted", r.Aborted, "reason", r.Message, "duration_ms", time.Since(began).Milliseconds())
	return r, nil
}

func (c *Client) probe(ctx context.Context, endpoint string) pluginapi.ProbeResult {
	target, err := pluginapi.APIURL(endpoint, "/models")
	if err != nil {
		return pluginapi.ProbeResult{Message: err.Error()}
	}
	timeout := capTimeout(ctx, ProbeTimeout)
	parent := ctx
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	aborted := func(status int) pluginapi.ProbeResult {
		return pluginapi.ProbeResult{Status: status, Aborted: true, Message: abortedMessage(parent, timeout)}
	}

	req, err := http.NewRequestWithContext(ctx, http.MethodGet, target, nil)
	if err != nil {
		return pluginapi.ProbeResult{Message: "build request: " + pluginapi.ErrorClass(err)}
	}
	req.Header.Set("Accept", "application/json")
	c.authorize(req.Header)
	resp, err := c.http.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return aborted(0)
		}
		return pluginapi.ProbeResult{TransportFailure: true, Message: "no response: " + pluginapi.ErrorClass(err)}
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
		return pluginapi.ProbeResult{Status: resp.StatusCode, Message: pluginapi.StatusMessage(resp.StatusCode, body, c.secrets())}
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxModelList+1))
	switch {
	case err != nil && ctx.Err() != nil:
		return aborted(http.StatusOK)
	case err != nil:
		return pluginapi.ProbeResult{Status: http.StatusOK, Message: "response body failed: " + pluginapi.ErrorClass(err)}
	case !isModelList(body):
		return pluginapi.ProbeResult{Status: http.StatusOK, Message: "HTTP 200 without a model list"}
	}
	return pluginapi.ProbeResult{Answered: true, Status: http.StatusOK}
}

// isModelList reports whether body is an OpenAI model list: a JSON object
// whose "data" is an array. A page a proxy serves with 200 is not one.
func isModelList(body []byte) bool {
	var list struct {
		Data []json.RawMessage `json:"data"`
	}
	return len(body) <= maxModelList && json.Unmarshal(body, &list) == nil && list.Data != nil
}
