package audit

import (
	"reflect"
	"strings"
	"testing"

	"github.com/cronplane/cronplane/pkg/auth/authorizer"
	"github.com/cronplane/cronplane/pkg/auth/user"
)

func resourceAttrs(u *user.Info, verb, group, resource, subresource, namespace, name string) authorizer.Attributes {
	return authorizer.Attributes{User: u, Verb: verb, ResourceRequest: true, APIGroup: group, APIVersion: "v1",
		Resource: resource, Subresource: subresource, Namespace: namespace, Name: name}
}

func pathAttrs(u *user.Info, path string) authorizer.Attributes {
	return authorizer.Attributes{User: u, Verb: "get", Path: path}
}

func TestPolicy_FirstMatchingRuleChoosesTheLevel(t *testing.T) {
	alice := &user.Info{Name: "alice", Groups: []string{"devs", user.AllAuthenticated}}
	bob := &user.Info{Name: "bob", Groups: []string{user.AllAuthenticated}}
	for _, tc := range []struct {
		name  string
		rule  PolicyRule
		attrs authorizer.Attributes
		match bool
	}{
		{"an empty rule matches everything", PolicyRule{}, pathAttrs(nil, "/healthz"), true},
		{"users match by name", PolicyRule{Users: []string{"alice"}}, pathAttrs(alice, "/version"), true},
		{"users miss others", PolicyRule{Users: []string{"alice"}}, pathAttrs(bob, "/version"), false},
		{"users miss a request without a user", PolicyRule{Users: []string{"alice"}}, pathAttrs(nil, "/version"), false},
		{"userGroups match any group", PolicyRule{UserGroups: []string{"devs"}}, pathAttrs(alice, "/version"), true},
		{"userGroups miss users outside", PolicyRule{UserGroups: []string{"devs"}}, pathAttrs(bob, "/version"), false},
		{"verbs match", PolicyRule{Verbs: []string{"create", "delete"}}, resourceAttrs(bob, "delete", "", "pods", "", "ns", "p"), true},
		{"verbs miss", PolicyRule{Verbs: []string{"create"}}, resourceAttrs(bob, "get", "", "pods", "", "ns", "p"), false},
		{"a group with no resources matches all of it", PolicyRule{Resources: []GroupResources{{Group: "batch"}}}, resourceAttrs(bob, "get", "batch", "jobs", "", "ns", ""), true},
		{"the group must be the request's", PolicyRule{Resources: []GroupResources{{Group: ""}}}, resourceAttrs(bob, "get", "batch", "jobs", "", "ns", ""), false},
		{"a resource matches itself", PolicyRule{Resources: []GroupResources{{Resources: []string{"pods"}}}}, resourceAttrs(bob, "get", "", "pods", "", "ns", "p"), true},
		{"a resource does not match its subresources", PolicyRule{Resources: []GroupResources{{Resources: []string{"pods"}}}}, resourceAttrs(bob, "get", "", "pods", "log", "ns", "p"), false},
		{"resource/subresource matches", PolicyRule{Resources: []GroupResources{{Resources: []string{"pods/log"}}}}, resourceAttrs(bob, "get", "", "pods", "log", "ns", "p"), true},
		{"resource/* matches the resource and its subresources", PolicyRule{Resources: []GroupResources{{Resources: []string{"pods/*"}}}}, resourceAttrs(bob, "get", "", "pods", "status", "ns", "p"), true},
		{"resource/* matches the resource itself", PolicyRule{Resources: []GroupResources{{Resources: []string{"pods/*"}}}}, resourceAttrs(bob, "get", "", "pods", "", "ns", "p"), true},
		{"*/subresource matches that subresource of anything", PolicyRule{Resources: []GroupResources{{Resources: []string{"*/status"}}}}, resourceAttrs(bob, "update", "", "namespaces", "status", "", "ns"), true},
		{"*/subresource misses the resource", PolicyRule{Resources: []GroupResources{{Resources: []string{"*/status"}}}}, resourceAttrs(bob, "update", "", "namespaces", "", "", "ns"), false},
		{"* matches resources and subresources", PolicyRule{Resources: []GroupResources{{Resources: []string{"*"}}}}, resourceAttrs(bob, "get", "", "pods", "log", "ns", "p"), true},
		{"resourceNames match", PolicyRule{Resources: []GroupResources{{Resources: []string{"configmaps"}, ResourceNames: []string{"a"}}}}, resourceAttrs(bob, "get", "", "configmaps", "", "ns", "a"), true},
		{"resourceNames miss", PolicyRule{Resources: []GroupResources{{Resources: []string{"configmaps"}, ResourceNames: []string{"a"}}}}, resourceAttrs(bob, "list", "", "configmaps", "", "ns", ""), false},
		{"namespaces match", PolicyRule{Namespaces: []string{"kube-system"}}, resourceAttrs(bob, "get", "", "pods", "", "kube-system", "p"), true},
		{"namespaces miss", PolicyRule{Namespaces: []string{"kube-system"}}, resourceAttrs(bob, "get", "", "pods", "", "default", "p"), false},
		{"the empty namespace is the cluster scope", PolicyRule{Namespaces: []string{""}}, resourceAttrs(bob, "get", "", "namespaces", "", "", "default"), true},
		{"resource rules miss paths", PolicyRule{Namespaces: []string{""}}, pathAttrs(bob, "/healthz"), false},
		{"nonResourceURLs match the path", PolicyRule{NonResourceURLs: []string{"/version"}}, pathAttrs(bob, "/version"), true},
		{"nonResourceURLs match a prefix ending in *", PolicyRule{NonResourceURLs: []string{"/healthz*"}}, pathAttrs(bob, "/healthz/etcd"), true},
		{"nonResourceURLs miss other paths", PolicyRule{NonResourceURLs: []string{"/healthz*"}}, pathAttrs(bob, "/livez"), false},
		{"nonResourceURLs * matches every path", PolicyRule{NonResourceURLs: []string{"*"}}, pathAttrs(bob, "/openapi/v2"), true},
		{"nonResourceURLs miss resource requests", PolicyRule{NonResourceURLs: []string{"*"}}, resourceAttrs(bob, "get", "", "pods", "", "ns", "p"), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.rule.Level = LevelRequest
			p := &Policy{Rules: []PolicyRule{tc.rule, {Level: LevelMetadata}}}
			want := LevelMetadata
			if tc.match {
				want = LevelRequest
			}
			if got := p.Evaluate(tc.attrs).Level; got != want {
				t.Errorf("level %s, want %s", got, want)
			}
		})
	}
}

func TestPolicy_NoMatchIsNone(t *testing.T) {
	p := &Policy{Rules: []PolicyRule{{Level: LevelMetadata, Users: []string{"alice"}}}, OmitStages: []Stage{StagePanic}}
	got := p.Evaluate(pathAttrs(&user.Info{Name: "bob"}, "/version"))
	if got.Level != LevelNone || !reflect.DeepEqual(got.OmitStages, []Stage{StagePanic}) {
		t.Errorf("got %+v, want level None omitting the policy's stages", got)
	}
}

func TestPolicy_OmitStagesAndManagedFieldsCombinePolicyAndRule(t *testing.T) {
	no, yes := false, true
	p := &Policy{
		OmitStages:        []Stage{StageRequestReceived},
		OmitManagedFields: true,
		Rules: []PolicyRule{
			{Level: LevelRequest, Verbs: []string{"create"}, OmitStages: []Stage{StageResponseStarted, StageRequestReceived}, OmitManagedFields: &no},
			{Level: LevelRequest, Verbs: []string{"update"}, OmitManagedFields: &yes},
			{Level: LevelMetadata},
		},
	}
	for _, tc := range []struct {
		verb       string
		wantStages []Stage
		wantOmitMF bool
	}{
		{"create", []Stage{StageRequestReceived, StageResponseStarted}, false},
		{"update", []Stage{StageRequestReceived}, true},
		{"get", []Stage{StageRequestReceived}, true},
	} {
		got := p.Evaluate(resourceAttrs(nil, tc.verb, "", "configmaps", "", "ns", "a"))
		if !reflect.DeepEqual(got.OmitStages, tc.wantStages) || got.OmitManagedFields != tc.wantOmitMF {
			t.Errorf("%s: got %+v, want stages %v, omitManagedFields %v", tc.verb, got, tc.wantStages, tc.wantOmitMF)
		}
	}
}

func TestParsePolicy_ReadsYAMLAndJSON(t *testing.T) {
	yamlPolicy := `
apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
- level: RequestResponse
  resources:
  - group: ""
    resources: ["configmaps", "pods/log"]
    resourceNames: ["a"]
- level: None
  nonResourceURLs: ["/healthz*"]
`
	jsonPolicy := `{"apiVersion":"audit.k8s.io/v1","kind":"Policy","omitStages":["RequestReceived"],"rules":[
{"level":"RequestResponse","resources":[{"group":"","resources":["configmaps","pods/log"],"resourceNames":["a"]}]},
{"level":"None","nonResourceURLs":["/healthz*"]}]}`
	for _, data := range []string{yamlPolicy, jsonPolicy} {
		p, err := ParsePolicy([]byte(data))
		if err != nil {
			t.Fatal(err)
		}
		want := []PolicyRule{
			{Level: LevelRequestResponse, Resources: []GroupResources{{Resources: []string{"configmaps", "pods/log"}, ResourceNames: []string{"a"}}}},
			{Level: LevelNone, NonResourceURLs: []string{"/healthz*"}},
		}
		if !reflect.DeepEqual(p.Rules, want) || !reflect.DeepEqual(p.OmitStages, []Stage{StageRequestReceived}) {
			t.Errorf("parsed %+v", p)
		}
	}
}

func TestParsePolicy_IgnoresUnknownFieldsLikeKube(t *testing.T) {
	p, err := ParsePolicy([]byte("apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: Metadata\n  bogus: 1\n"))
	if err != nil || len(p.Rules) != 1 || p.Rules[0].Level != LevelMetadata {
		t.Errorf("got %+v, %v", p, err)
	}
}

func TestParsePolicy_RefusesInvalidPolicies(t *testing.T) {
	const head = "apiVersion: audit.k8s.io/v1\nkind: Policy\n"
	for _, tc := range []struct {
		name, policy, wantErr string
	}{
		{"another version", "apiVersion: audit.k8s.io/v1beta1\nkind: Policy\nrules:\n- level: None\n", "apiVersion"},
		{"no kind", "apiVersion: audit.k8s.io/v1\nrules:\n- level: None\n", "kind"},
		{"no rules", head + "rules: []\n", "at least one rule"},
		{"a rule without a level", head + "rules:\n- verbs: [get]\n", "rules[0].level: Required"},
		{"an unknown level", head + "rules:\n- level: Everything\n", "rules[0].level: Unsupported"},
		{"an unknown stage", head + "omitStages: [Done]\nrules:\n- level: None\n", "omitStages[0]"},
		{"an unknown stage in a rule", head + "rules:\n- level: None\n  omitStages: [Done]\n", "rules[0].omitStages[0]"},
		{"a URL without a slash", head + "rules:\n- level: None\n  nonResourceURLs: [healthz]\n", "must begin with a '/'"},
		{"a wildcard before the end", head + "rules:\n- level: None\n  nonResourceURLs: [\"/api/*/v1\"]\n", "must be the final character"},
		{"resources and URLs", head + "rules:\n- level: None\n  nonResourceURLs: [/version]\n  namespaces: [a]\n", "both regular resources and non-resource URLs"},
		{"resourceNames without resources", head + "rules:\n- level: None\n  resources:\n  - resourceNames: [a]\n", "requires at least one resource"},
		{"a group with a version", head + "rules:\n- level: None\n  resources:\n  - group: rbac.authorization.k8s.io/v1\n", "rules[0].resources.group"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParsePolicy([]byte(tc.policy))
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("error %v, want one containing %q", err, tc.wantErr)
			}
		})
	}
}
