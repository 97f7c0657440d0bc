package apiserver_test

import (
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"

	"github.com/cronplane/cronplane/pkg/apiserver"
	"github.com/cronplane/cronplane/pkg/apiserver/apiservertest"
)

// At -v=3 each request's line names its API verb (LIST, POST) and has
// the code the client got, as kube's httplog, which wraps the whole
// chain: the 504 of the request deadline, the 401 of authentication,
// with the authenticated user where there is one.
func TestLogging_RequestLineHasTheVerbAndTheCodeTheClientGot(t *testing.T) {
	var mu sync.Mutex
	var logged []string
	s := apiservertest.Start(t, func(o *apiserver.Options) {
		o.Logger = funcr.New(func(_, args string) {
			mu.Lock()
			defer mu.Unlock()
			logged = append(logged, args)
		}, funcr.Options{Verbosity: 3})
		o.AnonymousAuth = false
		o.TokenAuthFile = tokenFile(t, "alice")
		o.AuthorizationModes = []string{apiserver.ModeAlwaysAllow}
	})
	cms := "/api/v1/namespaces/default/configmaps"
	stalled := <-stalledRequest(t, s, http.MethodPost, cms+"?timeout=300ms", "alice-token", configMapJSON("stalled"))
	if stalled.err != nil || stalled.code != 504 {
		t.Fatalf("stalled write: %+v", stalled)
	}
	if resp, _ := request(t, s, http.MethodGet, cms+"?limit=1", "no-such-token", ""); resp.StatusCode != 401 {
		t.Fatalf("bad token: %d", resp.StatusCode)
	}
	for _, tc := range []struct{ want, code string }{
		{`"msg"="HTTP" "verb"="POST" "URI"="` + cms + `?timeout=300ms" "user"="alice" `, "504"},
		{`"msg"="HTTP" "verb"="LIST" "URI"="` + cms + `?limit=1" "user"="" `, "401"},
	} {
		deadline := time.Now().Add(5 * time.Second)
		for {
			line := ""
			mu.Lock()
			for _, l := range logged {
				if strings.Contains(l, tc.want) {
					line = l
				}
			}
			mu.Unlock()
			if strings.HasSuffix(line, `"resp"=`+tc.code) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("no request line %s... \"resp\"=%s; got %q", tc.want, tc.code, line)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
}
