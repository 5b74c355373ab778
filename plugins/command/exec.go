package command

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/wakeonchat/wakeonchat/plugins/pluginapi"
)

// waitDelay bounds how long a command's output is waited for once it has
// exited or been killed: a process it left in the background (outside its
// group, or not yet dead) may still hold its standard output.
const waitDelay = time.Second

// outcome is what became of one command.
type outcome struct {
	// notRun is a short class when the command never ran: "not found",
	// "permission denied", "exec format error", "exec failed", or
	// "canceled" / "timeout" when the context ended first.
	notRun string
	// cut is true when the time cap or the caller's context ended while
	// the command ran and it did not exit 0: its group was killed.
	cut bool
	// canceled is true, with cut, when the caller canceled (rather than
	// a deadline, the caller's or the cap).
	canceled bool
	timeout  time.Duration // the cap that applied: Config's, or the caller's deadline when sooner
	waited   time.Duration // with cut: timeout, or how long it ran before the cancellation
	// leftOpen is true when the command exited but something it left
	// running held its standard output past the Runner's waitDelay.
	leftOpen bool
	state    *os.ProcessState // set when it ran
}

// run runs c for pod with the Runner's environment, in a process group of
// its own, within c.timeout and ctx. Standard input and error are
// /dev/null; standard output goes to out, or /dev/null when out is nil.
// On the cap, the caller's cancellation or out's overflow, the whole
// group is killed with SIGKILL.
func (r *Runner) run(parent context.Context, c command, pod string, out *capped) outcome {
	o := outcome{timeout: pluginapi.CapTimeout(parent, c.timeout)}
	argv := c.argvFor(pod)
	path, class := lookPath(argv[0], r.path)
	if class != "" {
		return outcome{notRun: class}
	}
	ctx, cancel := context.WithTimeout(parent, o.timeout)
	defer cancel()
	if err := ctx.Err(); err != nil {
		return outcome{notRun: contextClass(parent)}
	}

	cmd := exec.CommandContext(ctx, path, argv[1:]...)
	cmd.Args[0] = argv[0]
	cmd.Env = r.env // never nil: a nil Env would hand the command the plugin's whole environment
	cmd.WaitDelay = r.waitDelay
	inGroup(cmd)
	if out != nil {
		out.onOver = cancel
		cmd.Stdout = out
	}
	began := time.Now()
	if err := cmd.Start(); err != nil {
		if ctx.Err() != nil {
			return outcome{notRun: contextClass(parent)}
		}
		return outcome{notRun: execClass(err)}
	}
	err := cmd.Wait()
	o.state = cmd.ProcessState
	if o.state == nil {
		return outcome{notRun: "exec failed"}
	}
	switch {
	case ctx.Err() != nil && !o.state.Success():
		o.cut = true
		o.waited = o.timeout
		if pe := parent.Err(); pe != nil && !errors.Is(pe, context.DeadlineExceeded) {
			o.canceled = true
			o.waited = time.Since(began)
		}
	case errors.Is(err, exec.ErrWaitDelay):
		o.leftOpen = true
		killGroup(cmd)
	}
	return o
}

// contextClass names why a command did not run because its context
// ended: the caller's cancellation, or a deadline.
func contextClass(parent context.Context) string {
	if pe := parent.Err(); pe != nil && !errors.Is(pe, context.DeadlineExceeded) {
		return "canceled"
	}
	return "timeout"
}

// lookPath finds file the way a shell does, in the commands' PATH (not
// the plugin's: exec.LookPath reads the process's own environment): a
// name with a slash is used as it is; otherwise the first regular,
// executable file of that name in an absolute directory of path.
// Relative directories are skipped, as exec.LookPath refuses them.
func lookPath(file, path string) (string, string) {
	if strings.Contains(file, "/") {
		return file, ""
	}
	for _, dir := range filepath.SplitList(path) {
		if !filepath.IsAbs(dir) {
			continue
		}
		p := filepath.Join(dir, file)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0 {
			return p, ""
		}
	}
	return "", "not found"
}

// execClass is a short class for a command that could not be started,
// without its path or arguments.
func execClass(err error) string {
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return "not found"
	case errors.Is(err, fs.ErrPermission):
		return "permission denied"
	case errors.Is(err, syscall.ENOEXEC):
		return "exec format error"
	}
	return "exec failed"
}

// capped is a status command's standard output: at most max bytes. The
// first write past max marks it over and calls onOver (which kills the
// command) instead of waiting for the command to stop writing.
type capped struct {
	max    int
	onOver func()

	mu   sync.Mutex
	buf  bytes.Buffer
	over bool
}

var errOverflow = errors.New("output over the cap")

func (w *capped) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.over || w.buf.Len()+len(p) > w.max {
		if !w.over {
			w.over = true
			if w.onOver != nil {
				w.onOver()
			}
		}
		return 0, errOverflow
	}
	return w.buf.Write(p)
}

func (w *capped) result() ([]byte, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.Bytes(), w.over
}
