package handlers

import (
	"context"
	"fmt"
	"net/http"
	"reflect"
	"testing"

	"github.com/cronplane/cronplane/pkg/admission"
	"github.com/cronplane/cronplane/pkg/auth/user"
)

// admissionLog is a mutating plugin that records what it is asked.
type admissionLog struct{ seen []string }

func (*admissionLog) Handles(admission.Operation) bool { return true }

func (l *admissionLog) Admit(_ context.Context, a *admission.Attributes) error {
	user := "<none>"
	if a.User != nil {
		user = a.User.Name
	}
	l.seen = append(l.seen, fmt.Sprintf("%s %s %s/%s old=%v options=%T user=%s", a.Operation, a.Resource.Resource, a.Namespace, a.Name, a.OldObject != nil, a.Options, user))
	return nil
}

func TestServeHTTP_MutatingAdmissionSeesTheOperationAndItsOptions(t *testing.T) {
	for _, tc := range []struct {
		name, method, target, body, contentType string
		want                                    string
	}{
		{"create", "POST", "/api/v1/namespaces/ns1/configmaps", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"new"}}`, "application/json",
			"CREATE configmaps ns1/new old=false options=*v1.CreateOptions user=alice"},
		{"update", "PUT", "/api/v1/namespaces/ns1/configmaps/cm1", dispatchCMBody, "application/json",
			"UPDATE configmaps ns1/cm1 old=true options=*v1.UpdateOptions user=alice"},
		// As kube: an update that creates is admitted as a create, with
		// create options.
		{"update that creates", "PUT", "/api/v1/namespaces/ns2/configmaps/cm1", dispatchCMBody, "application/json",
			"CREATE configmaps ns2/cm1 old=false options=*v1.CreateOptions user=alice"},
		{"patch", "PATCH", "/api/v1/namespaces/ns1/configmaps/cm1", `{"data":{"k":"v3"}}`, "application/merge-patch+json",
			"UPDATE configmaps ns1/cm1 old=true options=*v1.UpdateOptions user=alice"},
		{"delete", "DELETE", "/api/v1/namespaces/ns1/configmaps/cm1", "", "",
			"DELETE configmaps ns1/cm1 old=false options=*v1.DeleteOptions user=alice"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, _ := dispatchHandler()
			log := &admissionLog{}
			h.Admission = admission.Chain{log}
			alice := func(next http.Handler) http.Handler {
				return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					next.ServeHTTP(w, r.WithContext(user.WithUser(r.Context(), &user.Info{Name: "alice"})))
				})
			}
			w := dispatchRequest(alice(h), tc.method, tc.target, tc.body, "Content-Type: "+tc.contentType)
			if w.Code >= 300 {
				t.Fatalf("got %d: %s", w.Code, w.Body)
			}
			if want := []string{tc.want}; !reflect.DeepEqual(log.seen, want) {
				t.Errorf("admission saw\n %q\nwant %q", log.seen, want)
			}
		})
	}
}
