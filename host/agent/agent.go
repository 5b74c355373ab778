// Package agent runs one chat turn through the configured provider chain: it
// builds the model's messages from the system prompt and the session's
// history, asks each provider in fallback order, and stores the turn when a
// model answered.
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

	"github.com/wakeonchat/wakeonchat/host/store"
	"github.com/wakeonchat/wakeonchat/plugins/pluginapi"
)

// Model answers a list of messages; *resolve.Model is one.
type Model interface {
	Complete(ctx context.Context, msgs []pluginapi.Message) (string, error)
}

// History is where sessions keep their turns; *store.Store is one.
type History interface {
	History(session string, last int) ([]store.Message, error)
	AppendTurn(session string, user, assistant store.Message) error
}

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
	HistoryMessages int // how many stored messages go to the model
}

// Agent runs turns. It is safe for concurrent use; the caller keeps one turn
// per session in flight.
type Agent struct {
	cfg Config
	all map[string]Model
}

// New returns an Agent for cfg.
func New(cfg Config) *Agent {
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

// Process runs message for session through the chain, falling back only on
// fallback-eligible failures. The error that ends the chain is returned
// wrapped, so errors.As still finds a not-ready error and its capabilities.
func (a *Agent) Process(ctx context.Context, session, message string) (Result, error) {
	if len(a.cfg.Chain) == 0 {
		return Result{}, errors.New("agent: no providers")
	}
	msgs, err := a.messages(session, message)
	if err != nil {
		return Result{}, err
	}
	var last error
	for _, p := range a.cfg.Chain {
		reply, err := p.Model.Complete(ctx, msgs)
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

// ProcessOn runs message on provider alone: no fallback, whatever the chain
// says now. complete is the model call to make, so a caller can choose one
// that never re-sends (see resolve.Model.CompleteOnce).
func (a *Agent) ProcessOn(ctx context.Context, session, message, provider string,
	complete func(m Model, ctx context.Context, msgs []pluginapi.Message) (string, error)) (Result, error) {
	m, ok := a.all[provider]
	if !ok {
		return Result{}, fmt.Errorf("agent: provider %s: %w", provider, ErrNoProvider)
	}
	msgs, err := a.messages(session, message)
	if err != nil {
		return Result{}, err
	}
	if complete == nil {
		complete = Model.Complete
	}
	reply, err := complete(m, ctx, msgs)
	if err != nil {
		return Result{}, fmt.Errorf("agent: %w", err)
	}
	return Result{Reply: reply, Provider: provider}, nil
}

// Model returns the named provider's model.
func (a *Agent) Model(provider string) (Model, bool) {
	m, ok := a.all[provider]
	return m, ok
}

func (a *Agent) messages(session, message string) ([]pluginapi.Message, error) {
	var hist []store.Message
	if a.cfg.HistoryMessages > 0 {
		h, err := a.cfg.History.History(session, a.cfg.HistoryMessages)
		if err != nil {
			return nil, fmt.Errorf("agent: history: %w", err)
		}
		hist = h
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

// Remember stores an answered turn: the user's message and the model's
// reply, whole or not at all. The caller keeps the session's slot until it
// returns, so the next turn sees it.
func (a *Agent) Remember(session, message string, r Result) error {
	err := a.cfg.History.AppendTurn(session,
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
