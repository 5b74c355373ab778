// Package metrics is wake-on-chat's Prometheus surface: the wakeonchat_*
// metrics on a registry of their own, with the Go and process collectors,
// served by Handler at GET /metrics. docs/operations.md lists every metric.
//
// The host's packages call the hooks of a *Metrics as things happen: the
// wake coordinator's record changes (RecordChanged, wired to
// wake.Config.Changed by host/app), a turn answered by either door (Turn), a
// plugin relaunch (PluginRelaunched, PluginRelaunchFailed), a call to the
// conductor (ConductorRequest), an OpenAI request held (Hold). Every hook is a
// no-op on a nil *Metrics, so a package under test needs no registry, and a
// hook never blocks, never fails and never calls back into its caller.
//
// Labels are low-cardinality by construction: pods and plugins come from
// wake.toml, states, outcomes and phases from the pod lifecycle, doors and
// results from fixed vocabularies. Nothing a client sends (a session id, a
// message, a model name it made up) ever becomes a label. This package does
// no I/O of its own and computes no state: a pod's state is the machine's.
package metrics
