package conductor

import (
	"strings"
	"testing"

	"github.com/wakeonchat/wakeonchat/plugins/pluginapi"
)

// FuzzDecodePod feeds the conductor's pod JSON decoder arbitrary bodies: it
// never panics, a decoded pod always has a known lookup and a name, and an
// error never quotes more than a short piece of the body.
func FuzzDecodePod(f *testing.F) {
	for _, seed := range []string{
		`{"name":"qwen","status":"RUNNING","isRunning":true,"proxyUrl":"https://abc-8000.proxy.runpod.net","podId":"abc","readySince":"2026-09-09T12:33:56Z","lookup":"FOUND"}`,
		`{"name":"qwen","status":"EXITED","isRunning":false,"podId":"abc"}`,
		`{"name":"qwen","status":"UNKNOWN","lookup":"UNREADABLE"}`,
		`{"lookup":"NOT_FOUND"}`,
		`{"lookup":"MAYBE"}`,
		`{"isRunning":"yes"}`,
		`<!DOCTYPE html><html>Bad Gateway</html>`,
		`{"name":`,
		`[]`,
		`null`,
		``,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		pod, err := decodePod("qwen", body)
		if err != nil {
			if len(err.Error()) > 200 {
				t.Fatalf("error too long (%d bytes): it must not quote the body", len(err.Error()))
			}
			if !strings.HasPrefix(err.Error(), "conductor answered ") {
				t.Fatalf("error %q does not say it is the conductor's answer", err)
			}
			return
		}
		switch pod.Lookup {
		case pluginapi.LookupFound, pluginapi.LookupNotFound, pluginapi.LookupUnreadable:
		default:
			t.Fatalf("decoded lookup %q", pod.Lookup)
		}
		if pod.Name == "" {
			t.Fatal("decoded pod has no name")
		}
	})
}
