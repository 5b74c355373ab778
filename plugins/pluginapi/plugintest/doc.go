// Package plugintest is for a plugin's tests: it drives a plugin's HTTP
// calls into each failure the plugin must classify (an address nothing
// listens on, a server that cuts its connections where the test says, a
// client whose connections are cut while a request is written or whose
// dials fail), records the plugin's hclog lines, and feeds its
// configuration reader a fake environment, and runs a real http.Server on
// in-memory pipes inside a testing/synctest bubble (PipeListener). A plugin
// binary never imports it.
package plugintest
