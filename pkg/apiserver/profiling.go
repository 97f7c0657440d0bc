package apiserver

import (
	"net/http/pprof"

	"github.com/gorilla/mux"
)

// installProfiling serves Go's profiles as kube-apiserver's --profiling
// does: /debug/pprof/ lists them, /debug/pprof/<name> serves one
// (profile for 30 s of CPU, heap, goroutine, allocs, ...). As kube's,
// cmdline is not among them (the index answers 404 "Unknown profile"):
// the command line names files and flags no caller needs.
func installProfiling(r *mux.Router) {
	r.HandleFunc("/debug/pprof/profile", pprof.Profile)
	r.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	r.HandleFunc("/debug/pprof/trace", pprof.Trace)
	r.PathPrefix("/debug/pprof/").HandlerFunc(pprof.Index)
}
