package chat

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strconv"
)

// Listener wraps ln so that the error answers net/http writes by itself,
// before any handler runs, are JSON like every other answer: a malformed
// request line or header (400), headers over the server's MaxHeaderBytes
// (431), an unsupported Transfer-Encoding (501) or HTTP version (505), an
// Expect other than 100-continue (417). maxHeaderBytes is the server's
// http.Server.MaxHeaderBytes (0 for net/http's default), named by the 431.
//
// http.Server has no hook for these: it writes each as one fixed text/plain
// response straight to the connection and closes it. The wrapped connection
// recognises exactly those writes and writes a JSON answer of the same
// status in their place. Nothing a handler of this package writes can look
// like one: the handlers write JSON only, whose bodies never hold a raw CR
// or LF, and their headers name application/json.
//
// A request that times out before its headers are read gets no answer at
// all (net/http closes the connection), so there is nothing to rewrite.
func Listener(ln net.Listener, maxHeaderBytes int) net.Listener {
	if maxHeaderBytes <= 0 {
		maxHeaderBytes = http.DefaultMaxHeaderBytes
	}
	return &listener{Listener: ln, maxHeaderBytes: maxHeaderBytes}
}

type listener struct {
	net.Listener
	maxHeaderBytes int
}

func (l *listener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &conn{Conn: c, maxHeaderBytes: l.maxHeaderBytes}, nil
}

// conn is an accepted connection whose net/http error answers are rewritten.
type conn struct {
	net.Conn
	maxHeaderBytes int
}

// Write writes b, or in place of a net/http error answer its JSON form.
// It reports b written whole when the JSON form was.
func (c *conn) Write(b []byte) (int, error) {
	status, msg, ok := netHTTPError(b, c.maxHeaderBytes)
	if !ok {
		return c.Conn.Write(b)
	}
	if _, err := c.Conn.Write(jsonAnswer(status, msg)); err != nil {
		return 0, err
	}
	return len(b), nil
}

// CloseWrite half-closes the connection, as net/http does after a 431 so
// that the client reads the answer before the connection goes.
func (c *conn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

// errorHeaders are the headers of every error answer net/http writes before
// a handler runs (net/http's server.go, Go 1.26).
const errorHeaders = "\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n"

// badRequestDetails are the reasons net/http gives a 400, each a fixed
// string of its own; any other text is not echoed.
var badRequestDetails = map[string]bool{
	"missing required Host header": true,
	"malformed Host header":        true,
	"invalid header name":          true,
	"invalid header value":         true,
}

// netHTTPError recognises b as one of net/http's own error answers and
// returns its status and the message the JSON answer gives.
func netHTTPError(b []byte, maxHeaderBytes int) (int, string, bool) {
	if st, ok := expectationFailed(b); ok {
		return st, "the Expect header is not supported (only 100-continue is)", true
	}
	rest, ok := bytes.CutPrefix(b, []byte("HTTP/1.1 "))
	if !ok {
		return 0, "", false
	}
	line, body, ok := bytes.Cut(rest, []byte(errorHeaders))
	if !ok || len(line) < 4 || line[3] != ' ' {
		return 0, "", false
	}
	status, err := strconv.Atoi(string(line[:3]))
	if err != nil {
		return 0, "", false
	}
	reason := http.StatusText(status)
	switch {
	case status == http.StatusNotImplemented && string(line[4:]) == reason && string(body) == "Unsupported transfer encoding":
		return status, "the Transfer-Encoding is not supported (only chunked is)", true
	case !bytes.Equal(line, body):
		return 0, "", false // every other one repeats its status line as its body
	case status == http.StatusRequestHeaderFieldsTooLarge && string(line[4:]) == reason:
		return status, fmt.Sprintf("request headers are larger than %d bytes", maxHeaderBytes), true
	case status == http.StatusHTTPVersionNotSupported && string(line[4:]) == reason+": unsupported protocol version":
		return status, "the HTTP version is not supported; use HTTP/1.1", true
	case status == http.StatusBadRequest && string(line[4:]) == reason:
		return status, "malformed HTTP request: the request line or a header is invalid", true
	case status == http.StatusBadRequest:
		detail, ok := bytes.CutPrefix(line[4:], []byte(reason+": "))
		if !ok {
			return 0, "", false
		}
		if !badRequestDetails[string(detail)] {
			return status, "malformed HTTP request: the request line or a header is invalid", true
		}
		return status, "malformed HTTP request: " + string(detail), true
	}
	return 0, "", false
}

// expectationFailed recognises net/http's 417, which goes out through the
// usual response path: a status line, Connection, Date and a zero
// Content-Length, no body.
func expectationFailed(b []byte) (int, bool) {
	for _, proto := range []string{"HTTP/1.1 ", "HTTP/1.0 "} {
		line := proto + "417 Expectation Failed\r\n"
		if bytes.HasPrefix(b, []byte(line)) && bytes.HasSuffix(b, []byte("\r\nContent-Length: 0\r\n\r\n")) &&
			bytes.Count(b, []byte("\r\n\r\n")) == 1 {
			return http.StatusExpectationFailed, true
		}
	}
	return 0, false
}

// jsonAnswer is a whole HTTP/1.1 answer with status and {"error": msg},
// closing the connection as net/http's would.
func jsonAnswer(status int, msg string) []byte {
	body, _ := json.Marshal(map[string]string{"error": msg})
	body = append(body, '\n')
	var b bytes.Buffer
	fmt.Fprintf(&b, "HTTP/1.1 %d %s\r\n", status, http.StatusText(status))
	b.WriteString("Content-Type: application/json\r\n")
	fmt.Fprintf(&b, "Content-Length: %d\r\n", len(body))
	b.WriteString("X-Content-Type-Options: nosniff\r\nConnection: close\r\n\r\n")
	b.Write(body)
	return b.Bytes()
}
