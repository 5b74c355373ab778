// Command gendoc writes docs/state-diagram.md from the embedded specs. It is
// run by `go generate ./machines/` (make generate).
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/wakeonchat/wakeonchat/machines"
)

func main() {
	out := flag.String("out", "docs/state-diagram.md", "file to write")
	flag.Parse()
	doc, err := machines.StateDiagram()
	if err == nil {
		err = os.WriteFile(*out, []byte(doc), 0o644)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "gendoc:", err)
		os.Exit(1)
	}
}
