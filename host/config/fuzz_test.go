package config

import (
	"errors"
	"os"
	"testing"
)

// FuzzParse checks that Parse never panics, that what it accepts is valid
// with working replies, that what it rejects it rejects with *Error values
// only, and that it says the same thing twice. The seeds run in plain
// go test.
func FuzzParse(f *testing.F) {
	committed, err := os.ReadFile(committedFile)
	if err != nil {
		f.Fatal(err)
	}
	for _, seed := range []string{
		string(committed),
		fullFile,
		"",
		"[timings]\nwake_windw = \"1m\"\n",
		"[timings]\nwake_window = 15\n",
		"[timings]\nwake_window = \"15\"\n",
		"[server]\nlisten = \"127.0.0.1:8080\n",
		"[timings\n",
		"[[providers]]\nname = \"a\"\nnme = 1\n[[providers]]\nname = 2\n",
		"providers = [{name = \"a\", pod = \"a\"}, 3]\nagent.providers = [\"a\", {}]\n",
		"[Server]\nLISTEN = 1\n[server]\nlisten = \"x\"\n",
		"a.b.c = 1\n[a.b.d]\n[[a.e]]\n",
		"\"\" = 1\n\"-\" = 2\n\"a,b\" = 3\n[replies]\n\"x,y\" = 4\n",
		"[replies]\nstill_waking = \"{{.Elapsed}}\"\nwaking = \"see https://x.com\"\n",
		"[replies]\nstuck = \"\"\"\n**bold**\n\"\"\"\n",
		"[conductor]\nurl = \"http://u:p@h/?q#f\"\n[[providers]]\nname = \"x\"\nbase_url = \"http://h\"\npod = \"p\"\n",
		"providers = []\n[agent]\nproviders = []\nhistory_messages = -1\n",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := Parse(data, "/etc/wake")
		if err != nil {
			for _, e := range unjoin(err) {
				var ce *Error
				if !errors.As(e, &ce) {
					t.Fatalf("error %v is a %T, not an *Error", e, e)
				}
				if ce.Err == nil || e.Error() == "" {
					t.Fatalf("empty *Error %#v", ce)
				}
			}
			_, again := Parse(data, "/etc/wake")
			if again == nil || again.Error() != err.Error() {
				t.Fatalf("Parse said %q, then %v", err, again)
			}
			return
		}
		if verr := c.Validate(); verr != nil {
			t.Fatalf("Parse accepted a config that does not validate: %v", verr)
		}
		if _, rerr := c.ParsedReplies(); rerr != nil {
			t.Fatalf("Parse accepted replies that do not parse: %v", rerr)
		}
		if c.Path != "" {
			t.Fatalf("Parse set Path to %q", c.Path)
		}
	})
}
