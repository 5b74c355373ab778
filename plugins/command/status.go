package command

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"regexp"
	"strings"
	"time"

	"github.com/wakeonchat/wakeonchat/plugins/pluginapi"
)

// GetPod runs the status command for pod and reads its answer: with
// StatusByJSON, the one JSON object it prints (see statusJSON); with
// StatusByExit, its exit code (0 RUNNING at Config.URL; Config.DownCodes,
// by default 1, 2 and 3, EXITED).
//
// A status that cannot be read is a *pluginapi.LookupError, which the host
// takes as UNREADABLE (it waits and wakes nothing). Its message is
// "status command: " and a short class, never the command's output or
// arguments, which may hold secrets: "timed out after 10s", "canceled",
// "output larger than 64 KiB", "unparseable output: …", "exit status 2",
// "signal: killed", "not found", "permission denied", "output left open by
// a background process"; and "invalid pod name", nothing run.
func (r *Runner) GetPod(ctx context.Context, name string) (pluginapi.Pod, error) {
	if !pluginapi.ValidPodName(name) {
		return pluginapi.Pod{}, &pluginapi.LookupError{Message: "invalid pod name"}
	}
	var out *capped
	if r.statusBy == StatusByJSON {
		out = &capped{max: MaxStatusOutput}
	}
	o := r.run(ctx, r.status, name, out)
	var body []byte
	var over bool
	if out != nil {
		body, over = out.result()
	}
	switch {
	case o.notRun != "":
		return pluginapi.Pod{}, unreadable(o.notRun)
	case over:
		return pluginapi.Pod{}, unreadable("output larger than 64 KiB")
	case o.cut && o.canceled:
		return pluginapi.Pod{}, unreadable("canceled")
	case o.cut:
		return pluginapi.Pod{}, unreadable("timed out after " + o.timeout.Round(time.Millisecond).String())
	case o.leftOpen:
		return pluginapi.Pod{}, unreadable("output left open by a background process")
	}
	url := strings.ReplaceAll(r.url, PodPlaceholder, name)
	if r.statusBy == StatusByExit {
		return r.byExit(name, o.state, url)
	}
	if !o.state.Success() {
		return pluginapi.Pod{}, unreadable(o.state.String())
	}
	return byJSON(name, body, url)
}

func unreadable(class string) *pluginapi.LookupError {
	return &pluginapi.LookupError{Message: "status command: " + class}
}

// StatusExited is the status of a pod a status command says is down by
// its exit code.
const StatusExited = "EXITED"

func (r *Runner) byExit(name string, st *os.ProcessState, url string) (pluginapi.Pod, error) {
	switch code := st.ExitCode(); {
	case code == 0:
		return pluginapi.Pod{Name: name, Status: pluginapi.StatusRunning, IsRunning: true, ProxyURL: url, Lookup: pluginapi.LookupFound}, nil
	case r.down[code]: // never -1, a signal
		return pluginapi.Pod{Name: name, Status: StatusExited, Lookup: pluginapi.LookupFound}, nil
	}
	return pluginapi.Pod{}, unreadable(st.String())
}

// statusJSON is a status command's answer in StatusByJSON. Unknown fields
// are ignored, so a command may print more.
type statusJSON struct {
	// Status is the backend's word, such as RUNNING, EXITED or CREATED,
	// in any case (it is upper-cased): letters, digits, '_' and '-', at
	// most 32. Only RUNNING is up. Required.
	Status string `json:"status"`
	// URL is the model endpoint's base URL while RUNNING (absolute http
	// or https); empty means Config.URL.
	URL string `json:"url"`
	// ReadySince is when this boot's model started answering, RFC 3339;
	// optional, and one that does not parse counts as none.
	ReadySince string `json:"readySince"`
}

func byJSON(name string, body []byte, url string) (pluginapi.Pod, error) {
	trimmed := bytes.TrimSpace(body)
	switch {
	case len(trimmed) == 0:
		return pluginapi.Pod{}, unreadable("unparseable output: no output")
	case trimmed[0] != '{':
		return pluginapi.Pod{}, unreadable("unparseable output: not a JSON object")
	}
	dec := json.NewDecoder(bytes.NewReader(trimmed))
	var s statusJSON
	if err := dec.Decode(&s); err != nil {
		return pluginapi.Pod{}, unreadable("unparseable output: " + pluginapi.JSONProblem(err))
	}
	if _, err := dec.Token(); err != io.EOF {
		return pluginapi.Pod{}, unreadable("unparseable output: more than one JSON value")
	}
	status := strings.ToUpper(strings.TrimSpace(s.Status))
	switch {
	case status == "":
		return pluginapi.Pod{}, unreadable("unparseable output: no status")
	case !statusWord(status):
		return pluginapi.Pod{}, unreadable("unparseable output: the status is not a word")
	case s.URL != "" && !validURL(s.URL):
		return pluginapi.Pod{}, unreadable("unparseable output: the url is not an absolute http or https url")
	}
	pod := pluginapi.Pod{
		Name:       name,
		Status:     status,
		IsRunning:  status == pluginapi.StatusRunning,
		ReadySince: pluginapi.ParseReadySince(s.ReadySince),
		Lookup:     pluginapi.LookupFound,
	}
	if pod.IsRunning {
		pod.ProxyURL = url
		if s.URL != "" {
			pod.ProxyURL = s.URL
		}
	}
	return pod, nil
}

// statusWord reports whether s is a status word: 1 to 32 of A-Z, 0-9,
// '_' and '-'. Anything else (a sentence, an error message that may
// carry a secret) is not passed on as a status.
func statusWord(s string) bool { return statusWordPattern.MatchString(s) }

var statusWordPattern = regexp.MustCompile(`^[A-Z0-9_-]{1,32}$`)
