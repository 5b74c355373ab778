package supervisor

import (
	"fmt"
	"regexp"

	"github.com/wakeonchat/wakeonchat/plugins/pluginapi"
)

// incompatible is go-plugin's error for a plugin of another protocol.
var incompatible = regexp.MustCompile(`^incompatible API version with plugin\. Plugin version: (\d+)`)

// versionProblem says in words what go-plugin's version mismatch means: a
// plugin built against another protocol of pluginapi.
func versionProblem(line string) (string, bool) {
	m := incompatible.FindStringSubmatch(line)
	if m == nil {
		return "", false
	}
	return fmt.Sprintf("it speaks plugin protocol %s and this host speaks protocols %d to %d: rebuild it against this release's plugins/pluginapi (see plugins/README.md, \"Protocol versions\")",
		m[1], pluginapi.MinProtocolVersion, pluginapi.ProtocolVersion), true
}
