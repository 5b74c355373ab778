// Package faulttest is wake-on-chat's fault matrix: one table-driven test
// (TestFaultMatrix) that runs the whole host in process — app.New with the
// real plugin binaries, the store and the HTTP server — against a conductor
// and a model that are small httptest servers scripted per row, and injects
// one fault per row:
//
//   - the conductor: down (a closed port; with a cached resolution and
//     before any), hanging past lookup_timeout, 500, malformed JSON, lookup
//     UNREADABLE, a start answered 401, 403, 409 or 503, gone between the
//     lookup and the start, a start hanging past start_timeout;
//   - the model (the pod RUNNING with its proxy URL on the model server): a
//     502 HTML page on both attempts or a connection reset (after an answered
//     turn: crashed; on a boot that never answered: loading), a completion
//     hanging past completion_timeout, a 200 whose body stops halfway, a 200
//     with malformed JSON, 500 and 429;
//   - the input: three turns of 700 KB, then a short one;
//   - the plugins: a GPU plugin that crashes or hangs during GetPod, one that
//     crashes during StartPod (the wake is in flight, not failed), a
//     provider plugin that crashes during Complete (testdata/faultplugin, the
//     real clients with a transport that obeys an X-Fault header the test
//     server sends), a binary that fails the go-plugin handshake
//     (testdata/badhandshake) and a missing binary, SIGTERM reaching both
//     plugins mid-turn (as systemd's stop does), and the conductor plugin
//     killed while idle (/readyz must follow it without traffic);
//   - the host itself, stopped mid-wake and started again on the same data
//     directory, and a store (wake.db) truncated mid-file.
//
// Every row states the HTTP status and the exact body the user gets, and the
// operator log line (level and text) the fault must produce. After every row
// the test checks what must survive any fault: the host still answers
// /healthz, the session's in-flight slot was released (a follow-up turn on
// the same session is not 409), the follow-up turn gets the model's answer
// with the session's earlier turns in its request (history intact, and a
// turn that reached no model stored nothing), no "turn panicked" line, no
// goroutine of the row left behind after Shutdown (the row's goroutines carry
// a pprof label; goleak checks the whole process after the last row), and
// neither the wake token
// nor the API key in any log line — at trace level, the plugins' own lines
// included — or any response body.
//
// The hostile bodies quote the secrets (a proxy page, a conductor error, a
// model's 429 message) so that a host that copied a body into a log line or
// a reply would be caught; checkSecretsInPlay proves the token went with
// every start and the key with every completion, and nowhere else.
//
// A row (row_test.go) is data: the plugins it runs, whether it makes a
// history turn first, inject (which scripts the fault on the two servers),
// the fault turn's status and exact reply or body, its operator lines and
// the lines it must not produce, how many lookups, completions and starts
// it causes, and an optional then hook that runs more of the story (ask
// again after a refusal, step the clock to see a watch poll, restart the
// host) and returns the host the follow-up turn runs on. To add a fault, add
// a row to matrix in matrix_test.go; the after-row checks come with it.
//
// Timeouts are short (lookup and start 300ms, completion 500ms) so that the
// whole matrix runs in seconds; minutes of the wake policy pass on a fake
// clock. The rows run in parallel, each in a world of its own: servers,
// clock, data dir, log, and a plugin dir of hard links to the binaries, by
// whose paths a row tells its plugin processes from the others'; a row
// that mostly waits on a timeout runs beside the others, outside
// -parallel's count. TestMain builds wakehost, the two plugins and the test
// plugins once, into a directory kept from one run to the next
// (e2e.BuildBinaries): a run whose sources did not change links nothing.
//
// What the matrix does exactly as host/app's end-to-end tests do — building
// the binaries, the concurrency-safe JSON log and its waits, the wake.toml,
// the in-process host with its client and recorded bodies, the secret
// checks of logs and bodies, the default replies — is in host/internal/e2e.
// The scripted servers, the rows and the after-row checks are this
// package's own.
//
// This package holds tests only. It must not be imported, and it changes
// nothing outside its own directory: a row that finds a bug in the host
// skips with "BUG: ..." and says where the bug is.
package faulttest
