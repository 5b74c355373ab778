// Package resolve decides where a chat turn's completion goes and what its
// failure means. It turns a GPU plugin's answer about a pod and a provider
// plugin's answer to one completion into exactly one of three outcomes: the
// model's reply, a *NotReadyError (the pod is asleep, or up with its model
// still loading) or a plain *ProviderError; a *ConfigError when the provider's
// configuration is unusable.
//
// A Resolver holds the last ready answer the conductor gave for one pod and
// reuses it turn after turn without asking again (D6). A Model binds a
// provider plugin to a Resolver or to a literal base URL and runs one turn:
//
//  1. the held resolution, or one conductor lookup when none is held;
//  2. one completion attempt;
//  3. on 404/502/503/504, a transport failure or an abort (and only then):
//     exactly one re-resolve and, when the conductor freshly confirms the pod
//     RUNNING, exactly one retry. A gateway status or transport failure that
//     survives it is a NotReadyError with ModelLoading (D7); a resolution
//     served from cache never is (D8); an aborted retry never is (D10).
//
// The caller's duties: log the outcome once, where it handles it; map the
// errors to replies (NotReadyError.UserMessage is safe to show); decide
// whether to wake (NotReadyError.Wake) and whether to fall back to another
// provider (FallbackEligible on every error type).
//
// What this package must not do: log anything (in particular an endpoint or
// proxy URL, which also never appears in an error message or in JSON), sleep,
// poll, or retry beyond the one re-resolve and the one retry above, or wake a
// pod on its own. It never re-sends a payload the model may have processed
// (a 200 that failed, an aborted request).
package resolve
