package status

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/wakeonchat/wakeonchat/host/clock"
	"github.com/wakeonchat/wakeonchat/host/internal/browser"
	"github.com/wakeonchat/wakeonchat/machines"
)

// The page's script ticks the elapsed time of a wake in progress between
// fetches at the host clock's rate: on a clock 60 times the wall's it moves
// about a minute a wall second, with no fetch (the refresh is an hour away
// and the stream says nothing).
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
	// readings 2.5 wall seconds apart, on the page's own clock.
	if _, err := chromedp.Run(p.Context(), chromedp.Poll[chromedp.Void](`window.wakeStatus.swaps === 1`,
		chromedp.WithPollingInterval(20*time.Millisecond), chromedp.WithPollingTimeout(10*time.Second))); err != nil {
		t.Fatalf("the page did not fetch its pod once its stream opened: %v", err)
	}
	read, err := chromedp.Run(p.Context(), chromedp.Evaluate[[]string](`new Promise(resolve => {
		const el = () => document.querySelector("#pod-qwen [data-elapsed]").textContent;
		const first = el();
		setTimeout(() => resolve([first, el()]), 2500);
	})`, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatal(err)
	}
	a, b1 := seconds(t, read[0]), seconds(t, read[1])
	// 60 s of the host's clock a wall second, in ticks of a wall second:
	// two or three of them.
	if d := b1 - a; d < 90 || d > 210 {
		t.Errorf("the elapsed time read %q, then %q 2.5 s later: %d s, want 120 to 180", read[0], read[1], d)
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
