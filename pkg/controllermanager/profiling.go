package controllermanager

import (
	"net/http"
	"net/http/pprof"

	"k8s.io/client-go/kubernetes"
)

// profilingHandler serves Go's profiles at /debug/pprof/ as
// kube-controller-manager's --profiling does (the index, profile for 30 s
// of CPU, heap, allocs, goroutine, trace, ...), to the callers the
// apiserver allows to get that path (delegatedAuth). As kube's, cmdline
// is not among them: the index answers 404 "Unknown profile".
func profilingHandler(reviews kubernetes.Interface) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	return delegatedAuth(reviews, mux)
}
