package handlers

import (
	"net/http"
	"net/http/httputil"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/httpstream"

	"github.com/cronplane/cronplane/pkg/endpoints/responsewriters"
	"github.com/cronplane/cronplane/pkg/registry/rest"
)

// connect proxies the request to where its Connecter sends it, as
// kube-apiserver's upgrade-aware proxy does for exec: an upgrade is
// required, and once the upstream switches protocols the two
// connections are joined. The client's credentials stay here; the
// upstream sees the apiserver's.
func (c *call) connect(cn rest.Connecter) error {
	up, err := cn.Connect(c.r.Context(), c.namespace, c.info.Name, c.query)
	if err != nil {
		return err
	}
	if !httpstream.IsUpgradeRequest(c.r) {
		return apierrors.NewBadRequest("Upgrade request required")
	}
	proxy := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.Out.URL, pr.Out.Host = up.Location, up.Location.Host
			pr.Out.Header.Del("Authorization")
			for h := range pr.Out.Header {
				if strings.HasPrefix(h, "Impersonate-") {
					pr.Out.Header.Del(h)
				}
			}
		},
		Transport:     up.Transport,
		FlushInterval: -1,
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			// As kube's proxy: the upstream's failure is the server's.
			responsewriters.WriteError(w, r, &apierrors.StatusError{ErrStatus: metav1.Status{
				Status: metav1.StatusFailure, Code: http.StatusInternalServerError, Message: err.Error(),
			}})
		},
	}
	proxy.ServeHTTP(c.w, c.r)
	return nil
}
