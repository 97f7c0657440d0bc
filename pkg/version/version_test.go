package version

import (
	"os"
	"strings"
	"testing"
)

// TestVersion_MakefileSetsTheBuildFacts keeps the Makefile's -ldflags -X
// names in step with the variables /version reports.
func TestVersion_MakefileSetsTheBuildFacts(t *testing.T) {
	data, err := os.ReadFile("../../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	mk := string(data)
	if !strings.Contains(mk, "VERSION_PKG := github.com/cronplane/cronplane/pkg/version") {
		t.Fatal("the Makefile's VERSION_PKG is not this package")
	}
	for _, v := range []string{"gitVersion", "gitCommit", "gitTreeState", "buildDate"} {
		if !strings.Contains(mk, "-X $(VERSION_PKG)."+v+"=") {
			t.Errorf("the Makefile does not set %s", v)
		}
	}
	if Info.BuildDate == "" {
		t.Error("a build without -ldflags reports no buildDate; kube reports the epoch")
	}
}

func TestUserAgent_NamesTheProgramFirst(t *testing.T) {
	ua := UserAgent("kube-controller-manager", "cronjob-controller")
	if !strings.HasPrefix(ua, "kube-controller-manager/"+Info.GitVersion+" (") || !strings.HasSuffix(ua, "/cronjob-controller") {
		t.Errorf("UserAgent = %q", ua)
	}
}
