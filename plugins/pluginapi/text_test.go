package pluginapi_test

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/wakeonchat/wakeonchat/plugins/pluginapi"
)

// JSONProblem names what is wrong with a body without quoting it, the same
// way for json.Unmarshal and for a json.Decoder's tokens.
func TestJSONProblem(t *testing.T) {
	unmarshal := func(body string) error {
		var v struct{ N int }
		return json.Unmarshal([]byte(body), &v)
	}
	decode := func(body string) error {
		var v struct{ N int }
		return json.NewDecoder(bytes.NewReader([]byte(body))).Decode(&v)
	}
	tokens := func(body string) error {
		dec := json.NewDecoder(bytes.NewReader([]byte(body)))
		for {
			if _, err := dec.Token(); err != nil {
				return err
			}
		}
	}
	tests := []struct {
		name string
		err  error
		want string
	}{
		{"syntax", unmarshal(`{"N" 1}`), "syntax error at offset 6"},
		{"truncated, unmarshal", unmarshal(`{"N":`), "syntax error at offset 5"},
		{"truncated inside a value, decoder", decode(`{"N":`), "truncated"},
		{"truncated between tokens, decoder", tokens(`{"N":1`), "truncated"},
		{"wrong type", unmarshal(`{"N":"x"}`), "field N is a JSON string"},
	}
	for _, tt := range tests {
		if got := pluginapi.JSONProblem(tt.err); got != tt.want {
			t.Errorf("%s: JSONProblem(%v) = %q, want %q", tt.name, tt.err, got, tt.want)
		}
	}
}
