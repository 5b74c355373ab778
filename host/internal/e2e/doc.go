// Package e2e holds helpers for the end-to-end tests of host/app and
// host/faulttest; never imported by non-test code.
//
// What both suites do the same way lives here: building wakehost and the
// plugin binaries into a directory kept between runs ([BuildBinaries]; and
// wakehost alone, for host/cmd/wakehost's tests, [BuildHostAlone]), a
// concurrency-safe JSON log the hosts write and the tests read ([Log]), a
// wake.toml for one provider on the pod qwen ([Config]), an app.App served
// in the test's process ([Start], [Host]) with every response body
// recorded ([Bodies]) for the secret checks, waits on the fake clock and
// on counters, and the default replies both suites assert byte for byte. What is a suite's own
// (the simulator-driven stories of host/app, the scripted servers and rows
// of host/faulttest) stays in the suite.
//
// TestOnlyTestsImport in host/internal/binaries keeps the promise above: a
// package's non-test files that import this one fail it.
package e2e
