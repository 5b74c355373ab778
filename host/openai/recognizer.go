package openai

// Recognizer tells the host's own status replies from a model's answers.
type Recognizer struct{}
