package conductor

import "github.com/wakeonchat/wakeonchat/plugins/pluginapi"

// ValidName reports whether name is a pod name the conductor can have:
// lowercase letters, digits and dashes, 1 to 63 characters, neither
// starting nor ending with a dash (a DNS label). It is
// pluginapi.ValidPodName, the rule every GPU plugin shares.
func ValidName(name string) bool { return pluginapi.ValidPodName(name) }
