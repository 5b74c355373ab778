package pluginapi

import (
	"context"
	"crypto/tls"
	"net"
	"net/http"
	"net/http/httptrace"
	"sync/atomic"
	"time"
)

// This file answers, for a GPU plugin's start or stop whose connection
// failed before an answer, whether the request was written whole (design
// D2): then the provider may have it and it is in flight; otherwise it was
// not sent. Send does it all; the conductor and RunPod plugins use it.
//
// httptrace's WroteRequest alone cannot tell: the transport calls it once
// the request is in its write buffer, and writes the buffer to the
// connection afterwards, so a cut before a small request reached the
// socket still reports it written. A start therefore goes on a connection
// of its own (no keep-alive, HTTP/1.1), dialled through sendConn, which
// notes a write that failed or was short; the request was written whole
// when WroteRequest reported no error and no write on its connection
// failed. A connection of its own also means a start is never written on
// a kept-alive connection the provider has just closed, a cut that would
// otherwise look like one after sending.

// sendConn is a connection a start or stop request goes on. It notes
// whether a write failed.
type sendConn struct {
	net.Conn
	writeFailed atomic.Bool
}

func (c *sendConn) Write(p []byte) (int, error) {
	n, err := c.Conn.Write(p)
	if err != nil || n < len(p) {
		c.writeFailed.Store(true)
	}
	return n, err
}

// SendClient returns base for start and stop requests: its transport
// cloned with no keep-alive and no HTTP/2, dialling through a connection
// that notes a failed write: make it once, and send each start or stop
// with it through Send (or follow each request with a Sent).
// A client whose transport is not an *http.Transport, or that dials TLS
// itself, is returned as it is: for it, WroteRequest alone says whether the
// request was written.
func SendClient(base *http.Client) *http.Client {
	rt := base.Transport
	if rt == nil {
		rt = http.DefaultTransport
	}
	t, ok := rt.(*http.Transport)
	if !ok || t.DialTLSContext != nil || t.DialTLS != nil {
		return base
	}
	t = t.Clone()
	t.DisableKeepAlives = true
	t.ForceAttemptHTTP2 = false
	t.TLSNextProto = map[string]func(string, *tls.Conn) http.RoundTripper{} // HTTP/1.1 only
	dial := t.DialContext
	if dial == nil {
		dial = (&net.Dialer{}).DialContext
	}
	t.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		conn, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return &sendConn{Conn: conn}, nil
	}
	c := *base
	c.Transport = t
	return &c
}

// Sent follows one request sent with a SendClient: put Trace in the
// request's context, then ask Whole once its round trip has returned. The
// zero value is ready to use; a Sent follows one request only.
type Sent struct {
	wrote atomic.Bool              // WroteRequest reported no error
	conn  atomic.Pointer[sendConn] // the request's connection, when it is a sendConn
}

// Trace is the client trace to put in the request's context
// (httptrace.WithClientTrace).
func (w *Sent) Trace() *httptrace.ClientTrace {
	return &httptrace.ClientTrace{
		GotConn: func(info httptrace.GotConnInfo) {
			conn := info.Conn
			if tc, ok := conn.(*tls.Conn); ok {
				conn = tc.NetConn()
			}
			if sc, ok := conn.(*sendConn); ok {
				w.conn.Store(sc)
			}
		},
		WroteRequest: func(info httptrace.WroteRequestInfo) {
			if info.Err == nil {
				w.wrote.Store(true)
			}
		},
	}
}

// Whole reports whether the request was written whole to its connection.
// Call it once the request's round trip has returned.
func (w *Sent) Whole() bool {
	if !w.wrote.Load() {
		return false
	}
	sc := w.conn.Load()
	return sc == nil || !sc.writeFailed.Load()
}

// Send sends a start or stop request to a GPU plugin's backend once, with
// client (made once by SendClient), and classifies the outcome as a
// StartResult (design D2, #684; the table in plugins/README.md). It never
// retries. The call honours req's context and caps it at limit, or at the
// context's deadline when that comes sooner:
//
//   - the backend answered: answered classifies the answer, with the call's
//     context (capped) for whatever it does next; it may read the body,
//     which Send closes. A nil answered makes 200 and 202 Requested with
//     the status and any other status a refusal (Requested false, the
//     status), and reads no body.
//   - the cap, the caller's deadline or its cancellation cut the wait after
//     the request was written whole: Requested, TimedOut, TimeoutMs (the
//     cap, or the time waited when the caller canceled): in flight.
//   - the connection was cut after the request was written whole, before
//     an answer and without a timeout: Requested, Lost, the cut's
//     ErrorClass in Error ("ECONNRESET", "EOF", ...): in flight, its answer
//     lost.
//   - otherwise the request was not sent: Error "canceled" (the caller gave
//     up first), "ETIMEDOUT" (the cap fired first, as in a connect
//     timeout), or the ErrorClass of why ("ECONNREFUSED", "DNS",
//     "ECONNRESET" for a connection cut before the request was written
//     whole, ...).
func Send(client *http.Client, req *http.Request, limit time.Duration, answered func(ctx context.Context, resp *http.Response) StartResult) StartResult {
	began := time.Now()
	parent := req.Context()
	timeout := CapTimeout(parent, limit)
	ctx, cancel := context.WithTimeout(parent, timeout)
	defer cancel()

	var sent Sent
	resp, err := client.Do(req.WithContext(httptrace.WithClientTrace(ctx, sent.Trace())))
	if err == nil {
		defer func() { _ = resp.Body.Close() }()
		if answered != nil {
			return answered(ctx, resp)
		}
		ok := resp.StatusCode == http.StatusOK || resp.StatusCode == http.StatusAccepted
		return StartResult{Requested: ok, Status: resp.StatusCode}
	}

	gaveUp := canceled(parent)
	switch {
	case sent.Whole() && ctx.Err() != nil:
		waited := timeout
		if gaveUp {
			waited = time.Since(began)
		}
		return StartResult{Requested: true, TimedOut: true, TimeoutMs: waited.Milliseconds()}
	case gaveUp:
		return StartResult{Error: "canceled"}
	case ctx.Err() != nil:
		return StartResult{Error: "ETIMEDOUT"}
	case sent.Whole():
		// Written whole, then cut: whether the backend got it is unknown,
		// and a start it got goes on.
		return StartResult{Requested: true, Lost: true, Error: ErrorClass(err)}
	}
	return StartResult{Error: ErrorClass(err)}
}
