package e2e

import (
	"net"
	"net/http"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Wakehost is a wakehost process a test launched (Launch).
type Wakehost struct {
	Cmd    *exec.Cmd
	Addr   string // its -listen address
	Base   string // "http://" + Addr
	Log    *Log   // its standard error
	Client *http.Client
	Exited chan struct{} // closed once the process has been waited for
	Err    error         // cmd.Wait's, once Exited is closed
}

// Launch runs bin with args and "-listen ADDR" on a loopback port found
// free, with env its whole environment, in a process group of its own
// that the kernel kills with the test, and waits within for /readyz 200.
// The port is found free and then handed over, so a test running in
// parallel may take it in between: wakehost then exits at once, and it is
// launched again on another port, up to three times. It is killed at
// cleanup if it still runs.
func Launch(t testing.TB, bin string, args, env []string, within time.Duration) *Wakehost {
	t.Helper()
	for attempt := 1; ; attempt++ {
		h, busy := launchOnce(t, bin, args, env, within)
		if !busy {
			return h
		}
		if attempt == 3 {
			t.Fatalf("wakehost found its port taken three times; the last log:\n%s", h.Log)
		}
	}
}

// launchOnce is one launch; busy is true when wakehost exited because
// another process took the port first.
func launchOnce(t testing.TB, bin string, args, env []string, within time.Duration) (h *Wakehost, busy bool) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	h = &Wakehost{Addr: addr, Base: "http://" + addr, Log: &Log{}, Client: &http.Client{Transport: &http.Transport{}}, Exited: make(chan struct{})}
	h.Cmd = exec.Command(bin, append(append([]string{}, args...), "-listen", addr)...)
	h.Cmd.Env = append([]string{}, env...)
	h.Cmd.Stderr = h.Log
	h.Cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := h.Cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		h.Err = h.Cmd.Wait()
		close(h.Exited)
	}()
	t.Cleanup(func() {
		h.Client.CloseIdleConnections()
		select {
		case <-h.Exited:
		default:
			h.Cmd.Process.Kill()
			<-h.Exited
		}
	})
	deadline := time.Now().Add(within)
	for {
		if resp, err := h.Client.Get(h.Base + "/readyz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return h, false
			}
		}
		select {
		case <-h.Exited:
			if strings.Contains(h.Log.String(), "address already in use") {
				return h, true
			}
			t.Fatalf("wakehost exited before /readyz answered 200: %v\nthe log:\n%s", h.Err, h.Log)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("wakehost: /readyz not 200 within %v\nthe log:\n%s", within, h.Log)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
