package filters

import (
	"testing"

	"github.com/cronplane/cronplane/pkg/auth/authorizer"
	"github.com/cronplane/cronplane/pkg/auth/user"
)

func TestForbidden_WordsTheDenialAsKube(t *testing.T) {
	alice := &user.Info{Name: "alice"}
	cases := []struct {
		name   string
		a      authorizer.Attributes
		reason string
		want   string
	}{
		{"namespaced list", authorizer.Attributes{User: alice, Verb: "list", ResourceRequest: true, APIGroup: "batch", Resource: "cronjobs", Namespace: "x"}, "",
			`cronjobs.batch is forbidden: User "alice" cannot list resource "cronjobs" in API group "batch" in the namespace "x"`},
		{"a named subresource at the cluster scope, with the reason", authorizer.Attributes{User: alice, Verb: "update", ResourceRequest: true, Resource: "namespaces", Subresource: "finalize", Name: "x"}, `RBAC: role.rbac.authorization.k8s.io "r" not found`,
			`namespaces "x" is forbidden: User "alice" cannot update resource "namespaces/finalize" in API group "" at the cluster scope: RBAC: role.rbac.authorization.k8s.io "r" not found`},
		{"a path", authorizer.Attributes{User: &user.Info{Name: user.Anonymous}, Verb: "get", Path: "/api"}, "",
			`forbidden: User "system:anonymous" cannot get path "/api"`},
		{"HTML in the request is escaped, not in the reason", authorizer.Attributes{User: &user.Info{Name: "<b>"}, Verb: "get", Path: "/x<y>&z"}, "a<b",
			`forbidden: User "&lt;b&gt;" cannot get path "/x&lt;y&gt;&amp;z": a<b`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := Forbidden(tc.a, tc.reason).Error(); got != tc.want {
				t.Fatalf("got  %s\nwant %s", got, tc.want)
			}
		})
	}
}
