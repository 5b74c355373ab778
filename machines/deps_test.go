package machines

import (
	"os/exec"
	"strings"
	"testing"
)

// TestPureDependencies keeps the decision core pure: machines/ may use this
// module's engine/ and specs/ and nothing that does network, processes or
// plugins.
func TestPureDependencies(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go binary not found")
	}
	out, err := exec.Command(goBin, "list", "-deps", "github.com/wakeonchat/wakeonchat/machines").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	const module = "github.com/wakeonchat/wakeonchat"
	allowed := map[string]bool{module + "/machines": true, module + "/engine": true, module + "/specs": true}
	for _, dep := range strings.Fields(string(out)) {
		switch {
		case dep == "net/http", dep == "os/exec", dep == "net",
			strings.HasPrefix(dep, "github.com/hashicorp/go-plugin"), strings.HasPrefix(dep, "google.golang.org/grpc"):
			t.Errorf("machines depends on %s", dep)
		case (dep == module || strings.HasPrefix(dep, module+"/")) && !allowed[dep]:
			t.Errorf("machines depends on %s; only engine and specs are allowed", dep)
		}
	}
}
