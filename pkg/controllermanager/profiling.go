package controllermanager

import (
	"net/http"
	"net/http/pprof"
)

// profilingHandler serves Go's profiles at /debug/pprof/ as
// kube-controller-manager's --profiling does (the index, profile for 30 s
// of CPU, heap, allocs, goroutine, trace, ...); endpoints serves them to
// the callers the apiserver allows to get that path. As kube's, cmdline
// is not among them: the index answers 404 "Unknown profile".
func profilingHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	return mux
}
