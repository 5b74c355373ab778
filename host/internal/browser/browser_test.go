package browser_test

import (
	"bytes"
	"flag"
	"fmt"
	"image/png"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/wakeonchat/wakeonchat/host/internal/browser"
)

// The fixed pages the harness is tried on.
const (
	cleanPage = `<!doctype html><html><head><meta charset="utf-8"><title>clean</title></head>
<body style="background:#fff"><h1 id="h">All quiet</h1>
<script>console.log("a log line is no error"); console.warn("nor is a warning");</script></body></html>`

	errorPage = `<!doctype html><html><head><meta charset="utf-8"><title>errors</title></head>
<body style="background:#ffe0e0"><h1>Something went wrong</h1>
<script>
console.error("boom: the harness must see this");
setTimeout(() => { throw new Error("uncaught: and this too"); }, 0);
</script></body></html>`
)

func pages(t *testing.T) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		switch r.URL.Path {
		case "/clean":
			fmt.Fprint(w, cleanPage)
		case "/errors":
			fmt.Fprint(w, errorPage)
		case "/favicon.ico":
			w.WriteHeader(http.StatusNoContent) // no 404 error entry in the console
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

// recorder is a testing.TB that keeps what Errorf reports instead of
// failing: it checks that CheckNoErrors fails a test.
type recorder struct {
	testing.TB
	errors []string
}

func (r *recorder) Errorf(format string, args ...any) {
	r.errors = append(r.errors, fmt.Sprintf(format, args...))
}

func (r *recorder) Helper() {}

// TestHarness tries the harness on one browser, as a test of the host's
// would use it (a Chromium costs seconds of CPU to start): its subtests
// open their pages in it.
func TestHarness(t *testing.T) {
	srv := pages(t)
	b := browser.New(t)
	t.Run("console errors", func(t *testing.T) { testConsoleErrors(t, b, srv) })
	t.Run("screenshot", func(t *testing.T) { testScreenshot(t, b, srv) })
}

// testConsoleErrors: the harness reports a page's console.error and its
// uncaught exception, and nothing for a page that only logs.
func testConsoleErrors(t *testing.T, b *browser.Browser, srv *httptest.Server) {
	clean := b.Open(t, srv.URL+"/clean")
	if errs := clean.Errors(); len(errs) != 0 {
		t.Errorf("the clean page: errors %v, want none", errs)
	}
	var texts []string
	for _, m := range clean.Console() {
		texts = append(texts, m.String())
	}
	if want := []string{"log: a log line is no error", "warning: nor is a warning"}; fmt.Sprint(texts) != fmt.Sprint(want) {
		t.Errorf("the clean page's console %q, want %q", texts, want)
	}
	rec := &recorder{TB: t}
	quiet := b.Open(rec, srv.URL+"/clean")
	quiet.CheckNoErrors()
	if len(rec.errors) != 0 {
		t.Errorf("CheckNoErrors on the clean page reported %q", rec.errors)
	}

	rec = &recorder{TB: t}
	page := b.Open(rec, srv.URL+"/errors")
	// The exception is thrown by a timer after the load: wait for it on
	// the page's own clock, not the test's.
	if _, err := chromedp.Run(page.Context(), chromedp.Evaluate[bool](
		`new Promise(r => setTimeout(() => r(true), 50))`, chromedp.EvalAwaitPromise)); err != nil {
		t.Fatal(err)
	}
	page.CheckNoErrors()
	got := strings.Join(rec.errors, "\n")
	for _, want := range []string{"console error: boom: the harness must see this", "Uncaught Error: uncaught: and this too"} {
		if !strings.Contains(got, want) {
			t.Errorf("CheckNoErrors on the error page reported:\n%s\nwant a line with %q", got, want)
		}
	}
	if len(rec.errors) != 2 {
		t.Errorf("CheckNoErrors reported %d errors, want 2:\n%s", len(rec.errors), got)
	}
}

// testScreenshot: a screenshot is a PNG of the page in the temporary
// directory of the test that opened the page, gone with it, unless
// WAKE_KEEP_SCREENSHOTS keeps it.
func testScreenshot(t *testing.T, b *browser.Browser, srv *httptest.Server) {
	for _, keep := range []bool{false, true} {
		var path string
		t.Run(fmt.Sprintf("keep=%v", keep), func(t *testing.T) {
			if keep {
				t.Setenv(browser.EnvKeepScreenshots, "1")
			} else {
				t.Setenv(browser.EnvKeepScreenshots, "")
			}
			page := b.Open(t, srv.URL+"/clean")
			page.Do(chromedp.EmulateViewport(390, 844)) // a phone
			path = page.Screenshot("clean page")
			if filepath.Dir(path) != page.Dir() || filepath.Base(path) != "clean_page.png" {
				t.Errorf("screenshot at %s, want clean_page.png in %s", path, page.Dir())
			}
			raw, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			img, err := png.Decode(bytes.NewReader(raw))
			if err != nil {
				t.Fatalf("the screenshot is not a PNG: %v", err)
			}
			if w := img.Bounds().Dx(); w != 390 {
				t.Errorf("screenshot %d px wide, want the viewport's 390", w)
			}
			// The heading is drawn: the top-left corner holds dark text
			// pixels somewhere, the page is not blank.
			dark := 0
			for y := 0; y < 80; y++ {
				for x := 0; x < 300; x++ {
					if r, g, bl, _ := img.At(x, y).RGBA(); r < 0x4000 && g < 0x4000 && bl < 0x4000 {
						dark++
					}
				}
			}
			if dark == 0 {
				t.Error("the screenshot shows no heading: it is blank")
			}
		})
		if path == "" {
			continue // the subtest did not run (-run)
		}
		_, err := os.Stat(path)
		switch {
		case keep && err != nil:
			t.Errorf("with %s set the screenshot is gone after its test: %v", browser.EnvKeepScreenshots, err)
		case !keep && err == nil:
			t.Errorf("without -keep-screenshots the screenshot %s outlived its test", path)
		}
		if keep && os.Getenv(browser.EnvKeepScreenshots) == "" && flag.Lookup("keep-screenshots").Value.String() != "true" {
			os.RemoveAll(filepath.Dir(path)) // kept for the check, not for the developer
		}
	}
}

// TestFindNamesTheBrowser: WAKE_CHROMIUM wins, and one that does not exist
// is an error that names it.
func TestFindNamesTheBrowser(t *testing.T) {
	t.Setenv(browser.EnvChromium, filepath.Join(t.TempDir(), "no-such-chromium"))
	if _, err := browser.Find(); err == nil || !strings.Contains(err.Error(), "no-such-chromium") {
		t.Errorf("Find with WAKE_CHROMIUM missing: %v, want an error naming it", err)
	}
	t.Setenv(browser.EnvChromium, "")
	path, err := browser.Find()
	if err != nil {
		t.Fatalf("Find: %v (run %s)", err, browser.Install)
	}
	t.Setenv(browser.EnvChromium, path)
	if got, err := browser.Find(); err != nil || got != path {
		t.Errorf("Find with WAKE_CHROMIUM=%s: %q, %v", path, got, err)
	}
}
