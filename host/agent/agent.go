// Package agent runs one chat turn through the configured provider chain: it
// builds the model's messages from the system prompt and the session's
// history, asks each provider in fallback order, and stores the turn when a
// model answered.
//
// The history sent is bounded by count (HistoryMessages) and by content
// bytes (HistoryBytes), and a whole request by what the plugin boundary
// takes (RequestBytes), so no stored turn, however large, can make a
// session's later requests fail; a store that can stop at the byte cap
// (BoundedHistory) reads no more of the session than that.
//
// It falls back to the next provider only on a failure that says it is
// fallback-eligible; a not-ready error never is (D11), so it reaches the
// chat handler, which runs the wake policy. Storing an answered turn is the
// caller's next step (Remember), so it can answer the user first; a turn
// that did not reach a model is never stored. The agent does not log: the
// caller that handles an error logs it once.
package agent

import (
	"context"
	"errors"
	"fmt"

	"github.com/wakeonchat/wakeonchat/host/resolve"
	"github.com/wakeonchat/wakeonchat/host/store"
	"github.com/wakeonchat/wakeonchat/plugins/pluginapi"
)

// Model answers a list of messages, sent as send says (D10); *resolve.Model
// is one.
type Model interface {
	Complete(ctx context.Context, msgs []pluginapi.Message, send resolve.Send) (string, error)
}

// History is where sessions keep their turns: store.History, which every
// store backend implements.
type History = store.History

// Provider is one named model of the chain.
type Provider struct {
	Name  string
	Model Model
}

// Config configures an Agent.
type Config struct {
	Chain           []Provider // [agent] providers, in fallback order
	Others          []Provider // configured providers outside the chain, for pinned turns
	History         History
	SystemPrompt    string
	HistoryMessages int // how many stored messages go to the model; 0 sends none
	HistoryBytes    int // cap on those messages' content bytes; 0 sends none
	// RequestBytes is the most one completion request may weigh at the
	// plugin boundary, encoded; 0 is DefaultRequestBytes. History is trimmed
	// further to stay under it, and a message that cannot fit under it with
	// the system prompt alone is refused (see MaxMessageBytes).
	RequestBytes int
}

// DefaultRequestBytes is gRPC's default limit on a message received, which
// the provider plugin's server enforces on every completion request.
const DefaultRequestBytes = 4 << 20

// The framing a completion request carries besides its messages' content,
// at most: envelopeBytes for the request itself (the endpoint, the model
// name, gRPC's own framing), messageBytes for each message (its role and
// protobuf framing).
const (
	envelopeBytes = 16 << 10
	messageBytes  = 64
)

// ErrTooLarge is returned for a message that cannot fit in a completion
// request with the system prompt alone; MaxMessageBytes says how large one
// may be.
var ErrTooLarge = errors.New("message too large for a completion request")

// Agent runs turns. It is safe for concurrent use; the caller keeps one turn
// per session in flight.
type Agent struct {
	cfg Config
	all map[string]Model
}

// New returns an Agent for cfg.
func New(cfg Config) *Agent {
	if cfg.RequestBytes <= 0 {
		cfg.RequestBytes = DefaultRequestBytes
	}
	all := make(map[string]Model, len(cfg.Chain)+len(cfg.Others))
	for _, p := range append(append([]Provider(nil), cfg.Chain...), cfg.Others...) {
		all[p.Name] = p.Model
	}
	return &Agent{cfg: cfg, all: all}
}

// First names the chain's first provider: the one a wakeMode "wait" turn pins.
func (a *Agent) First() string {
	if len(a.cfg.Chain) == 0 {
		return ""
	}
	return a.cfg.Chain[0].Name
}

// Has reports whether provider is configured (in the chain or not).
func (a *Agent) Has(provider string) bool {
	_, ok := a.all[provider]
	return ok
}

// Result is a model's answer and the provider that gave it.
type Result struct {
	Reply    string
	Provider string
}

// ErrNoProvider is returned for a pinned turn whose provider is not configured.
var ErrNoProvider = errors.New("provider not configured")

// Readier is a Model that can tell, without sending anything, that its pod
// is not ready: *resolve.Model is one (its not-ready or config error).
type Readier interface {
	Ready(ctx context.Context) error
}

// ProcessHeld runs message for session through the chain, falling back
// only on fallback-eligible failures. The error that ends the chain is
// returned wrapped, so errors.As still finds a not-ready error and its
// capabilities. It calls hold, when not nil, before it reads the
// session's history, and only once it may reach a model: when the chain's
// first model is a Readier that says its pod is not ready, the turn ends
// with that error (a not-ready error never falls back, D11) having read
// nothing and held nothing. A hold that fails ends the turn with its
// error. The chat door holds a session's turn across the hosts there: a
// turn the machine answers calls no model and stores nothing, so it needs
// no hold.
func (a *Agent) ProcessHeld(ctx context.Context, session, message string, hold func(context.Context) error) (Result, error) {
	if len(a.cfg.Chain) == 0 {
		return Result{}, errors.New("agent: no providers")
	}
	if r, ok := a.cfg.Chain[0].Model.(Readier); ok {
		if err := r.Ready(ctx); err != nil {
			return Result{}, fmt.Errorf("agent: %w", err)
		}
	}
	if hold != nil {
		if err := hold(ctx); err != nil {
			return Result{}, err
		}
	}
	msgs, err := a.messages(ctx, session, message)
	if err != nil {
		return Result{}, err
	}
	var last error
	for _, p := range a.cfg.Chain {
		reply, err := p.Model.Complete(ctx, msgs, resolve.Retry)
		if err == nil {
			return Result{Reply: reply, Provider: p.Name}, nil
		}
		last = fmt.Errorf("agent: %w", err)
		if !fallbackEligible(err) || ctx.Err() != nil {
			break
		}
	}
	return Result{}, last
}

// ProcessOn runs message on provider alone, sent as send says: no
// fallback, whatever the chain says now.
func (a *Agent) ProcessOn(ctx context.Context, session, message, provider string, send resolve.Send) (Result, error) {
	m, ok := a.all[provider]
	if !ok {
		return Result{}, fmt.Errorf("agent: provider %s: %w", provider, ErrNoProvider)
	}
	msgs, err := a.messages(ctx, session, message)
	if err != nil {
		return Result{}, err
	}
	reply, err := m.Complete(ctx, msgs, send)
	if err != nil {
		return Result{}, fmt.Errorf("agent: %w", err)
	}
	return Result{Reply: reply, Provider: provider}, nil
}

// MaxMessageBytes is the largest message, in bytes, that fits in a
// completion request with the system prompt; the history is trimmed to fit
// what room is left. A caller refuses a larger message before its turn.
func (a *Agent) MaxMessageBytes() int {
	return a.cfg.RequestBytes - envelopeBytes - 2*messageBytes - len(a.cfg.SystemPrompt)
}

// messages builds a completion request: the system prompt, the session's
// history as fitHistory trims it, and message. The request never weighs
// more than RequestBytes at the plugin boundary.
func (a *Agent) messages(ctx context.Context, session, message string) ([]pluginapi.Message, error) {
	if len(message) > a.MaxMessageBytes() {
		return nil, fmt.Errorf("agent: %w: %d bytes, at most %d", ErrTooLarge, len(message), a.MaxMessageBytes())
	}
	var hist []store.Message
	if a.cfg.HistoryMessages > 0 && a.cfg.HistoryBytes > 0 {
		room := a.MaxMessageBytes() - len(message)
		h, err := a.history(ctx, session, min(a.cfg.HistoryBytes, room))
		if err != nil {
			return nil, fmt.Errorf("agent: history: %w", err)
		}
		hist = fitHistory(h, a.cfg.HistoryBytes, room)
	}
	msgs := make([]pluginapi.Message, 0, len(hist)+2)
	if a.cfg.SystemPrompt != "" {
		msgs = append(msgs, pluginapi.Message{Role: "system", Content: a.cfg.SystemPrompt})
	}
	for _, m := range hist {
		msgs = append(msgs, pluginapi.Message{Role: m.Role, Content: m.Content})
	}
	return append(msgs, pluginapi.Message{Role: "user", Content: message}), nil
}

// BoundedHistory is store.BoundedHistory: a History that can stop reading a
// session once its messages' contents pass a byte cap, as every store
// backend can. The agent uses it when its History has it, so a session of
// huge turns costs what is sent, not HistoryMessages of them; what is sent
// is the same either way.
type BoundedHistory = store.BoundedHistory

// history reads the session's last HistoryMessages, stopping at maxBytes of
// content when the History can (BoundedHistory). fitHistory trims either
// to the same messages: it stops at the first message past HistoryBytes,
// or past room, which also counts framing, and maxBytes is the smaller.
func (a *Agent) history(ctx context.Context, session string, maxBytes int) ([]store.Message, error) {
	if h, ok := a.cfg.History.(BoundedHistory); ok {
		return h.HistoryWithin(ctx, session, a.cfg.HistoryMessages, maxBytes)
	}
	return a.cfg.History.History(ctx, session, a.cfg.HistoryMessages)
}

// fitHistory returns the newest messages of hist whose content totals at
// most budget bytes and whose weight in a request (content and framing)
// totals at most room bytes. A message is sent whole or not at all, and the
// first one that does not fit ends the history: nothing older is sent, so
// the model never sees a conversation with a hole in it. The result starts
// with a user message: an assistant message whose question was cut off is
// dropped too, so the model is never shown an answer to nothing.
func fitHistory(hist []store.Message, budget, room int) []store.Message {
	start := len(hist)
	for start > 0 {
		m := hist[start-1]
		budget -= len(m.Content)
		room -= len(m.Content) + messageBytes
		if budget < 0 || room < 0 {
			break
		}
		start--
	}
	for start < len(hist) && hist[start].Role != store.RoleUser {
		start++
	}
	return hist[start:]
}

// Remember stores an answered turn: the user's message and the model's
// reply, whole or not at all. The caller keeps the session's slot until it
// returns, so the next turn sees it.
func (a *Agent) Remember(ctx context.Context, session, message string, r Result) error {
	err := a.cfg.History.AppendTurn(ctx, session,
		store.Message{Role: "user", Content: message},
		store.Message{Role: "assistant", Content: r.Reply})
	if err != nil {
		return fmt.Errorf("agent: storing the turn: %w", err)
	}
	return nil
}

// fallbackEligible reports whether err lets the chain try the next provider.
// An error that does not say is not eligible.
func fallbackEligible(err error) bool {
	var fe interface{ FallbackEligible() bool }
	return errors.As(err, &fe) && fe.FallbackEligible()
}
