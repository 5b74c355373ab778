// Package browser drives a headless Chromium for the tests that need a real
// browser, with chromedp; never imported by non-test code.
//
// A test starts one browser with [New], opens a page with [Browser.Open],
// acts on it with [Page.Do] (chromedp actions), and checks what the page
// wrote to its console ([Page.Errors], [Page.CheckNoErrors]) and what it
// looks like ([Page.Screenshot]).
//
// The browser is the binary WAKE_CHROMIUM names, else a headless shell
// (Debian's chromium-headless-shell: Chromium's old headless mode as a
// program of its own, the same Blink for a third of the CPU a test takes),
// else a full Chromium or Chrome. A test whose browser is missing fails,
// saying how to install one (scripts/install-chromium.sh, which make test
// runs when there is none): it never skips, so a green run always drove a
// browser.
//
// A page's screenshots go into the temporary directory of the test that
// opened it, removed with it, unless the test binary runs with
// -keep-screenshots or WAKE_KEEP_SCREENSHOTS is set (to anything but "" or
// "0"): then into a directory of their own that is kept, named in the test's
// log. So one browser can serve several subtests, each with its own
// screenshots.
package browser

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// The environment variables the package reads.
const (
	EnvChromium        = "WAKE_CHROMIUM"         // the browser binary to run, instead of the one on PATH
	EnvKeepScreenshots = "WAKE_KEEP_SCREENSHOTS" // keep the screenshots, like -keep-screenshots
)

var keepScreenshots = flag.Bool("keep-screenshots", false,
	"keep the browser tests' screenshots in a directory named in the test log (also "+EnvKeepScreenshots+"=1)")

// names are the binaries Find looks for on PATH, in order: the headless
// shells (Debian's, then chromedp's image's name), then the full browsers,
// Debian's chromium first. scripts/install-chromium.sh looks in the same
// order.
var names = []string{"chromium-headless-shell", "headless-shell", "chromium", "chromium-browser", "google-chrome", "google-chrome-stable"}

// Install is what a developer runs when Find finds nothing.
const Install = "scripts/install-chromium.sh"

// Find returns the path of the browser to run: WAKE_CHROMIUM when it is
// set, else the first of names on PATH.
func Find() (string, error) {
	if p := os.Getenv(EnvChromium); p != "" {
		path, err := exec.LookPath(p)
		if err != nil {
			return "", fmt.Errorf("%s=%q is not an executable: %w", EnvChromium, p, err)
		}
		return path, nil
	}
	for _, n := range names {
		if path, err := exec.LookPath(n); err == nil {
			return path, nil
		}
	}
	return "", fmt.Errorf("none of %s is on PATH", strings.Join(names, ", "))
}

// Timeout bounds each call that waits on the browser: its start, a page's
// load, a batch of actions.
const Timeout = 30 * time.Second

// Browser is one headless Chromium, stopped at the end of the test that
// started it.
type Browser struct {
	ctx context.Context // the browser's first tab; pages are tabs beside it
}

// New starts a headless Chromium for t with a 1280×800 window, and stops it
// at t's cleanup. Without a browser it fails t, naming the install script.
func New(t testing.TB) *Browser {
	t.Helper()
	path, err := Find()
	if err != nil {
		t.Fatalf("browser: no Chromium to run the browser test with: %v; run %s (Debian's chromium-headless-shell) or set %s", err, Install, EnvChromium)
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path),
		chromedp.NoSandbox, // CI runs as root, where Chromium's sandbox refuses to start
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.WindowSize(1280, 800),
	)
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(allocCtx)
	t.Cleanup(func() {
		cancel()
		cancelAlloc()
	})
	// The first action on the first tab starts the browser.
	if _, err := within(func() (chromedp.Void, error) { return chromedp.Void{}, chromedp.Do(ctx) }); err != nil {
		t.Fatalf("browser: %s did not start: %v", path, err)
	}
	return &Browser{ctx: ctx}
}

// Keeping reports whether screenshots are kept (-keep-screenshots, or
// WAKE_KEEP_SCREENSHOTS set): a test whose screenshots are only for a
// person to look at takes them only then.
func Keeping() bool {
	v := os.Getenv(EnvKeepScreenshots)
	return *keepScreenshots || (v != "" && v != "0")
}

var unsafeName = regexp.MustCompile(`[^A-Za-z0-9_.-]+`)

// screenshotDir is t's temporary directory, or a kept one.
func screenshotDir(t testing.TB) string {
	if !Keeping() {
		return t.TempDir()
	}
	dir, err := os.MkdirTemp("", "wakeonchat-screenshots-"+unsafeName.ReplaceAllString(t.Name(), "_")+"-")
	if err != nil {
		t.Fatalf("browser: a directory for the screenshots: %v", err)
	}
	t.Logf("browser: screenshots are kept in %s", dir)
	return dir
}

// Page is one tab of the browser, with everything its console received
// since it was opened.
type Page struct {
	t   testing.TB
	ctx context.Context
	dir func() string // where its screenshots go, made at the first Dir or Screenshot

	mu      sync.Mutex
	console []chromedp.ConsoleMessage
	seen    chan struct{} // closed and replaced at each message
	syncs   int
}

// Open opens url in a new tab and waits for its load event. The tab's
// console is recorded from before the request, and the tab closes at the
// end of t.
func (b *Browser) Open(t testing.TB, url string) *Page {
	t.Helper()
	ctx, cancel := chromedp.NewContext(b.ctx)
	p := &Page{t: t, ctx: ctx, seen: make(chan struct{})}
	p.dir = sync.OnceValue(func() string { return screenshotDir(t) })
	var wg sync.WaitGroup
	t.Cleanup(func() {
		cancel()
		wg.Wait()
	})
	// Console subscribes when it returns (it opens the tab), so nothing the
	// page writes is lost; the iterator ends when the tab closes.
	messages := chromedp.Console(ctx)
	wg.Go(func() {
		for m, err := range messages {
			if err != nil {
				return
			}
			p.add(m)
		}
	})
	p.Do(chromedp.Navigate(url))
	return p
}

func (p *Page) add(m chromedp.ConsoleMessage) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.console = append(p.console, m)
	close(p.seen)
	p.seen = make(chan struct{})
}

// Do runs actions on the page, within Timeout, and fails the test on an
// error.
func (p *Page) Do(actions ...chromedp.Action[chromedp.Void]) {
	p.t.Helper()
	if err := p.do(actions...); err != nil {
		p.t.Fatalf("browser: %v", err)
	}
}

func (p *Page) do(actions ...chromedp.Action[chromedp.Void]) error {
	_, err := within(func() (chromedp.Void, error) { return chromedp.Void{}, chromedp.Do(p.ctx, actions...) })
	return err
}

// within runs f, which acts on the browser, and gives up on it after
// Timeout. A deadline on the chromedp context itself would close its tab
// (or the browser) when it passed, so the bound is a timer; a call given up
// on ends when the test's cleanup closes the tab.
func within[T any](f func() (T, error)) (T, error) {
	type result struct {
		v   T
		err error
	}
	done := make(chan result, 1)
	go func() {
		v, err := f()
		done <- result{v, err}
	}()
	timer := time.NewTimer(Timeout)
	defer timer.Stop()
	select {
	case r := <-done:
		return r.v, r.err
	case <-timer.C:
		var zero T
		return zero, fmt.Errorf("the browser did not answer within %v", Timeout)
	}
}

// Console returns every message the page's console received so far: calls
// of the console API, uncaught exceptions and unhandled rejections, and the
// browser's own log entries (a resource that failed to load). It first
// writes a marker through the page and waits for it, so that everything the
// page wrote before the call is in.
func (p *Page) Console() []chromedp.ConsoleMessage {
	p.t.Helper()
	p.mu.Lock()
	p.syncs++
	marker := fmt.Sprintf("wakeonchat-browser-sync-%d", p.syncs)
	p.mu.Unlock()
	p.Do(chromedp.Evaluate[chromedp.Void](fmt.Sprintf("console.debug(%q)", marker)))
	deadline := time.After(Timeout)
	for {
		p.mu.Lock()
		for i, m := range p.console {
			if m.Type == chromedp.ConsoleDebug && m.Text == marker {
				var out []chromedp.ConsoleMessage
				for _, m := range p.console[:i] {
					if !isMarker(m) {
						out = append(out, m)
					}
				}
				p.mu.Unlock()
				return out
			}
		}
		seen := p.seen
		p.mu.Unlock()
		select {
		case <-seen:
		case <-deadline:
			p.t.Fatalf("browser: the console marker %s did not come back within %v", marker, Timeout)
		}
	}
}

func isMarker(m chromedp.ConsoleMessage) bool {
	return m.Type == chromedp.ConsoleDebug && strings.HasPrefix(m.Text, "wakeonchat-browser-sync-")
}

// Errors returns the console's errors so far: console.error calls, uncaught
// exceptions and unhandled rejections, and the browser's error entries.
func (p *Page) Errors() []chromedp.ConsoleMessage {
	p.t.Helper()
	var errs []chromedp.ConsoleMessage
	for _, m := range p.Console() {
		if m.Type == chromedp.ConsoleError || m.IsException() {
			errs = append(errs, m)
		}
	}
	return errs
}

// CheckNoErrors fails the test, listing them, when the console received
// any error so far.
func (p *Page) CheckNoErrors() {
	p.t.Helper()
	for _, m := range p.Errors() {
		where := m.URL
		if where != "" {
			where = fmt.Sprintf(" (%s:%d)", where, m.Line+1)
		}
		p.t.Errorf("browser: console %s%s", m, where)
	}
}

// Dir is where the page's screenshots go (see the package's doc).
func (p *Page) Dir() string { return p.dir() }

// Screenshot writes a PNG of the whole page as name.png into the page's
// screenshot directory (Dir) and returns its path.
func (p *Page) Screenshot(name string) string {
	p.t.Helper()
	png, err := p.screenshot()
	if err != nil {
		p.t.Fatalf("browser: screenshot %s: %v", name, err)
	}
	path := filepath.Join(p.dir(), unsafeName.ReplaceAllString(name, "_")+".png")
	if err := os.WriteFile(path, png, 0o644); err != nil {
		p.t.Fatalf("browser: screenshot %s: %v", name, err)
	}
	if Keeping() {
		p.t.Logf("browser: screenshot %s", path)
	}
	return path
}

func (p *Page) screenshot() ([]byte, error) {
	return within(func() ([]byte, error) { return chromedp.Run(p.ctx, chromedp.FullScreenshot(100)) })
}

// Context is the page's chromedp context, for chromedp.Run of an action
// that returns a value.
func (p *Page) Context() context.Context { return p.ctx }
