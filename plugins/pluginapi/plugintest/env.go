package plugintest

import (
	"maps"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// Env is a fake environment for a plugin's configuration reader, which
// takes os.Getenv in main and Env.Getenv in a test.
type Env map[string]string

// Getenv is the value of name, "" when unset.
func (e Env) Getenv(name string) string { return e[name] }

// With returns a copy of e with kv's name, value pairs set.
func (e Env) With(kv ...string) Env {
	c := maps.Clone(e)
	if c == nil {
		c = Env{}
	}
	for i := 0; i+1 < len(kv); i += 2 {
		c[kv[i]] = kv[i+1]
	}
	return c
}

// EnvCase is a row of a configuration reader's table test: an
// environment, and the config it gives or the start of its error.
type EnvCase[C any] struct {
	Name    string
	Env     Env
	Want    C
	WantErr string
}

// RunFromEnv runs each case in a parallel subtest: fromEnv of the case's
// environment returns Want (compared with opts), or, with WantErr, an
// error that starts with WantErr and does not quote secret, a value from
// the cases' environments that no error may carry.
func RunFromEnv[C any](t *testing.T, fromEnv func(getenv func(string) string) (C, error), secret string, cases []EnvCase[C], opts ...cmp.Option) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.Name, func(t *testing.T) {
			t.Parallel()
			got, err := fromEnv(tc.Env.Getenv)
			if tc.WantErr != "" {
				if err == nil || !strings.HasPrefix(err.Error(), tc.WantErr) {
					t.Fatalf("error %v, want one starting %q", err, tc.WantErr)
				}
				if strings.Contains(err.Error(), secret) {
					t.Errorf("the error quotes a value: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.Want, got, opts...); diff != "" {
				t.Errorf("config (-want +got):\n%s", diff)
			}
		})
	}
}
