package main

import (
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/wakeonchat/wakeonchat/host/app"
)

// Exit statuses of `wakehost check`.
const (
	checkOK      = 0 // the config is good: one line on stdout
	checkProblem = 1 // a problem: each on a line of its own on stderr
	checkUsage   = 2 // bad arguments
)

// check is `wakehost check [-config wake.toml]`: app.Check on the config,
// with this executable's built-in plugins. It opens nothing and writes
// nothing but its output, and returns the exit status.
func check(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("wakehost check", flag.ContinueOnError)
	fs.SetOutput(stderr)
	configPath := fs.String("config", "wake.toml", "path of the config file to check")
	if err := fs.Parse(args); err != nil {
		return checkUsage
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "wakehost check: unexpected arguments: %q\n", fs.Args())
		return checkUsage
	}
	summary, problems := app.Check(app.Options{ConfigPath: *configPath, Executable: executable()})
	if len(problems) > 0 {
		for _, p := range problems {
			fmt.Fprintln(stderr, p)
		}
		return checkProblem
	}
	fmt.Fprintln(stdout, summary)
	return checkOK
}

// executable is this process's executable, which serves the built-in
// plugins; "" when it cannot be found (then every plugin must be a file in
// plugins.dir, and the launch error says which is missing).
func executable() string {
	exe, err := os.Executable()
	if err != nil {
		return ""
	}
	return exe
}
