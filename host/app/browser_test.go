package app_test

import (
	"fmt"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/google/go-cmp/cmp"

	"github.com/wakeonchat/wakeonchat/host/internal/browser"
	"github.com/wakeonchat/wakeonchat/host/internal/e2e"
	"github.com/wakeonchat/wakeonchat/host/internal/fakeclock"
)

// EnvStatusScreenshot names a file the browser test copies its screenshot
// of a wake in progress to: `make screenshot` sets it to
// docs/status-page.png.
const EnvStatusScreenshot = "WAKE_STATUS_SCREENSHOT"

// watchStates records, in the page, each state pod qwen's section shows,
// as the page's own script swaps its fragment in.
const watchStates = `(() => {
  window.__seen = [];
  const note = () => {
    const el = document.querySelector("#pod-qwen [data-state]");
    const s = el && el.dataset.state;
    if (s && window.__seen[window.__seen.length - 1] !== s) window.__seen.push(s);
  };
  note();
  new MutationObserver(note).observe(document.body, { subtree: true, childList: true });
  window.__kept = "the page was never reloaded";
  return true;
})()`

// TestStatusPageInBrowser drives the status page in headless Chromium
// through two simulated wakes on a fake clock: the page, loaded once, moves
// from asleep to waking, loading and ready, and after the idle stop to
// waking and loading again, with no reload; the chart shows the first wake
// and that it served a turn; the page fetches the pod again on its own
// between events;
// the console has no error; and the page fits a phone's width. With
// -keep-screenshots or WAKE_KEEP_SCREENSHOTS=1 it takes screenshots along
// the way, kept; with $WAKE_STATUS_SCREENSHOT set (make screenshot) it
// takes the one of the second wake and copies it there.
//
// The page fetches its parts again every statusRefresh, its shortest period
// (status.js takes no less), rather than every 5 s: what only a fetch
// without an event shows (the served turn, the clock as it now reads) comes
// within a second.
func TestStatusPageInBrowser(t *testing.T) {
	t.Parallel()
	const statusRefresh = time.Second
	clk := fakeclock.New(t0)
	// The browser and the host start at once: Chromium takes a second.
	var h *testHost
	var b *browser.Browser
	concurrently(t,
		func(t testing.TB) { b = browser.New(t) },
		func(t testing.TB) {
			h = startHost(t, hostOptions{simulate: true, clock: clk, statusRefresh: statusRefresh})
		},
	)
	p := b.Open(t, h.Base+"/")
	p.Do(chromedp.EmulateViewport(1000, 900))
	dst := os.Getenv(EnvStatusScreenshot)
	// screenshot takes one only for a person to look at: kept, or the one
	// make screenshot copies.
	screenshot := func(name string, copied bool) string {
		t.Helper()
		if !browser.Keeping() && (!copied || dst == "") {
			return ""
		}
		return p.Screenshot(name)
	}

	// waitState waits until the page shows pod qwen in state, by the
	// page's own doing: the test only moves the clock and asks.
	waitState := func(state string) {
		t.Helper()
		expr := fmt.Sprintf(`document.querySelector("#pod-qwen [data-state]").dataset.state === %q`, state)
		if err := pollPage(p, expr); err != nil {
			seen, _ := chromedp.Run(p.Context(), chromedp.Evaluate[[]string](`window.__seen || []`))
			t.Fatalf("the page did not come to show %s (clock at %s): %v; it showed %q", state, clk.Now().Format(time.TimeOnly), err, seen)
		}
	}
	waitState("asleep")
	if err := pollPage(p, `document.querySelector("#pod-qwen").dataset.link === "live"`); err != nil {
		t.Fatalf("the page's event stream did not open: %v", err)
	}
	p.Do(chromedp.Evaluate[chromedp.Void](watchStates))

	// The first wake, from the first ask to ready.
	if got := h.ask(t, "s1", "hello"); got != e2e.ReplyWaking {
		t.Fatalf("first ask: %q", got)
	}
	waitState("waking")
	stepTo(t, clk, t0.Add(7*time.Minute), time.Minute)
	waitState("loading")
	stepTo(t, clk, t0.Add(9*time.Minute), time.Minute)
	waitState("ready")
	if err := pollPage(p, `document.querySelector("#pod-qwen svg.chart g.bar") !== null`); err != nil {
		t.Errorf("the chart shows no wake once the first one is ready: %v", err)
	}
	// A turn the model answers: the chart's dot fills, the table says so.
	if got := h.ask(t, "s1", "hello"); got != "echo: hello" {
		t.Fatalf("ask once ready: %q", got)
	}
	if err := pollPage(p, `document.querySelector("#pod-qwen svg.chart circle.served") !== null`); err != nil {
		t.Errorf("the chart does not show the first wake served: %v", err)
	}
	screenshot("ready", false)

	// The pod stops 15 idle minutes later; the next ask wakes it again.
	clk.Advance(20 * time.Minute)
	second := clk.Now()
	if got := h.ask(t, "s1", "hello again"); got == "" {
		t.Fatal("second ask: no reply")
	}
	waitState("waking")
	stepTo(t, clk, second.Add(7*time.Minute+30*time.Second), 30*time.Second)
	waitState("loading")
	if err := pollPage(p, `document.querySelector("#pod-qwen .wake .steps") !== null`); err != nil {
		t.Errorf("no timeline of the wake in progress: %v", err)
	}
	// With no change to push, the page still fetches the pod again (every
	// statusRefresh): it comes to show the clock as it now reads.
	rendered := fmt.Sprintf(`document.querySelector("#pod-qwen .live").textContent.includes(%q)`,
		"Rendered at "+clk.Now().UTC().Format("15:04:05")+" UTC")
	if err := pollPage(p, rendered); err != nil {
		t.Errorf("the page did not fetch the pod again without an event: %v", err)
	}

	type result struct {
		Seen       []string `json:"seen"`
		Kept       string   `json:"kept"`
		Navigation int      `json:"navigation"`
		Swaps      int      `json:"swaps"`
		Events     int      `json:"events"`
	}
	got, err := chromedp.Run(p.Context(), chromedp.Evaluate[result](`({
		seen: window.__seen, kept: window.__kept,
		navigation: performance.getEntriesByType("navigation").length,
		swaps: window.wakeStatus.swaps, events: window.wakeStatus.events,
	})`))
	if err != nil {
		t.Fatal(err)
	}
	// The second ask's lookup sees the pod stopped before the turn wakes
	// it: the page shows stopped when its fetch comes between the two
	// changes.
	seen := slices.Clone(got.Seen)
	if i := slices.Index(seen, "stopped"); i == 4 {
		seen = slices.Delete(seen, i, i+1)
	}
	want := []string{"asleep", "waking", "loading", "ready", "waking", "loading"}
	if diff := cmp.Diff(want, seen); diff != "" {
		t.Errorf("the states the page showed (-want +got):\n%s", diff)
	}
	if got.Kept != "the page was never reloaded" || got.Navigation != 1 {
		t.Errorf("the page was reloaded: marker %q, %d navigations", got.Kept, got.Navigation)
	}
	// Each pushed change fetches the fragment again (a response overtaken
	// by a newer fetch is dropped).
	if got.Events < 5 || got.Swaps < 5 {
		t.Errorf("the page got %d pushed events and swapped its fragments %d times, want at least 5 of each", got.Events, got.Swaps)
	}
	p.CheckNoErrors()
	if shot := screenshot("second wake loading", true); dst != "" {
		raw, err := os.ReadFile(shot)
		if err == nil {
			err = os.WriteFile(dst, raw, 0o644)
		}
		if err != nil {
			t.Fatalf("copying the screenshot to %s: %v", dst, err)
		}
		t.Logf("screenshot written to %s", dst)
	}

	// On a phone the page fits the width: nothing scrolls sideways.
	p.Do(chromedp.EmulateViewport(390, 844))
	wide, err := chromedp.Run(p.Context(), chromedp.Evaluate[int](`document.documentElement.scrollWidth`))
	if err != nil {
		t.Fatal(err)
	}
	if wide > 390 {
		t.Errorf("on a 390 px phone the page is %d px wide", wide)
	}
	screenshot("phone", false)
	p.CheckNoErrors()
}

// pollPage waits, within 10 s, until expr is true in the page.
func pollPage(p *browser.Page, expr string) error {
	_, err := chromedp.Run(p.Context(), chromedp.Poll[chromedp.Void](expr,
		chromedp.WithPollingInterval(20*time.Millisecond), chromedp.WithPollingTimeout(10*time.Second)))
	return err
}
