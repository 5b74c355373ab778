package openai

import (
	"bytes"
	"encoding/json"
	"net/http"

	"github.com/wakeonchat/wakeonchat/host/internal/jsonhttp"
	"github.com/wakeonchat/wakeonchat/host/metrics"
)

// kind is a class of error the door answers, mapped to its status, type
// and code in one table.
type kind int

const (
	kindBadRequest       kind = iota // the request is malformed; names the field
	kindModelNotFound                // model is not a provider's name
	kindUnauthorized                 // keys are configured and the bearer key is missing or wrong
	kindOriginNotAllowed             // a CORS preflight from an origin not in [openai] cors_origins
	kindNotFound                     // no such endpoint
	kindMethod                       // the endpoint does not take this method
	kindTooLarge                     // the body is over [server] max_body_bytes
	kindMediaType                    // the Content-Type is not application/json
	kindProviderFailed               // a provider or config-class failure (D5): never wakes
	kindInternal                     // a bug on the host's side
)

// errorClass is one row of the table.
type errorClass struct {
	status int
	typ    string
	code   string // "" for null
	// noRetry sets x-should-retry: false: the SDKs retry 408, 409, 429
	// and 5xx, and a retry of this one cannot help.
	noRetry bool
	result  string // the turn metrics' error class
}

var errorClasses = map[kind]errorClass{
	kindBadRequest:       {status: http.StatusBadRequest, typ: "invalid_request_error", result: metrics.ResultBadRequest},
	kindModelNotFound:    {status: http.StatusNotFound, typ: "invalid_request_error", code: "model_not_found", result: metrics.ResultModelNotFound},
	kindUnauthorized:     {status: http.StatusUnauthorized, typ: "invalid_request_error", code: "invalid_api_key"},
	kindOriginNotAllowed: {status: http.StatusForbidden, typ: "invalid_request_error", code: "origin_not_allowed"},
	kindNotFound:         {status: http.StatusNotFound, typ: "invalid_request_error", code: "unknown_url"},
	kindMethod:           {status: http.StatusMethodNotAllowed, typ: "invalid_request_error", code: "method_not_allowed", result: metrics.ResultMethodNotAllowed},
	kindTooLarge:         {status: http.StatusRequestEntityTooLarge, typ: "invalid_request_error", code: "request_too_large", result: metrics.ResultTooLarge},
	kindMediaType:        {status: http.StatusUnsupportedMediaType, typ: "invalid_request_error", code: "unsupported_media_type", result: metrics.ResultUnsupportedMediaType},
	kindProviderFailed:   {status: http.StatusBadGateway, typ: "api_error", code: "provider_failed", result: metrics.ResultProviderFailed},
	kindInternal:         {status: http.StatusInternalServerError, typ: "api_error", code: "internal_error", noRetry: true, result: metrics.ResultInternalError},
}

// apiError is an error the door answers in the OpenAI shape. message is
// written by this package, or scrubbed, never an error's raw text.
type apiError struct {
	kind    kind
	message string
	param   string // the field at fault; "" for null
	// status, typ and code, when set, override the table's: a model's own
	// 4xx relayed (see modelError).
	status  int
	typ     string
	code    string
	noRetry bool
}

func (e *apiError) Error() string { return e.message }

// class is e's row of the table with e's own overrides.
func (e *apiError) class() errorClass {
	c := errorClasses[e.kind]
	if e.status != 0 {
		c.status = e.status
	}
	if e.typ != "" {
		c.typ = e.typ
	}
	if e.code != "" {
		c.code = e.code
	}
	c.noRetry = c.noRetry || e.noRetry
	return c
}

// turnResult is the turn metrics' class of a completion answered with e: a
// model's own error relayed is model_error.
func (e *apiError) turnResult() string {
	if e.status != 0 {
		return metrics.ResultModelError
	}
	return errorClasses[e.kind].result
}

// clientFault reports whether e is a model's refusal of what the client
// sent (its 400, 413 or 422, relayed): the client's mistake, where any
// other failure, a model's 429 included, is the operator's.
func (e *apiError) clientFault() bool {
	return e.status != 0 && e.status != http.StatusTooManyRequests && e.status < http.StatusInternalServerError
}

// logFailed logs a failed turn about p, answered with e, once: a client's
// mistake at INFO ("openai request rejected by the model"), anything else
// at ERROR ("openai turn failed"), for the operator.
func (s *Server) logFailed(p *Provider, e *apiError, err error) {
	if e.clientFault() {
		s.cfg.Logger.Info("openai request rejected by the model", "provider", p.Name, "status", e.status, "err", scrub(err.Error()))
		return
	}
	s.cfg.Logger.Error("openai turn failed", "provider", p.Name, "err", scrub(err.Error()))
}

// badRequest is a 400 about param ("" for the whole body).
func badRequest(param, message string) *apiError {
	return &apiError{kind: kindBadRequest, param: param, message: message}
}

// errorBody is {"error":{"message","type","param","code"}}.
type errorBody struct {
	Error errorDetail `json:"error"`
}

type errorDetail struct {
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Param   *string `json:"param"`
	Code    *string `json:"code"`
}

// orNull is s, or JSON null for "".
func orNull(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// body is e in the OpenAI error shape.
func (e *apiError) body() errorBody {
	c := e.class()
	return errorBody{Error: errorDetail{Message: e.message, Type: c.typ, Param: orNull(e.param), Code: orNull(c.code)}}
}

// writeError answers e with its status and the OpenAI error shape.
func writeError(w http.ResponseWriter, e *apiError) {
	c := e.class()
	if c.noRetry {
		w.Header().Set("X-Should-Retry", "false")
	}
	writeJSON(w, c.status, e.body())
}

// writeJSON writes v as the whole response body with status.
func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := marshal(v)
	if err != nil {
		status, b = http.StatusInternalServerError, []byte(`{"error":{"message":"internal error","type":"api_error","param":null,"code":"internal_error"}}`+"\n")
	}
	jsonhttp.WriteBytes(w, status, "application/json", b)
}

// marshal is v as JSON and a newline, without HTML escaping: a message
// such as "Bearer <key>" reads as written.
func marshal(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}
