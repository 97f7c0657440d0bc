package filters

import (
	"net/http"
	"testing"
)

// BenchmarkAuditedGet is a get through the audit filters at the Metadata
// level, against the same chain without an auditor: what auditing adds
// to a request.
func BenchmarkAuditedGet(b *testing.B) {
	ok := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"a","namespace":"ns"}}`))
	})
	metadata, _ := newAuditor(b, "rules:\n- level: Metadata\n")
	for _, bc := range []struct {
		name string
		h    http.Handler
	}{
		{"off", auditedChain(nil, ok)},
		{"metadata", auditedChain(metadata, ok)},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				if w := serve(bc.h, "GET", "/api/v1/namespaces/ns/configmaps/a", "alice-token", ""); w.Code != http.StatusOK {
					b.Fatalf("code %d", w.Code)
				}
			}
		})
	}
}
