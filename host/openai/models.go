package openai

import (
	"net/http"
	"regexp"
)

// ownedBy is every listed model's owned_by.
const ownedBy = "wake-on-chat"

// modelObject is one entry of GET /v1/models.
type modelObject struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Created int64  `json:"created"`
	OwnedBy string `json:"owned_by"`
}

type modelList struct {
	Object string        `json:"object"`
	Data   []modelObject `json:"data"`
}

// modelObject is p as GET /v1/models lists it.
func (s *Server) modelObject(p *Provider) modelObject {
	return modelObject{ID: p.Name, Object: "model", Created: s.cfg.Created.Unix(), OwnedBy: ownedBy}
}

// handleModels lists the configured providers, from config: it never asks
// the conductor and never wakes anything.
func (s *Server) handleModels(w http.ResponseWriter, r *http.Request) {
	if !allow(w, r, http.MethodGet) {
		return
	}
	list := modelList{Object: "list", Data: make([]modelObject, 0, len(s.cfg.Providers))}
	for i := range s.cfg.Providers {
		list.Data = append(list.Data, s.modelObject(&s.cfg.Providers[i]))
	}
	writeJSON(w, http.StatusOK, list)
}

// handleModel is GET /v1/models/{model}, from config like the list.
func (s *Server) handleModel(w http.ResponseWriter, r *http.Request) {
	if !allow(w, r, http.MethodGet) {
		return
	}
	name := r.PathValue("model")
	p, ok := s.byName[name]
	if !ok {
		writeError(w, modelNotFound(name))
		return
	}
	writeJSON(w, http.StatusOK, s.modelObject(p))
}

// modelNamePattern is a plain model name ("qwen", "Qwen/Qwen2.5-7B",
// "llama3:8b"): words joined by single ':' or '/', so never a scheme's
// "://".
var modelNamePattern = regexp.MustCompile(`^[A-Za-z0-9_.-]+(?:[:/][A-Za-z0-9_.-]+)*$`)

// modelNotFound names the model when it is a plain name of at most 128
// bytes, and only then: anything else is the client's text, could be a
// URL, and is not echoed.
func modelNotFound(name string) *apiError {
	msg := "the model does not exist; GET /v1/models lists the models"
	if len(name) <= 128 && modelNamePattern.MatchString(name) {
		msg = "the model " + name + " does not exist; GET /v1/models lists the models"
	}
	return &apiError{kind: kindModelNotFound, param: "model", message: msg}
}
