package pluginapi

import "regexp"

// ValidPodName reports whether name is a pod name a GPU plugin accepts:
// lowercase letters, digits and dashes, 1 to 63 characters, neither
// starting nor ending with a dash (a DNS label). Such a name is safe in a
// URL path, as a command's argument (it never starts with a dash) and
// inside a shell word.
func ValidPodName(name string) bool { return podNamePattern.MatchString(name) }

var podNamePattern = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$`)
