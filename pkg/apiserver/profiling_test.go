package apiserver_test

import (
	"strings"
	"testing"

	"github.com/cronplane/cronplane/pkg/apiserver"
)

// /debug/pprof/ is served, as kube's --profiling serves it, to those
// allowed to get those paths; --profiling=false serves nothing there.
func TestProfiling_ServedToMastersOnly(t *testing.T) {
	for _, tc := range []struct {
		token, path string
		code        int
		body        string
	}{
		{srv.AdminToken, "/debug/pprof/", 200, "goroutine"},
		{srv.AdminToken, "/debug/pprof/heap?debug=1", 200, "heap profile"},
		{srv.AdminToken, "/debug/pprof/cmdline", 404, "Unknown profile\n"},
		{"alice-token", "/debug/pprof/", 403, `forbidden: User \"alice\" cannot get path \"/debug/pprof/\"`},
		{"", "/debug/pprof/heap", 403, `User \"system:anonymous\" cannot get path \"/debug/pprof/heap\"`},
	} {
		resp, body := raw(t, "GET", tc.path, tc.token, "", "")
		if resp.StatusCode != tc.code || !strings.Contains(body, tc.body) {
			t.Errorf("GET %s as %q: %d %.200q, want %d with %q", tc.path, tc.token, resp.StatusCode, body, tc.code, tc.body)
		}
	}

	s, c := startServer(t, func(o *apiserver.Options) { o.Profiling = false }, nil)
	if code, _ := getPath(t, c, s, "/debug/pprof/", s.AdminToken); code != 404 {
		t.Fatalf("--profiling=false: %d, want 404", code)
	}
}
