// Package status serves the operators' live status page: GET / and the
// fragments and assets under /status/. For each configured pod it shows the
// machine's state in words, the reply a chat turn asking now would get
// (machines.Pod.Preview), the wake in progress as a timeline with its
// elapsed time and estimate, and the pod's last 20 wakes as an SVG bar
// chart drawn here; and the plugins' health and restarts.
//
// Everything is rendered on the server with html/template; the page's one
// script (embedded, like its style sheet: no CDN, no build step) subscribes
// to each pod's event stream (GET /api/pods/{name}/events) and, on each
// event and every few seconds (clock-derived text such as the elapsed
// minutes in a reply moves without events), fetches the pod's fragment
// again and swaps it in: the page is never reloaded, and every word on it
// was rendered here.
//
// What this package must not do: compute a pod's state (it is the
// machine's, machines.Reports of the hub's Update), ask the conductor
// anything (the page costs no lookup however many watch it), write
// anything, or show a secret, a URL of the conductor or a model, a
// message's text or an error's text: it shows pod and plugin names, the
// states, the configured replies (checked plain at start-up), times and
// counts.
package status
