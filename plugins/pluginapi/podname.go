package pluginapi

// ValidPodName reports whether name is a pod name a GPU plugin accepts:
// lowercase letters, digits and dashes, 1 to 63 characters, neither
// starting nor ending with a dash (a DNS label). Such a name is safe in a
// URL path, as a command's argument (it never starts with a dash) and
// inside a shell word.
func ValidPodName(name string) bool {
	if len(name) == 0 || len(name) > 63 || name[0] == '-' || name[len(name)-1] == '-' {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
			return false
		}
	}
	return true
}
