package openai

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// FuzzParseRequest: parsing never panics, and a body it accepts is
// forwarded as the same JSON object with only model changed.
func FuzzParseRequest(f *testing.F) {
	for _, seed := range []string{
		`{"model":"qwen","messages":[{"role":"user","content":"hi"}]}`,
		` { "messages" : [ {"role":"system","content":"s"}, {"role":"user","content":[{"type":"text","text":"x"}]} ] , "model" : "qwen" , "stream":true } `,
		`{"model":"qwen","messages":[{"role":"user","content":"a\u00e9\"}"}],"tools":[{"type":"function"}],"n":1e3}`,
		`{"model":"qwen","model":"x","messages":[]}`,
		`{"model":"qwen","messages":[{"role":"user"}]} []`,
		`[]`, `{`, `{"model":`, `null`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		req, aerr := parseRequest(raw)
		if aerr != nil {
			return
		}
		out := req.forward("the provider's model", nil)
		var in, got map[string]any
		if err := json.Unmarshal(raw, &in); err != nil {
			t.Fatalf("accepted a body that is not a JSON object: %v", err)
		}
		if err := json.Unmarshal(out, &got); err != nil {
			t.Fatalf("forwarded a body that is not JSON: %v\n%s", err, out)
		}
		in["model"] = "the provider's model"
		if diff := cmp.Diff(in, got); diff != "" {
			t.Errorf("forwarded body (-want +got):\n%s", diff)
		}
	})
}
