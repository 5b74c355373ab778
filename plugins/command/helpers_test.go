//go:build unix

package command_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/wakeonchat/wakeonchat/plugins/command"
)

// helperArg as the first argument makes the test binary a fake command
// instead of running the tests: see helper. It is an argument, not an
// environment variable, because a command's environment is exactly what
// the test configures.
const helperArg = "-command-test-helper"

// secret is in the output, arguments or environment of fake commands; it
// must never reach an error, a result or a log line.
const secret = "s3cret-9f2c"

var testBin string // this test binary, for fake commands

func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == helperArg {
		os.Exit(helper(os.Args[2:]))
	}
	bin, err := os.Executable()
	if err != nil {
		fmt.Fprintln(os.Stderr, "test binary:", err)
		os.Exit(1)
	}
	testBin = bin
	os.Exit(m.Run())
}

// helperArgv is the argument vector that runs the test binary as the fake
// command mode with args.
func helperArgv(mode string, args ...string) []string {
	return append([]string{testBin, helperArg, mode}, args...)
}

// helper is the test binary as a fake command. Modes:
//
//	record FILE ARGS...  write {"args": ARGS, "env": the environment} to FILE, exit 0
//	pad N                print a RUNNING JSON object of exactly N bytes, exit 0
//	hold FIFO LOCK       lock LOCK, write "held" to FIFO, then sleep for a minute
//	start DIR            start "serve DIR" in a session of its own, wait until it serves, exit 0
//	serve DIR            the model server: see serve
//	stop DIR             SIGTERM the server whose pid is in DIR/pid, wait until it is gone, exit 0
func helper(args []string) int {
	if len(args) == 0 {
		return 100
	}
	var err error
	switch mode, args := args[0], args[1:]; mode {
	case "record":
		b, _ := json.Marshal(map[string][]string{"args": args[1:], "env": os.Environ()})
		err = os.WriteFile(args[0], b, 0o600)
	case "pad":
		n, _ := strconv.Atoi(args[0])
		obj := `{"status":"RUNNING"}`
		_, err = os.Stdout.WriteString(obj + strings.Repeat(" ", n-len(obj)))
	case "hold":
		if err = lock(args[1]); err == nil {
			err = os.WriteFile(args[0], []byte("held\n"), 0)
			time.Sleep(time.Minute)
		}
	case "start":
		err = startServer(args[0])
	case "serve":
		err = serve(args[0])
	case "stop":
		err = stopServer(args[0])
	default:
		err = fmt.Errorf("unknown mode %q", mode)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 101
	}
	return 0
}

// locked keeps the files lock locked open: a collected *os.File closes
// its descriptor, and that would drop the lock.
var locked []*os.File

// lock takes an exclusive lock on path and keeps it until the process
// exits: the kernel drops it when the process dies, which is how a test
// learns that a process is gone.
func lock(path string) error {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	locked = append(locked, f)
	return syscall.Flock(int(f.Fd()), syscall.LOCK_EX)
}

// startServer is a daemon's start: it runs the server in a session of its
// own (out of the start command's process group, as systemd or docker
// keep theirs), waits for its "ready" line and returns.
func startServer(dir string) error {
	cmd := exec.Command(os.Args[0], helperArg, "serve", dir)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || line != "ready\n" {
		return fmt.Errorf("server did not start: %q %v", line, err)
	}
	return nil
}

// serve is a model server: it listens on a free port of 127.0.0.1,
// answers GET /v1/models with a model list, and writes DIR/addr, then
// DIR/pid (the "running" mark the status script reads), holding DIR/lock.
// On SIGTERM it removes DIR/pid and DIR/addr, closes its listener and
// exits, which drops the lock.
func serve(dir string) error {
	if err := lock(filepath.Join(dir, "lock")); err != nil {
		return err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "addr"), []byte(ln.Addr().String()), 0o600); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "pid"), []byte(strconv.Itoa(os.Getpid())), 0o600); err != nil {
		return err
	}
	term := make(chan os.Signal, 1)
	signal.Notify(term, syscall.SIGTERM)
	go func() {
		<-term
		// The marks go first: closing the listener ends http.Serve, and
		// with it the process.
		_ = os.Remove(filepath.Join(dir, "pid"))
		_ = os.Remove(filepath.Join(dir, "addr"))
		_ = ln.Close()
		os.Exit(0)
	}()
	fmt.Println("ready")
	_ = os.Stdout.Close()
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/models", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"object":"list","data":[{"id":"qwen","object":"model"}]}`))
	})
	return http.Serve(ln, mux)
}

// stopServer sends SIGTERM to the server and returns once it is gone: the
// lock it held is free.
func stopServer(dir string) error {
	b, err := os.ReadFile(filepath.Join(dir, "pid"))
	if err != nil {
		return err
	}
	pid, err := strconv.Atoi(string(b))
	if err != nil {
		return err
	}
	if err := syscall.Kill(pid, syscall.SIGTERM); err != nil {
		return err
	}
	return lock(filepath.Join(dir, "lock"))
}

// script writes a shell script with body to a fresh directory and returns
// its path.
func script(t *testing.T, body string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "cmd.sh")
	if err := os.WriteFile(path, []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

// newRunner returns a Runner for cfg, failing the test on a config error.
func newRunner(t *testing.T, cfg command.Config) *command.Runner {
	t.Helper()
	r, err := command.New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return r
}

// sh is the argv of a one-line shell command.
func sh(line string) []string { return []string{"/bin/sh", "-c", line} }

// testEnv is the commands' environment in most tests.
var testEnv = []string{"PATH=/usr/local/bin:/usr/bin:/bin"}

// nullLogger is a Config.Logger for tests that do not read the log.
var nullLogger = hclog.NewNullLogger()
