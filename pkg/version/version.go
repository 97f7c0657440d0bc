// Package version owns the build facts both binaries report: the
// Kubernetes version whose API is served, and the commit, tree state and
// date the Makefile stamps in with -ldflags -X. The apiserver serves them
// at /version; the controller-manager sends them in its User-Agent.
package version

import (
	"runtime"

	"k8s.io/apimachinery/pkg/version"
)

// Build facts the Makefile sets with -ldflags -X; a plain go build leaves
// the served release as gitVersion and kube's placeholders for the rest.
var (
	gitVersion   = "v1.29.15-cronplane"
	gitCommit    = ""
	gitTreeState = ""
	buildDate    = "1970-01-01T00:00:00Z"
)

// Info is the Kubernetes version whose API is served, and the build that
// serves it.
var Info = version.Info{
	Major:        "1",
	Minor:        "29",
	GitVersion:   gitVersion,
	GitCommit:    gitCommit,
	GitTreeState: gitTreeState,
	BuildDate:    buildDate,
	GoVersion:    runtime.Version(),
	Compiler:     runtime.Compiler,
	Platform:     runtime.GOOS + "/" + runtime.GOARCH,
}

// UserAgent is the User-Agent of a client of the given program, as
// client-go builds kube's own: "program/version (os/arch) cronplane/commit",
// with the client's purpose after a final slash when there is one. The
// apiserver takes the program name as the default field manager.
func UserAgent(program, purpose string) string {
	commit := Info.GitCommit
	if len(commit) > 7 {
		commit = commit[:7]
	}
	if commit == "" {
		commit = "unknown"
	}
	ua := program + "/" + Info.GitVersion + " (" + Info.Platform + ") cronplane/" + commit
	if purpose != "" {
		ua += "/" + purpose
	}
	return ua
}
