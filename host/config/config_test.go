package config

import (
	"bufio"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/BurntSushi/toml"
	"github.com/google/go-cmp/cmp"

	"github.com/wakeonchat/wakeonchat/machines"
)

// committedFile is the wake.toml at the repository root.
const committedFile = "../../wake.toml"

func TestDefaultConfigIsValid(t *testing.T) {
	if err := DefaultConfig().Validate(); err != nil {
		t.Fatalf("DefaultConfig().Validate() = %v, want nil", err)
	}
}

func TestDefaultConfigReturnsFreshSlices(t *testing.T) {
	a := DefaultConfig()
	a.Providers[0].Name = "changed"
	a.Agent.Providers[0] = "changed"
	b := DefaultConfig()
	if b.Providers[0].Name != "qwen" || b.Agent.Providers[0] != "qwen" {
		t.Fatalf("DefaultConfig shares slices between calls: got %q, %q", b.Providers[0].Name, b.Agent.Providers[0])
	}
}

// The committed wake.toml shows the defaults: loading it gives DefaultConfig
// with only what Load itself sets (Path, and the directories resolved
// against the file's directory).
func TestCommittedWakeTOMLEqualsDefaults(t *testing.T) {
	got, err := Load(committedFile)
	if err != nil {
		t.Fatalf("Load(%s): %v", committedFile, err)
	}
	path, err := filepath.Abs(committedFile)
	if err != nil {
		t.Fatal(err)
	}
	want := DefaultConfig()
	want.Path = path
	want.Server.DataDir = filepath.Join(filepath.Dir(path), "data")
	want.Plugins.Dir = filepath.Join(filepath.Dir(path), "bin")
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Load(%s) differs from DefaultConfig (-want +got):\n%s", committedFile, diff)
	}
}

// allKeys lists every key wake.toml may set, as dotted paths: Config's toml
// tags and a replies.* key per machines.ReplyKeys entry.
func allKeys() []string {
	keys := tomlKeys(reflect.TypeFor[Config](), "")
	for _, k := range machines.ReplyKeys {
		keys = append(keys, "replies."+string(k))
	}
	return keys
}

// tomlKeys lists the keys of a struct type by its toml tags.
func tomlKeys(t reflect.Type, prefix string) []string {
	var keys []string
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("toml"), ",")
		if name == "" || name == "-" {
			continue
		}
		key := prefix + name
		keys = append(keys, key)
		ft := f.Type
		if ft.Kind() == reflect.Slice {
			ft = ft.Elem()
		}
		if ft.Kind() == reflect.Struct && ft != reflect.TypeFor[Duration]() {
			keys = append(keys, tomlKeys(ft, key+".")...)
		}
	}
	return keys
}

// withExamples is the committed wake.toml with its commented-out
// [[backends]] examples uncommented: each block of lines that starts
// "# [[backends]]" and runs to the first line that is not a comment, each
// line's "# " (or a lone "#") taken off.
func withExamples(t *testing.T) string {
	t.Helper()
	data, err := os.ReadFile(committedFile)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	in, blocks := false, 0
	for _, line := range strings.Split(string(data), "\n") {
		if line == "# [[backends]]" {
			in = true
			blocks++
		}
		switch {
		case in && strings.HasPrefix(line, "# "):
			line = strings.TrimPrefix(line, "# ")
		case in && line == "#":
			line = ""
		default:
			in = false
		}
		out = append(out, line)
	}
	if blocks < 3 {
		t.Fatalf("%s: found %d commented [[backends]] examples, want the command, runpod and conductor ones", committedFile, blocks)
	}
	return strings.Join(out, "\n")
}

// The [[backends]] examples are a valid configuration, each of its kind.
func TestCommittedWakeTOMLExamplesParse(t *testing.T) {
	c, err := Parse([]byte(withExamples(t)), "")
	if err != nil {
		t.Fatalf("the committed wake.toml with its examples uncommented: %v", err)
	}
	var kinds []string
	for _, b := range c.Backends {
		kinds = append(kinds, b.Kind)
	}
	if diff := cmp.Diff([]string{KindCommand, KindRunPod, KindConductor}, kinds); diff != "" {
		t.Errorf("the examples' kinds (-want +got):\n%s", diff)
	}
}

func TestCommittedWakeTOMLShowsEveryKey(t *testing.T) {
	var raw map[string]any
	md, err := toml.Decode(withExamples(t), &raw)
	if err != nil {
		t.Fatal(err)
	}
	inFile := map[string]bool{}
	for _, k := range md.Keys() {
		inFile[k.String()] = true
	}
	want := allKeys()
	if len(want) < 45 {
		t.Fatalf("found only %d keys in Config: %v", len(want), want)
	}
	for _, key := range want {
		if !inFile[key] {
			t.Errorf("%s does not set %q", committedFile, key)
		}
	}
}

// Every key in the committed file has a comment line right above it.
func TestCommittedWakeTOMLCommentsEveryKey(t *testing.T) {
	text := withExamples(t)
	keyLine := regexp.MustCompile(`^[a-z_]+ = `)
	prev, n, keys := "", 0, 0
	for s := bufio.NewScanner(strings.NewReader(text)); s.Scan(); {
		n++
		line := s.Text()
		if keyLine.MatchString(line) {
			keys++
			if !strings.HasPrefix(prev, "# ") {
				t.Errorf("%s:%d: %q has no comment above it", committedFile, n, line)
			}
		}
		prev = line
	}
	// One key line per leaf key the file sets (a [[backends]] key once per
	// example that has it), and every leaf of Config among them.
	var raw map[string]any
	md, err := toml.Decode(text, &raw)
	if err != nil {
		t.Fatal(err)
	}
	all := allKeys()
	isLeaf := func(k string) bool {
		return !slices.ContainsFunc(all, func(o string) bool { return strings.HasPrefix(o, k+".") })
	}
	set := 0
	for _, k := range md.Keys() {
		if slices.Contains(all, k.String()) && isLeaf(k.String()) {
			set++
		}
	}
	leaves := 0
	for _, k := range all {
		if isLeaf(k) {
			leaves++
		}
	}
	if keys != set || set < leaves {
		t.Errorf("found %d key lines in %s setting %d keys, want one per key set, and at least one per key of Config (%d)", keys, committedFile, set, leaves)
	}
}

// Every reply key machines lists is a key of [replies], with its default
// from machines and its own override, with no code per key in this package.
func TestRepliesAreMachinesReplyKeys(t *testing.T) {
	if diff := cmp.Diff(machines.DefaultReplies(), DefaultConfig().Replies); diff != "" {
		t.Errorf("DefaultConfig().Replies (-machines.DefaultReplies +got):\n%s", diff)
	}
	for _, k := range machines.ReplyKeys {
		t.Run(string(k), func(t *testing.T) {
			text := "Reply " + string(k) + " for {{.Pod}}."
			got, err := Parse([]byte("[replies]\n"+string(k)+" = "+strconv.Quote(text)+"\n"), "/etc/wake")
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			want := machines.DefaultReplies()
			want[k] = text
			if diff := cmp.Diff(want, got.Replies); diff != "" {
				t.Errorf("Replies (-want +got):\n%s", diff)
			}
		})
	}
}

// The timings machines decides by keep machines' defaults, and each field
// reaches its machines.Timings field.
func TestMachineTimings(t *testing.T) {
	c := DefaultConfig()
	if diff := cmp.Diff(machines.DefaultTimings(), c.MachineTimings()); diff != "" {
		t.Errorf("DefaultConfig().MachineTimings() (-machines.DefaultTimings +got):\n%s", diff)
	}
	c.Timings = Timings{
		WakeWindow: Duration{1}, LoadingCeiling: Duration{2}, WakeWatch: Duration{3}, WatchPoll: Duration{4},
		ExpectedWake: Duration{5}, PodIdleStop: Duration{6}, ReadySlack: Duration{7}, CompletionTimeout: Duration{8},
		ProbeInterval: Duration{9},
	}
	want := machines.Timings{WakeWindow: 1, LoadingCeiling: 2, WakeWatch: 3, ExpectedWake: 5, PodIdleStop: 6, ReadySlack: 7}
	if diff := cmp.Diff(want, c.MachineTimings()); diff != "" {
		t.Errorf("MachineTimings (-want +got):\n%s", diff)
	}
}

func TestParsedReplies(t *testing.T) {
	r, err := DefaultConfig().ParsedReplies()
	if err != nil {
		t.Fatalf("DefaultConfig().ParsedReplies(): %v", err)
	}
	got, err := r.Render(machines.ReplyStillWaking, machines.ReplyData{ElapsedMinutes: 3, ExpectedMinutes: 9, EtaMinutes: 9})
	if err != nil {
		t.Fatal(err)
	}
	if want := "Still waking — 3 min elapsed, usually ready by ~9. Ask again shortly."; got != want {
		t.Errorf("rendered still_waking = %q, want %q", got, want)
	}

	c := DefaultConfig()
	c.Replies[machines.ReplyRefused] = "HTTP {{.Stat}}"
	if _, err := c.ParsedReplies(); err == nil || !strings.HasPrefix(err.Error(), "replies.refused: ") {
		t.Errorf("ParsedReplies with a typo: error %v, want one starting %q", err, "replies.refused: ")
	}
}

func TestPaths(t *testing.T) {
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name       string
		c          Config
		wantPlugin string
		wantData   string
	}{
		{
			name:       "absolute dirs as loaded",
			c:          Config{Path: "/etc/wake/wake.toml", Plugins: Plugins{Dir: "/opt/wake/bin"}, Server: Server{DataDir: "/var/lib/wake"}},
			wantPlugin: "/opt/wake/bin/wake-plugin-conductor",
			wantData:   "/var/lib/wake",
		},
		{
			name:       "relative dirs resolve against the file",
			c:          Config{Path: "/etc/wake/wake.toml", Plugins: Plugins{Dir: "bin"}, Server: Server{DataDir: "../state"}},
			wantPlugin: "/etc/wake/bin/wake-plugin-conductor",
			wantData:   "/etc/state",
		},
		{
			name:       "DefaultConfig resolves against the working directory",
			c:          DefaultConfig(),
			wantPlugin: filepath.Join(wd, "bin", "wake-plugin-conductor"),
			wantData:   filepath.Join(wd, "data"),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.c.PluginPath("wake-plugin-conductor"); got != tt.wantPlugin {
				t.Errorf("PluginPath = %q, want %q", got, tt.wantPlugin)
			}
			if got := tt.c.DataDir(); got != tt.wantData {
				t.Errorf("DataDir = %q, want %q", got, tt.wantData)
			}
		})
	}
}

func TestDuration(t *testing.T) {
	tests := []struct {
		text    string
		want    time.Duration
		wantErr string
	}{
		{text: "15m", want: 15 * time.Minute},
		{text: "1h30m", want: 90 * time.Minute},
		{text: "90s", want: 90 * time.Second},
		{text: "-3s", want: -3 * time.Second}, // parses; Validate rejects it where it matters
		{text: "15", wantErr: `invalid duration "15": want a number with a unit, such as "15m" or "90s"`},
		{text: "fast", wantErr: `invalid duration "fast": want a number with a unit, such as "15m" or "90s"`},
		{text: "", wantErr: `invalid duration "": want a number with a unit, such as "15m" or "90s"`},
	}
	for _, tt := range tests {
		t.Run(tt.text, func(t *testing.T) {
			var d Duration
			err := d.UnmarshalText([]byte(tt.text))
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("UnmarshalText(%q) error = %v, want %q", tt.text, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("UnmarshalText(%q): %v", tt.text, err)
			}
			if d.Duration != tt.want {
				t.Fatalf("UnmarshalText(%q) = %v, want %v", tt.text, d.Duration, tt.want)
			}
			text, err := d.MarshalText()
			if err != nil {
				t.Fatal(err)
			}
			var back Duration
			if err := back.UnmarshalText(text); err != nil || back != d {
				t.Fatalf("MarshalText = %q, which reads back as %v, %v", text, back, err)
			}
		})
	}
}
