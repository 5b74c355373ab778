package supervisor_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/wakeonchat/wakeonchat/host/supervisor"
	"github.com/wakeonchat/wakeonchat/plugins/conductor"
	"github.com/wakeonchat/wakeonchat/plugins/pluginapi"
)

// BenchmarkGetPod measures what the plugin boundary adds to a pod lookup:
// "direct" is conductor.Client in this process, "plugin" the same client
// in the wake-plugin-conductor binary behind gRPC with AutoMTLS. Both hit
// the same httptest conductor, so plugin minus direct is the boundary.
//
//	go test -run '^$' -bench GetPod -count 5 ./host/supervisor/
func BenchmarkGetPod(b *testing.B) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, `{"name":"qwen","status":"RUNNING","isRunning":true,"proxyUrl":"https://p-8000.proxy","podId":"p","readySince":"2026-09-09T12:33:56Z","lookup":"FOUND"}`)
	}))
	defer srv.Close()
	ctx := context.Background()

	run := func(b *testing.B, gpu pluginapi.GPU) {
		b.Helper()
		if _, err := gpu.GetPod(ctx, "qwen"); err != nil { // warm the connections
			b.Fatal(err)
		}
		b.ReportAllocs()
		for b.Loop() {
			if _, err := gpu.GetPod(ctx, "qwen"); err != nil {
				b.Fatal(err)
			}
		}
	}

	b.Run("direct", func(b *testing.B) {
		c, err := conductor.New(conductor.Config{URL: srv.URL})
		if err != nil {
			b.Fatal(err)
		}
		run(b, c)
	})
	b.Run("plugin", func(b *testing.B) {
		gpu := supervisor.NewGPU(supervisor.Spec{
			Name: "conductor",
			Path: conductorBin,
			Env:  []string{pluginapi.EnvConductorURL + "=" + srv.URL},
		})
		defer func() { _ = gpu.Close() }()
		if err := gpu.Start(ctx); err != nil {
			b.Fatal(err)
		}
		run(b, gpu)
	})
}
