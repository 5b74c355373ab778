package main

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/wakeonchat/wakeonchat/host/internal/binaries"
)

// The bench's provider reads its API key from keyEnv, which the harness sets
// in the host's environment and nowhere else. The simulator takes any key.
const (
	keyEnv   = "WAKEBENCH_QWEN_KEY"
	benchKey = "wakebench-key"
)

// The plugins' binary names, as wake.toml names them by default.
const (
	conductorPlugin = binaries.Conductor
	providerPlugin  = binaries.Provider
)

// Bounds on waiting for a host.
const (
	readyzWithin = 30 * time.Second // start to /readyz 200
	readyzPoll   = 2 * time.Millisecond
	exitWithin   = 20 * time.Second // SIGTERM to exit, then SIGKILL
)

// hostSpec is what varies between the hosts the bench starts. Zero fields
// keep wake.toml's defaults.
type hostSpec struct {
	conductorURL string
	startTimeout time.Duration // [conductor] start_timeout; default 3s
	watchPoll    time.Duration // [timings] watch_poll; default 5s
	storeDSN     string        // a PostgreSQL store's connection string, in storeEnv; "" for bbolt
	// stops, when set, puts the provider's pod on a [[backends]] table of
	// kind "conductor" named gpuBackend, at conductorURL, with these stops
	// (which [conductor] does not take), instead of on [conductor].
	stops         *hostStops
	coldStartHold bool // [openai] cold_start = "hold"
}

// hostStops are a backend's stop_after_idle and stop_unserved_after: when
// the host stops a pod it woke; 0 never.
type hostStops struct {
	afterIdle, unservedAfter time.Duration
}

// gpuBackend names the [[backends]] table of hostSpec.stops.
const gpuBackend = "gpu"

// storeEnv holds a PostgreSQL host's connection string ([store] dsn_env).
const storeEnv = "WAKEBENCH_STORE_DSN"

// writeConfig writes dir/wake.toml for spec: the simulator as the conductor
// (and as spec.stops's backend), the plugins from binDir, the store in
// dir/data, and one provider whose key is in keyEnv. Every other key keeps
// its default.
func writeConfig(dir, binDir, listen string, spec hostSpec) (string, error) {
	var b strings.Builder
	fmt.Fprintf(&b, "[server]\nlisten = %s\ndata_dir = %s\n\n", strconv.Quote(listen), strconv.Quote("data"))
	fmt.Fprintf(&b, "[plugins]\ndir = %s\n\n", strconv.Quote(binDir))
	fmt.Fprintf(&b, "[conductor]\nurl = %s\n", strconv.Quote(spec.conductorURL))
	if spec.startTimeout > 0 {
		fmt.Fprintf(&b, "start_timeout = %s\n", strconv.Quote(spec.startTimeout.String()))
	}
	if spec.watchPoll > 0 {
		fmt.Fprintf(&b, "\n[timings]\nwatch_poll = %s\n", strconv.Quote(spec.watchPoll.String()))
	}
	if spec.storeDSN != "" {
		fmt.Fprintf(&b, "\n[store]\nbackend = \"postgres\"\ndsn_env = %s\n", strconv.Quote(storeEnv))
	}
	if spec.coldStartHold {
		b.WriteString("\n[openai]\ncold_start = \"hold\"\n")
	}
	if st := spec.stops; st != nil {
		fmt.Fprintf(&b, "\n[[backends]]\nname = %s\nkind = \"conductor\"\nurl = %s\nstop_after_idle = %s\nstop_unserved_after = %s\n",
			strconv.Quote(gpuBackend), strconv.Quote(spec.conductorURL), strconv.Quote(st.afterIdle.String()), strconv.Quote(st.unservedAfter.String()))
	}
	fmt.Fprintf(&b, "\n[[providers]]\nname = \"qwen\"\nplugin = %s\npod = \"qwen\"\npath = \"/v1\"\nmodel = \"qwen\"\napi_key_env = %s\n",
		strconv.Quote(providerPlugin), strconv.Quote(keyEnv))
	if spec.stops != nil {
		fmt.Fprintf(&b, "backend = %s\n", strconv.Quote(gpuBackend))
	}
	b.WriteString("\n[agent]\nproviders = [\"qwen\"]\n")
	path := filepath.Join(dir, "wake.toml")
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		return "", fmt.Errorf("writing wake.toml: %w", err)
	}
	return path, nil
}

// freePort returns a loopback address with a port nobody listened on a
// moment ago.
func freePort() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("finding a free port: %w", err)
	}
	addr := ln.Addr().String()
	if err := ln.Close(); err != nil {
		return "", fmt.Errorf("finding a free port: %w", err)
	}
	return addr, nil
}

// host is a wakehost child process.
type host struct {
	cmd     *exec.Cmd
	base    string // http://127.0.0.1:PORT
	logPath string
	client  *http.Client
	startup time.Duration // process start to the first /readyz 200
	exited  chan struct{} // closed when the process has been waited for
	waitErr error         // valid once exited is closed
	stopped bool
}

// startHost writes a config for spec into a new directory under work,
// starts wakehost on a free loopback port with only keyEnv in its
// environment, and waits until /readyz answers 200.
func startHost(ctx context.Context, work, binDir string, spec hostSpec) (*host, error) {
	dir, err := os.MkdirTemp(work, "host-")
	if err != nil {
		return nil, fmt.Errorf("host directory: %w", err)
	}
	addr, err := freePort()
	if err != nil {
		return nil, err
	}
	// The plugins are wakehost's own, built in, as a go install gives
	// them: dir holds no plugin binary to take precedence.
	cfg, err := writeConfig(dir, dir, addr, spec)
	if err != nil {
		return nil, err
	}
	logPath := filepath.Join(dir, "wakehost.log")
	logf, err := os.Create(logPath)
	if err != nil {
		return nil, fmt.Errorf("host log: %w", err)
	}
	defer logf.Close() // the child has its own descriptor

	cmd := exec.Command(filepath.Join(binDir, "wakehost"), "-config", cfg, "-listen", addr, "-log-format", "json")
	cmd.Env = []string{keyEnv + "=" + benchKey}
	if spec.storeDSN != "" {
		cmd.Env = append(cmd.Env, storeEnv+"="+spec.storeDSN)
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.Dir = dir
	setPdeathsig(cmd)
	h := &host{cmd: cmd, base: "http://" + addr, logPath: logPath, client: newClient(), exited: make(chan struct{})}
	t0 := time.Now()
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting wakehost: %w", err)
	}
	go func() {
		h.waitErr = cmd.Wait()
		close(h.exited)
	}()
	if err := h.awaitReady(ctx, t0); err != nil {
		h.stop()
		return nil, fmt.Errorf("%w\n%s", err, h.logTail(20))
	}
	return h, nil
}

// awaitReady polls /readyz until it answers 200, the process exits, or
// readyzWithin passes, and records the startup time from t0.
func (h *host) awaitReady(ctx context.Context, t0 time.Time) error {
	deadline := t0.Add(readyzWithin)
	for time.Now().Before(deadline) {
		select {
		case <-h.exited:
			return fmt.Errorf("wakehost exited before /readyz answered 200: %v", h.waitErr)
		case <-ctx.Done():
			return ctx.Err()
		default:
		}
		rctx, cancel := context.WithTimeout(ctx, time.Second)
		status, _, _, err := roundTrip(rctx, h.client, http.MethodGet, h.base+"/readyz", nil, nil)
		cancel()
		if err == nil && status == http.StatusOK {
			h.startup = time.Since(t0)
			return nil
		}
		time.Sleep(readyzPoll)
	}
	return fmt.Errorf("wakehost: /readyz not 200 within %v", readyzWithin)
}

// stop sends SIGTERM and waits for the process, killing it after
// exitWithin. It reports an exit that was not clean.
func (h *host) stop() error {
	if h.stopped {
		return nil
	}
	h.stopped = true
	defer h.client.CloseIdleConnections()
	select {
	case <-h.exited:
		return fmt.Errorf("wakehost had already exited: %v", h.waitErr)
	default:
	}
	if err := h.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		return fmt.Errorf("signalling wakehost: %w", err)
	}
	select {
	case <-h.exited:
		if h.waitErr != nil {
			return fmt.Errorf("wakehost exited after SIGTERM: %v\n%s", h.waitErr, h.logTail(10))
		}
		return nil
	case <-time.After(exitWithin):
		_ = h.cmd.Process.Kill()
		<-h.exited
		return fmt.Errorf("wakehost still running %v after SIGTERM; killed", exitWithin)
	}
}

// log is the host's log so far (the host's own JSON lines and its plugins'
// forwarded ones).
func (h *host) log() string {
	b, err := os.ReadFile(h.logPath)
	if err != nil {
		return ""
	}
	return string(b)
}

// logTail is the last n lines of the host's log, for an error message.
func (h *host) logTail(n int) string {
	lines := strings.Split(strings.TrimRight(h.log(), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return "wakehost log (last lines):\n" + strings.Join(lines, "\n")
}

// footprint is the resident memory of a host and its plugins, in KiB:
// each process's VmRSS, and the Pss of the three together. The plugins are
// built in: they run the host's own executable (wakehost plugin NAME),
// whose pages VmRSS counts in every process that maps them; Pss shares
// each page out among them, so the sum is what the three cost the machine.
type footprint struct {
	host, conductor, provider int64
	pss                       int64
}

// footprint reads VmRSS and Pss of the host and of its plugin children.
func (h *host) footprint() (footprint, error) {
	pid := h.cmd.Process.Pid
	var fp footprint
	var err error
	if fp.host, err = vmRSS(pid); err != nil {
		return fp, err
	}
	if fp.pss, err = pss(pid); err != nil {
		return fp, err
	}
	kids, err := children(pid)
	if err != nil {
		return fp, err
	}
	for name, kid := range kids {
		rss, err := vmRSS(kid)
		if err != nil {
			return fp, err
		}
		p, err := pss(kid)
		if err != nil {
			return fp, err
		}
		fp.pss += p
		switch name {
		case conductorPlugin:
			fp.conductor = rss
		case providerPlugin:
			fp.provider = rss
		}
	}
	if fp.conductor == 0 || fp.provider == 0 {
		return fp, fmt.Errorf("plugin processes of wakehost %d not found (children: %v)", pid, kids)
	}
	return fp, nil
}

// vmRSS is the VmRSS line of /proc/PID/status, in KiB.
func vmRSS(pid int) (int64, error) { return kibLine(fmt.Sprintf("/proc/%d/status", pid), "VmRSS:") }

// pss is the Pss line of /proc/PID/smaps_rollup, in KiB.
func pss(pid int) (int64, error) { return kibLine(fmt.Sprintf("/proc/%d/smaps_rollup", pid), "Pss:") }

// kibLine is the value of the line "KEY 12345 kB" of the file at path.
func kibLine(path, key string) (int64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, fmt.Errorf("reading memory: %w", err)
	}
	for line := range strings.Lines(string(b)) {
		if rest, ok := strings.CutPrefix(line, key); ok {
			f := strings.Fields(rest) // "12345 kB"
			if len(f) == 2 && f[1] == "kB" {
				return strconv.ParseInt(f[0], 10, 64)
			}
		}
	}
	return 0, fmt.Errorf("no %s line in %s", key, path)
}

// children maps the executable name of each child of pid to its pid, from
// the parent pid in /proc/*/stat.
func children(pid int) (map[string]int, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, fmt.Errorf("listing processes: %w", err)
	}
	kids := map[string]int{}
	for _, e := range entries {
		kid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue // gone since the listing
		}
		if ppid, ok := parentPID(stat); !ok || ppid != pid {
			continue
		}
		kids[processName(e.Name())] = kid
	}
	return kids, nil
}

// processName is the plugin a process of the host runs: NAME of a built-in
// plugin ("wakehost plugin NAME"), else its executable's file name.
func processName(pid string) string {
	if cmdline, err := os.ReadFile(filepath.Join("/proc", pid, "cmdline")); err == nil {
		if args := strings.Split(string(cmdline), "\x00"); len(args) >= 3 && args[1] == "plugin" {
			return args[2]
		}
	}
	if exe, err := os.Readlink(filepath.Join("/proc", pid, "exe")); err == nil {
		return filepath.Base(exe)
	}
	return ""
}

// parentPID reads the ppid from the contents of /proc/PID/stat.
func parentPID(stat []byte) (int, bool) {
	f := statFields(stat) // state ppid ...
	if len(f) < 2 {
		return 0, false
	}
	ppid, err := strconv.Atoi(f[1])
	return ppid, err == nil
}

// statFields are the fields of the contents of /proc/PID/stat after the
// command name, which is in parentheses and may itself hold spaces and
// parentheses: state, ppid, ...; nil when there is no command name.
func statFields(stat []byte) []string {
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return nil
	}
	return strings.Fields(string(stat[i+1:]))
}
