package openai

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/wakeonchat/wakeonchat/machines"
)

// BenchmarkPrepare is what the door does to a request before it leaves for
// the model (wakebench's 199-word question): it is on every completion's
// way, ready model or not.
func BenchmarkPrepare(b *testing.B) {
	words := make([]string, 199)
	for i := range words {
		words[i] = "w" + strconv.Itoa(i)
	}
	body, err := json.Marshal(map[string]any{"model": "qwen", "stream": true,
		"messages": []map[string]string{{"role": "system", "content": "be brief"}, {"role": "user", "content": strings.Join(words, " ")}}})
	if err != nil {
		b.Fatal(err)
	}
	rec, err := NewRecognizer(machines.DefaultReplies())
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		req, aerr := parseRequest(body)
		if aerr != nil {
			b.Fatal(aerr)
		}
		msgs, _, err := rec.strip(req.messages)
		if err != nil {
			b.Fatal(err)
		}
		req.forward("qwen", msgs)
	}
}
