//go:build unix

package command_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"text/template"

	"github.com/google/go-cmp/cmp"

	"github.com/wakeonchat/wakeonchat/plugins/command"
	"github.com/wakeonchat/wakeonchat/plugins/pluginapi"
	"github.com/wakeonchat/wakeonchat/plugins/pluginapi/plugintest"
)

// backendsDoc is the page whose working lines these tests run.
const backendsDoc = "../../docs/backends.md"

// docBlocks reads docs/backends.md's code blocks: the environment of
// each block that starts with "# backend: NAME" (its NAME='value' lines,
// the value shell-quoted in single quotes), and the text of each block
// that starts with "# file: NAME".
func docBlocks(t *testing.T) (backends map[string]map[string]string, files map[string]string) {
	t.Helper()
	raw, err := os.ReadFile(backendsDoc)
	if err != nil {
		t.Fatal(err)
	}
	backends, files = map[string]map[string]string{}, map[string]string{}
	var block []string
	in := false
	sc := bufio.NewScanner(bytes.NewReader(raw))
	for sc.Scan() {
		line := sc.Text()
		switch {
		case !in && strings.HasPrefix(line, "```"):
			in, block = true, nil
		case in && line == "```":
			in = false
			if len(block) > 0 {
				docBlock(t, block, backends, files)
			}
		case in:
			block = append(block, line)
		}
	}
	return backends, files
}

func docBlock(t *testing.T, block []string, backends map[string]map[string]string, files map[string]string) {
	t.Helper()
	first := block[0]
	if len(block) > 1 && strings.HasPrefix(block[0], "#!") {
		first = block[1]
	}
	if name, ok := strings.CutPrefix(first, "# file: "); ok {
		files[strings.Fields(name)[0]] = strings.Join(block, "\n") + "\n"
		return
	}
	name, ok := strings.CutPrefix(first, "# backend: ")
	if !ok {
		return
	}
	env := map[string]string{}
	for _, line := range block[1:] {
		k, v, ok := strings.Cut(line, "=")
		if !ok || !strings.HasPrefix(v, "'") || !strings.HasSuffix(v, "'") || strings.Count(v, "'") != 2 {
			t.Fatalf("backend %s: line %q is not NAME='value'", name, line)
		}
		env[k] = strings.Trim(v, "'")
	}
	backends[name] = env
}

// runnerFor is a Runner for a documented backend's environment plus
// extra (the fake's address, the PATH of this machine); extra's pass
// names are added to the documented ones.
func runnerFor(t *testing.T, doc map[string]string, extra map[string]string, pass ...string) *command.Runner {
	t.Helper()
	env := map[string]string{}
	for k, v := range doc {
		env[k] = v
	}
	for k, v := range extra {
		env[k] = v
	}
	names := append(strings.Split(env[command.EnvPassEnv], ","), pass...)
	env[command.EnvPassEnv] = strings.Join(names, ",")
	cfg, err := command.FromEnv(plugintest.Env(env).Getenv)
	if err != nil {
		t.Fatalf("FromEnv: %v", err)
	}
	return newRunner(t, cfg)
}

// Every documented backend's lines are a configuration the plugin
// accepts, as written.
func TestBackendLinesAccepted(t *testing.T) {
	t.Parallel()
	backends, files := docBlocks(t)
	var names []string
	for name, env := range backends {
		names = append(names, name)
		cfg, err := command.FromEnv(plugintest.Env(env).Getenv)
		if err != nil {
			t.Errorf("backend %s: FromEnv: %v", name, err)
			continue
		}
		if _, err := command.New(cfg); err != nil {
			t.Errorf("backend %s: New: %v", name, err)
		}
	}
	if diff := cmp.Diff([]string{"docker", "gcloud", "systemd"}, slices.Sorted(slices.Values(names))); diff != "" {
		t.Errorf("documented backends (-want +got):\n%s", diff)
	}
	if _, ok := files["gcloud-status"]; !ok {
		t.Error("docs/backends.md has no gcloud-status script")
	}
}

// step is one call of a backend's walk and what it must answer.
type step struct {
	op   string // "get", "start", "stop"
	pod  pluginapi.Pod
	res  pluginapi.StartResult
	fail string // for "get": the LookupError message
}

func walk(t *testing.T, r *command.Runner, steps []step) {
	t.Helper()
	ctx := context.Background()
	for i, s := range steps {
		switch s.op {
		case "get":
			pod, err := r.GetPod(ctx, "qwen")
			if s.fail != "" {
				var msg string
				if le, ok := err.(*pluginapi.LookupError); ok {
					msg = le.Message
				}
				if msg != s.fail {
					t.Fatalf("step %d: GetPod = %+v, %v; want the lookup error %q", i, pod, err, s.fail)
				}
				continue
			}
			if err != nil {
				t.Fatalf("step %d: GetPod: %v", i, err)
			}
			if diff := cmp.Diff(s.pod, pod); diff != "" {
				t.Fatalf("step %d: pod (-want +got):\n%s", i, diff)
			}
		case "start", "stop":
			call := r.StartPod
			if s.op == "stop" {
				call = r.StopPod
			}
			res, _ := call(ctx, "qwen")
			if diff := cmp.Diff(s.res, res); diff != "" {
				t.Fatalf("step %d: %s (-want +got):\n%s", i, s.op, diff)
			}
		}
	}
}

func podIn(status, url string) pluginapi.Pod {
	return pluginapi.Pod{Name: "qwen", Status: status, IsRunning: status == "RUNNING", ProxyURL: url, Lookup: pluginapi.LookupFound}
}

var requested = pluginapi.StartResult{Requested: true}

// fakeState is a backend's state that a fake API changes.
type fakeState struct {
	mu    sync.Mutex
	state string
	calls []string
}

func (f *fakeState) set(s, call string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.state = s
	f.calls = append(f.calls, call)
}

func (f *fakeState) get(call string) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, call)
	return f.state
}

func (f *fakeState) called() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.calls...)
}

// The docker block's status template, run the way the Docker CLI runs it
// (text/template with the CLI's json function, on the container's inspect
// JSON), prints one object the plugin reads, for every state word.
func TestDockerTemplate(t *testing.T) {
	t.Parallel()
	backends, _ := docBlocks(t)
	var argv []string
	if err := json.Unmarshal([]byte(backends["docker"][command.EnvStatus]), &argv); err != nil {
		t.Fatal(err)
	}
	i := indexOf(argv, "-f")
	if i < 0 || i+1 >= len(argv) {
		t.Fatalf("docker status %q has no -f template", argv)
	}
	// docker/cli templates.basicFunctions' json.
	funcs := template.FuncMap{"json": func(v any) string {
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		_ = enc.Encode(v)
		return strings.TrimSpace(buf.String())
	}}
	tmpl, err := template.New("").Funcs(funcs).Parse(argv[i+1])
	if err != nil {
		t.Fatal(err)
	}
	for _, word := range []string{"running", "exited", "created", "paused", "restarting", "dead", `we"ird<>`} {
		var inspect any
		_ = json.Unmarshal([]byte(`{"Id":"4f2c","Name":"/vllm","State":{"Status":`+mustJSON(word)+`,"Running":true}}`), &inspect)
		var out bytes.Buffer
		if err := tmpl.Execute(&out, inspect); err != nil {
			t.Fatal(err)
		}
		var got map[string]string
		if err := json.Unmarshal(out.Bytes(), &got); err != nil {
			t.Errorf("%s: template output %q is not JSON: %v", word, out.String(), err)
			continue
		}
		if diff := cmp.Diff(map[string]string{"status": word}, got); diff != "" {
			t.Errorf("%s: (-want +got):\n%s", word, diff)
		}
	}
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func indexOf(s []string, v string) int {
	for i, x := range s {
		if x == v {
			return i
		}
	}
	return -1
}

// The docker block, as written, with the real Docker CLI against a fake
// Docker Engine API: there is no engine on this machine.
func TestDockerLines(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("docker"); err != nil {
		t.Skip("no docker CLI on PATH")
	}
	backends, _ := docBlocks(t)
	engine := &fakeState{state: "exited"}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		path := r.URL.Path
		switch {
		case path == "/_ping" || strings.HasSuffix(path, "/_ping"):
			w.Header().Set("API-Version", "1.45")
			w.Header().Set("OSType", "linux")
			_, _ = w.Write([]byte("OK"))
		case r.Method == http.MethodPost && strings.HasSuffix(path, "/containers/vllm/start"):
			engine.set("running", "start")
			w.WriteHeader(http.StatusNoContent)
		case r.Method == http.MethodPost && strings.HasSuffix(path, "/containers/vllm/stop"):
			engine.set("exited", "stop")
			w.WriteHeader(http.StatusNoContent)
		case r.Method == http.MethodGet && strings.HasSuffix(path, "/containers/vllm/json"):
			st := engine.get("inspect")
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`{"Id":"4f2c9a","Name":"/vllm","State":{"Status":"` + st + `","Running":` + mustJSON(st == "running") + `}}`))
		default:
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusNotFound)
			_, _ = w.Write([]byte(`{"message":"page not found"}`))
		}
	}))
	t.Cleanup(srv.Close)
	r := runnerFor(t, backends["docker"], map[string]string{
		"PATH":        os.Getenv("PATH"),
		"DOCKER_HOST": "tcp://" + strings.TrimPrefix(srv.URL, "http://"),
	})
	const url = "http://127.0.0.1:8000/v1"
	walk(t, r, []step{
		{op: "get", pod: podIn("EXITED", "")},
		{op: "start", res: requested},
		{op: "get", pod: podIn("RUNNING", url)},
		{op: "stop", res: requested},
		{op: "get", pod: podIn("EXITED", "")},
	})
	if diff := cmp.Diff([]string{"inspect", "start", "inspect", "stop", "inspect"}, engine.called()); diff != "" {
		t.Errorf("engine calls (-want +got):\n%s", diff)
	}
}

// The systemd block, as written, with a fake systemctl on PATH that
// answers as systemd's does: this machine has no systemd as init.
func TestSystemdLines(t *testing.T) {
	t.Parallel()
	backends, _ := docBlocks(t)
	bin, state := t.TempDir(), filepath.Join(t.TempDir(), "active")
	calls := filepath.Join(t.TempDir(), "calls")
	fake := `#!/bin/sh
echo "$*" >> '` + calls + `'
case "$1 $2 $3" in
"start vllm.service ") touch '` + state + `' ;;
"stop vllm.service ") rm -f '` + state + `' ;;
"is-active --quiet vllm.service") [ -e '` + state + `' ] || exit 3 ;;
*) exit 1 ;;
esac
`
	if err := os.WriteFile(filepath.Join(bin, "systemctl"), []byte(fake), 0o755); err != nil {
		t.Fatal(err)
	}
	r := runnerFor(t, backends["systemd"], map[string]string{"PATH": bin + ":/usr/bin:/bin"})
	walk(t, r, []step{
		{op: "get", pod: podIn("EXITED", "")},
		{op: "start", res: requested},
		{op: "get", pod: podIn("RUNNING", "http://127.0.0.1:8000/v1")},
		{op: "stop", res: requested},
		{op: "get", pod: podIn("EXITED", "")},
	})
	got, _ := os.ReadFile(calls)
	want := "is-active --quiet vllm.service\nstart vllm.service\nis-active --quiet vllm.service\nstop vllm.service\nis-active --quiet vllm.service\n"
	if diff := cmp.Diff(want, string(got)); diff != "" {
		t.Errorf("systemctl calls (-want +got):\n%s", diff)
	}

	// systemctl without systemd exits 1: unreadable with the documented
	// down codes, not a pod that is down.
	if err := os.WriteFile(filepath.Join(bin, "systemctl"), []byte("#!/bin/sh\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	walk(t, r, []step{{op: "get", fail: "status command: exit status 1"}})
}

// The gcloud block and the gcloud-status script, as written, with the
// real gcloud against a fake Compute Engine API: there is no Google Cloud
// here. gcloud costs more than a second of CPU a call, so each of its four
// command lines runs once, each call against an instance in the state it
// needs, in parallel: the block's start, stop and read of a running
// instance (the three lines, and the URL of a running one), and the
// script's read of a running instance (its line, and the address's URL).
// The script's other answers are the shell's: a terminated instance and a
// failed gcloud run the script on a fake gcloud, which must be called with
// the real call's arguments and answers as gcloud does.
func TestGcloudLines(t *testing.T) {
	t.Parallel()
	gcloud, err := exec.LookPath("gcloud")
	if err != nil {
		t.Skip("no gcloud on PATH")
	}
	if testing.Short() {
		t.Skip("gcloud takes seconds a call")
	}
	backends, files := docBlocks(t)
	script := filepath.Join(t.TempDir(), "gcloud-status")
	if err := os.WriteFile(script, []byte(files["gcloud-status"]), 0o755); err != nil {
		t.Fatal(err)
	}
	withScript := map[string]string{}
	for k, v := range backends["gcloud"] {
		withScript[k] = v
	}
	withScript[command.EnvStatus] = mustJSON([]string{script, "vllm-box"})
	delete(withScript, command.EnvURL)

	for _, tc := range []struct {
		name  string
		state string // the instance's status before the call
		step  step
		calls []string // the fake API's calls
	}{
		{"start", "TERMINATED", step{op: "start", res: requested}, []string{"start"}},
		{"stop", "RUNNING", step{op: "stop", res: requested}, []string{"stop"}},
		{"status running", "RUNNING", step{op: "get", pod: podIn("RUNNING", "http://10.164.0.7:8000/v1")}, []string{"describe"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			vm := &fakeState{state: tc.state}
			srv := fakeCompute(vm)
			t.Cleanup(srv.Close)
			walk(t, gcloudRunner(t, backends["gcloud"], os.Getenv("PATH"), srv.URL), []step{tc.step})
			if diff := cmp.Diff(tc.calls, vm.called()); diff != "" {
				t.Errorf("API calls (-want +got):\n%s", diff)
			}
		})
	}

	t.Run("script", func(t *testing.T) {
		t.Parallel()
		// The real gcloud, through a gcloud first on PATH that writes
		// down its arguments.
		bin, args := gcloudOnPath(t, "exec '"+gcloud+"' \"$@\"")
		vm := &fakeState{state: "RUNNING"}
		srv := fakeCompute(vm)
		t.Cleanup(srv.Close)
		walk(t, gcloudRunner(t, withScript, bin+":"+os.Getenv("PATH"), srv.URL), []step{
			{op: "get", pod: podIn("RUNNING", "http://34.90.1.2:8000/v1")},
		})
		if diff := cmp.Diff([]string{"describe"}, vm.called()); diff != "" {
			t.Errorf("API calls (-want +got):\n%s", diff)
		}
		realArgs, err := os.ReadFile(args)
		if err != nil {
			t.Fatal(err)
		}

		for _, fc := range []struct {
			name string
			fake string // what the fake gcloud does, as gcloud 528 does
			step step
		}{
			// The instance's address is missing: gcloud prints the
			// status and a tab.
			{"terminated", `printf 'TERMINATED\t\n'`, step{op: "get", pod: podIn("TERMINATED", "")}},
			// gcloud exits 1 when the API refuses the token: the script
			// stops with its exit code, unreadable.
			{"refused", `exit 1`, step{op: "get", fail: "status command: exit status 1"}},
		} {
			t.Run(fc.name, func(t *testing.T) {
				bin, args := gcloudOnPath(t, fc.fake)
				walk(t, gcloudRunner(t, withScript, bin+":/usr/bin:/bin", srv.URL), []step{fc.step})
				got, err := os.ReadFile(args)
				if err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(string(realArgs), string(got)); diff != "" {
					t.Errorf("the fake gcloud's arguments, one a line, against the real call's (-want +got):\n%s", diff)
				}
			})
		}
	})
}

// gcloudOnPath writes a gcloud script into a fresh directory, to put first
// on PATH: it writes its arguments, one a line, to the file args, then
// runs body.
func gcloudOnPath(t *testing.T, body string) (dir, args string) {
	t.Helper()
	dir, args = t.TempDir(), filepath.Join(t.TempDir(), "args")
	text := "#!/bin/sh\nprintf '%s\\n' \"$@\" > '" + args + "'\n" + body + "\n"
	if err := os.WriteFile(filepath.Join(dir, "gcloud"), []byte(text), 0o755); err != nil {
		t.Fatal(err)
	}
	return dir, args
}

// gcloudRunner is a Runner for doc, a documented gcloud environment, with
// what the docs' lines expect of the host (path, and the variables the
// block passes) and what points gcloud at the fake API at url.
func gcloudRunner(t *testing.T, doc map[string]string, path, url string) *command.Runner {
	t.Helper()
	// The block's 20 s status cap sizes a call to Google Cloud; a gcloud
	// sharing a loaded test machine can take longer, and a cut here would
	// test the machine (TestBackendLinesAccepted takes the cap as
	// written).
	extra := map[string]string{
		"PATH":                   path,
		"CLOUDSDK_CONFIG":        t.TempDir(),
		"CLOUDSDK_CORE_PROJECT":  "wake-test",
		command.EnvStatusTimeout: "2m",
	}
	// The fake's address and token, and no prompt, update check, usage
	// report, metadata server probe or log file: passed on top of the
	// documented names.
	var pass []string
	for k, v := range map[string]string{
		"CLOUDSDK_API_ENDPOINT_OVERRIDES_COMPUTE":         url + "/compute/v1/",
		"CLOUDSDK_AUTH_ACCESS_TOKEN":                      "fake-token",
		"CLOUDSDK_CORE_DISABLE_PROMPTS":                   "1",
		"CLOUDSDK_COMPONENT_MANAGER_DISABLE_UPDATE_CHECK": "1",
		"CLOUDSDK_CORE_DISABLE_USAGE_REPORTING":           "true",
		"CLOUDSDK_CORE_CHECK_GCE_METADATA":                "false",
		"CLOUDSDK_CORE_DISABLE_FILE_LOGGING":              "true",
	} {
		extra[k] = v
		pass = append(pass, k)
	}
	return runnerFor(t, doc, extra, pass...)
}

// fakeCompute is a Compute Engine API with one instance, vllm-box, in
// vm's state, that takes only the token "fake-token".
func fakeCompute(vm *fakeState) *httptest.Server {
	const instance = "/compute/v1/projects/wake-test/zones/europe-west4-a/instances/vllm-box"
	// The handler names operations by the address the request came to:
	// reading the server in it would race with its assignment, as the
	// race detector cannot see that gcloud's requests come after it.
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.Header.Get("Authorization") != "Bearer fake-token" {
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = w.Write([]byte(`{"error":{"code":401,"message":"no token"}}`))
			return
		}
		op := `{"kind":"compute#operation","name":"op-1","status":"RUNNING","selfLink":"http://` + r.Host + `/compute/v1/projects/wake-test/zones/europe-west4-a/operations/op-1"}`
		switch {
		case r.Method == http.MethodGet && r.URL.Path == instance:
			st := vm.get("describe")
			nic := `{}`
			if st == "RUNNING" {
				nic = `{"accessConfigs":[{"natIP":"34.90.1.2"}]}`
			}
			_, _ = w.Write([]byte(`{"kind":"compute#instance","name":"vllm-box","status":"` + st + `","networkInterfaces":[` + nic + `]}`))
		case r.Method == http.MethodPost && r.URL.Path == instance+"/start":
			vm.set("RUNNING", "start")
			_, _ = w.Write([]byte(op))
		case r.Method == http.MethodPost && r.URL.Path == instance+"/stop":
			vm.set("TERMINATED", "stop")
			_, _ = w.Write([]byte(op))
		default:
			w.WriteHeader(http.StatusNotFound)
			_, _ = w.Write([]byte(`{"error":{"code":404,"message":"not found"}}`))
		}
	}))
}
