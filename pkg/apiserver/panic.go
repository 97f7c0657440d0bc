package apiserver

import (
	"fmt"
	"net/http"
	"runtime/debug"

	"k8s.io/klog/v2"

	"github.com/cronplane/cronplane/pkg/endpoints/filters"
)

// logPanic logs a handler's panic with the stack where it happened (the
// request deadline runs handlers in goroutines of their own and hands
// their panics on as filters.HandlerPanic).
func logPanic(r *http.Request, v interface{}) {
	stack := debug.Stack()
	if p, ok := v.(*filters.HandlerPanic); ok {
		v, stack = p.Value, p.Stack
	}
	klog.FromContext(r.Context()).Error(nil, "apiserver panicked", "method", r.Method, "URI", r.RequestURI, "panic", fmt.Sprint(v), "stack", string(stack))
}
