package chat

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestNetHTTPError: only net/http's own error answers are recognised, and
// a reason text net/http might add later is not echoed.
func TestNetHTTPError(t *testing.T) {
	t.Parallel()
	type result struct {
		Status int
		Msg    string
		OK     bool
	}
	generic := "malformed HTTP request: the request line or a header is invalid"
	tests := []struct {
		name string
		b    string
		want result
	}{
		{"a bare 400", "HTTP/1.1 400 Bad Request" + errorHeaders + "400 Bad Request", result{400, generic, true}},
		{"a 400 with a known reason", "HTTP/1.1 400 Bad Request: invalid header value" + errorHeaders + "400 Bad Request: invalid header value",
			result{400, "malformed HTTP request: invalid header value", true}},
		{"a 400 with a reason not known", "HTTP/1.1 400 Bad Request: header http://evil.example" + errorHeaders + "400 Bad Request: header http://evil.example",
			result{400, generic, true}},
		{"a 431", "HTTP/1.1 431 Request Header Fields Too Large" + errorHeaders + "431 Request Header Fields Too Large",
			result{431, "request headers are larger than 4096 bytes", true}},
		{"a 417", "HTTP/1.0 417 Expectation Failed\r\nConnection: close\r\nDate: Tue, 01 Dec 2026 10:03:53 GMT\r\nContent-Length: 0\r\n\r\n",
			result{417, "the Expect header is not supported (only 100-continue is)", true}},
		// Not net/http's: left alone.
		{"a 400 whose body differs", "HTTP/1.1 400 Bad Request" + errorHeaders + "something else", result{}},
		{"a 400 with other headers", "HTTP/1.1 400 Bad Request\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n400 Bad Request", result{}},
		{"a 200 in net/http's shape", "HTTP/1.1 200 OK" + errorHeaders + "200 OK", result{}},
		{"half of a 400", "HTTP/1.1 400 Bad Request" + errorHeaders[:10], result{}},
		{"a 417 with a body", "HTTP/1.1 417 Expectation Failed\r\nContent-Length: 2\r\n\r\n{}", result{}},
		{"an answer's head", "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}", result{}},
		{"a body chunk", `"reply":"HTTP/1.1 400 Bad Request\r\n"`, result{}},
		{"nothing", "", result{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got result
			got.Status, got.Msg, got.OK = netHTTPError([]byte(tt.b), 4096)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("netHTTPError (-want +got):\n%s", diff)
			}
		})
	}
}
