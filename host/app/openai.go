package app

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/wakeonchat/wakeonchat/host/config"
	"github.com/wakeonchat/wakeonchat/host/openai"
	"github.com/wakeonchat/wakeonchat/host/resolve"
	"github.com/wakeonchat/wakeonchat/host/turn"
)

// openAIDoor builds the OpenAI-compatible door on the same models, pods and
// wake coordinator as /api/chat.
func (a *App) openAIDoor(getenv func(string) string, models map[string]*resolve.Model, turns *turn.Service) (*openai.Server, error) {
	c := a.cfg
	var provs []openai.Provider
	for _, p := range c.Providers {
		provs = append(provs, openai.Provider{Name: p.Name, ModelName: p.Model, Pod: p.Pod, Model: models[p.Name]})
	}
	replies, err := openai.NewRecognizer(c.Replies)
	if err != nil {
		return nil, fmt.Errorf("replies: %w", err)
	}
	var keys []string
	if c.OpenAI.APIKeysEnv != "" {
		keys = openai.ParseKeys(getenv(c.OpenAI.APIKeysEnv))
		if len(keys) == 0 {
			// Never a door open by mistake: a variable named but empty
			// refuses every request (RequireKey).
			a.log.Error("openai door refuses every request: its API keys variable is empty or not set", "api_keys_env", c.OpenAI.APIKeysEnv)
		}
	}
	return openai.New(openai.Config{
		Providers: provs, Service: turns, Replies: replies,
		Clock: a.clock, Logger: a.log, MaxBody: c.Server.MaxBodyBytes,
		Keys: keys, RequireKey: c.OpenAI.APIKeysEnv != "", CORSOrigins: c.OpenAI.CORSOrigins,
		Hold: c.OpenAI.ColdStart == config.ColdStartHold, HoldMax: c.OpenAI.HoldMax.Duration, Keepalive: c.OpenAI.Keepalive.Duration,
		WriteTimeout: c.Timings.CompletionTimeout.Duration,
		Metrics:      a.metrics,
	}), nil
}

// routes sends /v1/ to the OpenAI door, the operators' surface to admin
// (nil when [server] admin_listen serves it elsewhere) and everything else
// to /api/chat's server.
func routes(door, chat, admin http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == "/v1" || strings.HasPrefix(r.URL.Path, "/v1/"):
			door.ServeHTTP(w, r)
		case admin != nil && isAdminPath(r.URL.Path):
			admin.ServeHTTP(w, r)
		default:
			chat.ServeHTTP(w, r)
		}
	})
}
