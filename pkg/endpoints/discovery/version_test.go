package discovery

import (
	"os"
	"strings"
	"testing"
)

// TestVersion_MakefileSetsTheBuildFacts keeps the Makefile's -ldflags -X
// names in step with the variables /version reports.
func TestVersion_MakefileSetsTheBuildFacts(t *testing.T) {
	data, err := os.ReadFile("../../../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	mk := string(data)
	if !strings.Contains(mk, "VERSION_PKG := github.com/cronplane/cronplane/pkg/endpoints/discovery") {
		t.Fatal("the Makefile's VERSION_PKG is not this package")
	}
	for _, v := range []string{"gitCommit", "gitTreeState", "buildDate"} {
		if !strings.Contains(mk, "-X $(VERSION_PKG)."+v+"=") {
			t.Errorf("the Makefile does not set %s", v)
		}
	}
	if Version.BuildDate == "" {
		t.Error("a build without -ldflags reports no buildDate; kube reports the epoch")
	}
}
