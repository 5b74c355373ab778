package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"time"
)

// The floor is what any host in front of the model costs at least: a bare
// httputil.ReverseProxy in a process of its own, between the bench's client
// and the simulated model, as the host is. It is measured beside the host
// in the same runs, so the host's added time is read against it rather
// than against a number from another machine (#18: within 2.5 times
// the floor's added time at p50).

// floorEnv, set to the model's base URL, makes this binary the floor: it
// listens on a loopback port, prints the address on a line of its own and
// proxies every request there until its standard input closes.
const floorEnv = "WAKEBENCH_FLOOR"

// serveFloor runs the floor process (see floorEnv).
func serveFloor(target string) error {
	u, err := url.Parse(target)
	if err != nil {
		return fmt.Errorf("floor target: %w", err)
	}
	rp := httputil.NewSingleHostReverseProxy(u)
	rp.FlushInterval = -1 // every chunk as it arrives, as the host relays it
	// A stream the bench cuts early is not news: its failures are counted
	// from the client's side (the floor's failed requests).
	rp.ErrorLog = log.New(io.Discard, "", 0)
	rp.Transport = &http.Transport{MaxIdleConns: 256, MaxIdleConnsPerHost: 256, IdleConnTimeout: time.Minute}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	fmt.Println(ln.Addr().String())
	go func() { _, _ = io.Copy(io.Discard, os.Stdin); _ = ln.Close() }()
	err = (&http.Server{Handler: rp, ReadHeaderTimeout: 10 * time.Second}).Serve(ln)
	if errors.Is(err, net.ErrClosed) {
		return nil
	}
	return err
}

// floor is a running floor process.
type floor struct {
	base  string // http://127.0.0.1:PORT
	cmd   *exec.Cmd
	stdin io.Closer
}

// startFloor starts a floor in front of target (the model's base URL).
func startFloor(ctx context.Context, target string) (*floor, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, self)
	cmd.Env = append(os.Environ(), floorEnv+"="+target)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting the floor proxy: %w", err)
	}
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		_ = stdin.Close()
		_ = cmd.Wait()
		return nil, fmt.Errorf("the floor proxy printed no address: %w", err)
	}
	return &floor{base: "http://" + strings.TrimSpace(line), cmd: cmd, stdin: stdin}, nil
}

// stop ends the floor process and waits for it.
func (f *floor) stop() error {
	_ = f.stdin.Close()
	done := make(chan error, 1)
	go func() { done <- f.cmd.Wait() }()
	select {
	case err := <-done:
		return err
	case <-time.After(5 * time.Second):
		_ = f.cmd.Process.Kill()
		return errors.New("the floor proxy did not stop within 5s")
	}
}
