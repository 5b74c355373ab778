package status

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"

	"github.com/wakeonchat/wakeonchat/host/clock"
	"github.com/wakeonchat/wakeonchat/host/internal/browser"
	"github.com/wakeonchat/wakeonchat/machines"
)

// The page's script ticks the elapsed time of a wake in progress between
// fetches at the host clock's rate: on a clock 60 times the wall's it moves
// about a minute a second of the page's clock, with no fetch (the refresh
// is an hour away and the stream says nothing).
func TestScriptTicksElapsed(t *testing.T) {
	clk := clock.Scaled(60)
	pod, err := machines.NewPod(machines.DefaultPolicy())
	if err != nil {
		t.Fatal(err)
	}
	rec := machines.Record{Pod: "qwen", State: machines.Waking, WakeRequestedAt: clk.Now().Add(-30 * time.Second)}
	s := New(Config{
		Names: []string{"qwen"}, Pods: fakePods{"qwen": {Record: rec, View: machines.View{Status: "EXITED", Lookup: machines.LookupFound}}},
		Policy: pod, Clock: clk, Refresh: time.Hour,
	})
	mux := http.NewServeMux()
	mux.Handle("/", s.Handler())
	// A stream that stays open and silent, as a pod's with no change.
	mux.HandleFunc("/api/pods/qwen/events", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)

	b := browser.New(t)
	p := b.Open(t, srv.URL+"/")
	// The stream's opening fetches the fragment once; after that, two
	// readings 2.5 seconds apart on the page's own clock, which runs on
	// the browser's virtual time: between the readings the browser runs
	// the page's timers and clock 2.5 s ahead at once, without waiting.
	if _, err := chromedp.Run(p.Context(), chromedp.Poll[chromedp.Void](`window.wakeStatus.swaps === 1`,
		chromedp.WithPollingInterval(20*time.Millisecond), chromedp.WithPollingTimeout(10*time.Second))); err != nil {
		t.Fatalf("the page did not fetch its pod once its stream opened: %v", err)
	}
	elapsed := func() (text string, at float64) {
		t.Helper()
		v, err := chromedp.Run(p.Context(), chromedp.Evaluate[struct {
			Text string
			At   float64
		}](`({text: document.querySelector("#pod-qwen [data-elapsed]").textContent, at: performance.now()})`))
		if err != nil {
			t.Fatal(err)
		}
		return v.Text, v.At
	}
	first, firstAt := elapsed()
	budget := 2500.0 // milliseconds
	if _, err := chromedp.Run(p.Context(), chromedp.WaitEvent(emulation.VirtualTimeBudgetExpired, nil,
		chromedp.Action[emulation.SetVirtualTimePolicyResult](func(ctx context.Context, tg *chromedp.Target) (emulation.SetVirtualTimePolicyResult, error) {
			return cdp.Call(ctx, tg, emulation.SetVirtualTimePolicy, emulation.SetVirtualTimePolicyParams{Policy: emulation.VirtualTimePolicyAdvance, Budget: &budget})
		}))); err != nil {
		t.Fatalf("the page's clock did not run 2.5 s ahead: %v", err)
	}
	second, secondAt := elapsed()
	if ran := secondAt - firstAt; ran < budget {
		t.Fatalf("the page's clock ran %.0f ms between the readings, want 2.5 s", ran)
	}
	a, b1 := seconds(t, first), seconds(t, second)
	// 60 s of the host's clock a second of the page's, in ticks of a
	// second: two or three of them.
	if d := b1 - a; d < 90 || d > 210 {
		t.Errorf("the elapsed time read %q, then %q 2.5 s later: %d s, want 120 to 180", first, second, d)
	}
	stats, err := chromedp.Run(p.Context(), chromedp.Evaluate[map[string]int](`window.wakeStatus`))
	if err != nil {
		t.Fatal(err)
	}
	if stats["swaps"] != 1 {
		t.Errorf("the page fetched its sections %d times, want once, on the stream's opening: %v", stats["swaps"], stats)
	}
	p.CheckNoErrors()
}

// seconds reads a duration the page wrote ("45 s", "2 min 24 s", "3 min").
func seconds(t *testing.T, s string) int {
	t.Helper()
	var m, sec int
	switch {
	case durationRE.MatchString(s):
		g := durationRE.FindStringSubmatch(s)
		m, _ = strconv.Atoi(g[1])
		sec, _ = strconv.Atoi(g[2])
	default:
		if _, err := fmt.Sscanf(s, "%d s", &sec); err != nil {
			if _, err := fmt.Sscanf(s, "%d min", &m); err != nil {
				t.Fatalf("the page wrote %q, not a duration", s)
			}
		}
	}
	return m*60 + sec
}

var durationRE = regexp.MustCompile(`^(\d+) min (\d+) s$`)
