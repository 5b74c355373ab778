package runpodfake_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/wakeonchat/wakeonchat/plugins/runpod/runpodfake"
)

type answer struct {
	Code   int
	Status string // the pod's status in a 200, the problem's detail otherwise
}

func do(s *runpodfake.Server, method, path, body, key string) answer {
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	rec := httptest.NewRecorder()
	s.ServeHTTP(rec, req)
	var out struct {
		Status any    `json:"status"`
		Detail string `json:"detail"`
	}
	_ = json.Unmarshal(rec.Body.Bytes(), &out)
	if rec.Code == http.StatusOK {
		st, _ := out.Status.(string)
		return answer{Code: rec.Code, Status: st}
	}
	return answer{Code: rec.Code, Status: out.Detail}
}

// A pod's life in the fake, on the fake clock: a start is STARTING for
// BootTime and then RUNNING; actions the status does not allow are 409.
func TestLifecycle(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := runpodfake.New("k")
		s.BootTime = 90 * time.Second
		s.AddPod("p1", runpodfake.Exited)
		get := func() answer { return do(s, "GET", "/v2/pods/p1", "", "k") }
		act := func(a string) answer { return do(s, "POST", "/v2/pods/p1/action", `{"action":"`+a+`"}`, "k") }

		var got []answer
		got = append(got, get(), act("stop"), act("start"), get(), act("start"))
		time.Sleep(90*time.Second - time.Nanosecond)
		got = append(got, get())
		time.Sleep(time.Nanosecond)
		got = append(got, get(), act("start"), act("stop"), get(),
			do(s, "GET", "/v2/pods/p1", "", ""), do(s, "GET", "/v2/pods/p1", "", "x"),
			do(s, "GET", "/v2/pods/p2", "", "k"), act("restart"), do(s, "POST", "/v2/pods/p1/action", "{", "k"))

		want := []answer{
			{200, "EXITED"},
			{409, "action stop is not valid for pod status EXITED"},
			{200, "STARTING"},
			{200, "STARTING"},
			{409, "action start is not valid for pod status STARTING"},
			{200, "STARTING"},
			{200, "RUNNING"},
			{409, "action start is not valid for pod status RUNNING"},
			{200, "EXITED"},
			{200, "EXITED"},
			{401, "missing bearer token"},
			{401, "invalid bearer token"},
			{404, "resource not found"},
			{422, "Request validation failed."},
			{400, "request body is not JSON"},
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("answers (-want +got):\n%s", diff)
		}
	})
}

// Fail answers the next request of its kind on its pod, once, in order.
func TestFail(t *testing.T) {
	t.Parallel()
	s := runpodfake.New("k")
	s.AddPod("p1", runpodfake.Exited)
	s.Fail(runpodfake.Start, "p1", runpodfake.NoFreeGPU())
	s.Fail(runpodfake.Start, "p1", runpodfake.RateLimited(7))
	act := func() answer { return do(s, "POST", "/v2/pods/p1/action", `{"action":"start"}`, "k") }
	got := []answer{do(s, "GET", "/v2/pods/p1", "", "k"), act(), act(), act()}
	want := []answer{
		{200, "EXITED"},
		{400, "There are not enough free GPUs on the host machine to start this pod."},
		{429, "rate limit exceeded for the minute window"},
		{200, "RUNNING"}, // BootTime zero
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("answers (-want +got):\n%s", diff)
	}
}
