package flowcontrol

import (
	"testing"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8stypes "k8s.io/apimachinery/pkg/types"

	"github.com/cronplane/cronplane/pkg/auth/user"
	"github.com/cronplane/cronplane/pkg/endpoints/request"
	"github.com/cronplane/cronplane/pkg/metrics"
)

func i32(v int32) *int32 { return &v }

func limitedLevel(name string, shares int32, lendable, borrowing *int32, queues int32) *flowcontrolv1.PriorityLevelConfiguration {
	resp := flowcontrolv1.LimitResponse{Type: flowcontrolv1.LimitResponseTypeReject}
	if queues > 0 {
		resp = flowcontrolv1.LimitResponse{Type: flowcontrolv1.LimitResponseTypeQueue,
			Queuing: &flowcontrolv1.QueuingConfiguration{Queues: queues, HandSize: 1, QueueLengthLimit: 10}}
	}
	return &flowcontrolv1.PriorityLevelConfiguration{ObjectMeta: metav1.ObjectMeta{Name: name, UID: k8stypes.UID("uid-pl-" + name)},
		Spec: flowcontrolv1.PriorityLevelConfigurationSpec{Type: flowcontrolv1.PriorityLevelEnablementLimited,
			Limited: &flowcontrolv1.LimitedPriorityLevelConfiguration{NominalConcurrencyShares: &shares, LendablePercent: lendable,
				BorrowingLimitPercent: borrowing, LimitResponse: resp}}}
}

func exemptLevel() *flowcontrolv1.PriorityLevelConfiguration {
	return &flowcontrolv1.PriorityLevelConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "exempt", UID: "uid-pl-exempt"},
		Spec: flowcontrolv1.PriorityLevelConfigurationSpec{Type: flowcontrolv1.PriorityLevelEnablementExempt}}
}

func flowSchema(name, level string, precedence int32, method flowcontrolv1.FlowDistinguisherMethodType, rules ...flowcontrolv1.PolicyRulesWithSubjects) *flowcontrolv1.FlowSchema {
	fs := &flowcontrolv1.FlowSchema{ObjectMeta: metav1.ObjectMeta{Name: name, UID: k8stypes.UID("uid-fs-" + name)},
		Spec: flowcontrolv1.FlowSchemaSpec{PriorityLevelConfiguration: flowcontrolv1.PriorityLevelConfigurationReference{Name: level},
			MatchingPrecedence: precedence, Rules: rules}}
	if method != "" {
		fs.Spec.DistinguisherMethod = &flowcontrolv1.FlowDistinguisherMethod{Type: method}
	}
	return fs
}

func group(name string) flowcontrolv1.Subject {
	return flowcontrolv1.Subject{Kind: flowcontrolv1.SubjectKindGroup, Group: &flowcontrolv1.GroupSubject{Name: name}}
}

func testConfig() ([]*flowcontrolv1.FlowSchema, []*flowcontrolv1.PriorityLevelConfiguration) {
	everything := []flowcontrolv1.ResourcePolicyRule{{Verbs: []string{"*"}, APIGroups: []string{"*"}, Resources: []string{"*"}, ClusterScope: true, Namespaces: []string{"*"}}}
	fss := []*flowcontrolv1.FlowSchema{
		flowSchema("exempt", "exempt", 1, "", flowcontrolv1.PolicyRulesWithSubjects{Subjects: []flowcontrolv1.Subject{group("system:masters")},
			ResourceRules: everything, NonResourceRules: []flowcontrolv1.NonResourcePolicyRule{{Verbs: []string{"*"}, NonResourceURLs: []string{"*"}}}}),
		flowSchema("probes", "exempt", 2, "", flowcontrolv1.PolicyRulesWithSubjects{Subjects: []flowcontrolv1.Subject{group("system:authenticated")},
			NonResourceRules: []flowcontrolv1.NonResourcePolicyRule{{Verbs: []string{"get"}, NonResourceURLs: []string{"/healthz", "/readyz/*"}}}}),
		flowSchema("leases", "high", 100, flowcontrolv1.FlowDistinguisherMethodByNamespaceType, flowcontrolv1.PolicyRulesWithSubjects{
			Subjects:      []flowcontrolv1.Subject{{Kind: flowcontrolv1.SubjectKindServiceAccount, ServiceAccount: &flowcontrolv1.ServiceAccountSubject{Namespace: "kube-system", Name: "*"}}},
			ResourceRules: []flowcontrolv1.ResourcePolicyRule{{Verbs: []string{"get", "update"}, APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, Namespaces: []string{"*"}}}}),
		flowSchema("status", "high", 100, flowcontrolv1.FlowDistinguisherMethodByUserType, flowcontrolv1.PolicyRulesWithSubjects{
			Subjects:      []flowcontrolv1.Subject{{Kind: flowcontrolv1.SubjectKindUser, User: &flowcontrolv1.UserSubject{Name: "bob"}}},
			ResourceRules: []flowcontrolv1.ResourcePolicyRule{{Verbs: []string{"*"}, APIGroups: []string{""}, Resources: []string{"pods/status"}, ClusterScope: true, Namespaces: []string{"*"}}}}),
		// Same precedence as "status": the name decides.
		flowSchema("anything-of-bob", "low", 100, flowcontrolv1.FlowDistinguisherMethodByUserType, flowcontrolv1.PolicyRulesWithSubjects{
			Subjects: []flowcontrolv1.Subject{{Kind: flowcontrolv1.SubjectKindUser, User: &flowcontrolv1.UserSubject{Name: "bob"}}}, ResourceRules: []flowcontrolv1.ResourcePolicyRule{{Verbs: []string{"list"}, APIGroups: []string{"*"}, Resources: []string{"*"}, Namespaces: []string{"team"}}}}),
		flowSchema("dangling", "missing", 50, "", flowcontrolv1.PolicyRulesWithSubjects{Subjects: []flowcontrolv1.Subject{group("system:authenticated")}, ResourceRules: everything}),
		flowSchema("catch-all", "low", 10000, flowcontrolv1.FlowDistinguisherMethodByUserType, flowcontrolv1.PolicyRulesWithSubjects{
			Subjects: []flowcontrolv1.Subject{group("system:authenticated"), group("system:unauthenticated")}, ResourceRules: everything,
			NonResourceRules: []flowcontrolv1.NonResourcePolicyRule{{Verbs: []string{"*"}, NonResourceURLs: []string{"*"}}}}),
	}
	pls := []*flowcontrolv1.PriorityLevelConfiguration{exemptLevel(), limitedLevel("high", 30, nil, nil, 4), limitedLevel("low", 10, nil, nil, 4)}
	return fss, pls
}

func resourceInfo(verb, group, resource, sub, namespace string) *request.RequestInfo {
	return &request.RequestInfo{IsResourceRequest: true, Verb: verb, APIGroup: group, APIVersion: "v1", Resource: resource, Subresource: sub, Namespace: namespace}
}

func TestClassify_PicksTheFirstMatchingSchemaAndItsFlow(t *testing.T) {
	c := New(600, metrics.NewRegistry(), nil)
	c.SetConfig(testConfig())
	authed := func(name string, groups ...string) *user.Info {
		return &user.Info{Name: name, Groups: append(groups, "system:authenticated")}
	}
	for _, tc := range []struct {
		name                string
		user                *user.Info
		info                *request.RequestInfo
		schema, level, flow string
	}{
		{"masters are exempt", authed("admin", "system:masters"), resourceInfo("delete", "apps", "deployments", "", "x"), "exempt", "exempt", ""},
		{"health check", authed("alice"), &request.RequestInfo{Verb: "get", Path: "/healthz"}, "probes", "exempt", ""},
		{"below a plain URL rule", authed("alice"), &request.RequestInfo{Verb: "get", Path: "/healthz/etcd"}, "probes", "exempt", ""},
		{"below a /* rule", authed("alice"), &request.RequestInfo{Verb: "get", Path: "/readyz/ping"}, "probes", "exempt", ""},
		{"a /* rule is not its parent", authed("alice"), &request.RequestInfo{Verb: "get", Path: "/readyz"}, "catch-all", "low", "alice"},
		{"non-resource verb", authed("alice"), &request.RequestInfo{Verb: "post", Path: "/healthz"}, "catch-all", "low", "alice"},
		{"service account by namespace", authed("system:serviceaccount:kube-system:ctrl"), resourceInfo("update", "coordination.k8s.io", "leases", "", "kube-system"), "leases", "high", "kube-system"},
		{"service account of another namespace", authed("system:serviceaccount:default:ctrl"), resourceInfo("update", "coordination.k8s.io", "leases", "", "kube-system"), "catch-all", "low", "system:serviceaccount:default:ctrl"},
		{"verb not in the rule", authed("system:serviceaccount:kube-system:ctrl"), resourceInfo("delete", "coordination.k8s.io", "leases", "", "kube-system"), "catch-all", "low", "system:serviceaccount:kube-system:ctrl"},
		{"subresource named with its resource", authed("bob"), resourceInfo("patch", "", "pods", "status", "team"), "status", "high", "bob"},
		{"the resource alone is not the subresource", authed("bob"), resourceInfo("patch", "", "pods", "", "team"), "catch-all", "low", "bob"},
		{"equal precedence: by name", authed("bob"), resourceInfo("list", "", "pods", "status", "team"), "anything-of-bob", "low", "bob"},
		{"namespaced rule does not take cluster scope", authed("bob"), resourceInfo("list", "", "nodes", "", ""), "catch-all", "low", "bob"},
		{"unauthenticated", &user.Info{Name: "system:anonymous", Groups: []string{"system:unauthenticated"}}, resourceInfo("get", "", "pods", "", "a"), "catch-all", "low", "system:anonymous"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cl, ok := c.Classify(Digest{User: tc.user, Info: tc.info})
			if !ok {
				t.Fatal("not classified")
			}
			if cl.FlowSchema.Name != tc.schema || cl.PriorityLevel.Name != tc.level || cl.Distinguisher != tc.flow {
				t.Fatalf("got %s/%s flow %q, want %s/%s flow %q", cl.FlowSchema.Name, cl.PriorityLevel.Name, cl.Distinguisher, tc.schema, tc.level, tc.flow)
			}
		})
	}
}

// A request no schema matches is not classified (kube always has its
// catch-all schema).
func TestClassify_NoMatchIsNotClassified(t *testing.T) {
	c := New(600, metrics.NewRegistry(), nil)
	fss, pls := testConfig()
	c.SetConfig(fss[:1], pls)
	if _, ok := c.Classify(Digest{User: &user.Info{Name: "alice"}, Info: resourceInfo("get", "", "pods", "", "a")}); ok {
		t.Fatal("classified")
	}
}

// Classification remembers past requests by their sender and target:
// a repeated request lands where the first did, one differing in any of
// them is classified anew, and a new configuration forgets them all.
func TestClassify_RepeatedRequestsFollowSenderTargetAndConfiguration(t *testing.T) {
	c := New(600, metrics.NewRegistry(), nil)
	fss, pls := testConfig()
	c.SetConfig(fss, pls)
	bob := &user.Info{Name: "bob", Groups: []string{"system:authenticated"}}
	schemaOf := func(u *user.Info, info *request.RequestInfo) string {
		t.Helper()
		cl, ok := c.Classify(Digest{User: u, Info: info})
		if !ok {
			t.Fatal("not classified")
		}
		return cl.FlowSchema.Name
	}
	listInTeam := resourceInfo("list", "", "pods", "", "team")
	for i := 0; i < 2; i++ {
		if got := schemaOf(bob, listInTeam); got != "anything-of-bob" {
			t.Fatalf("bob's list, time %d: %s, want anything-of-bob", i+1, got)
		}
	}
	if got := schemaOf(bob, resourceInfo("list", "", "pods", "", "other")); got != "catch-all" {
		t.Fatalf("bob's list in another namespace: %s, want catch-all", got)
	}
	// The sender's groups are read anew even when its slice is the one
	// classified before.
	bob.Groups[0] = "system:masters"
	if got := schemaOf(bob, listInTeam); got != "exempt" {
		t.Fatalf("bob among the masters: %s, want exempt", got)
	}
	bob.Groups[0] = "system:authenticated"
	var without []*flowcontrolv1.FlowSchema
	for _, fs := range fss {
		if fs.Name != "anything-of-bob" {
			without = append(without, fs)
		}
	}
	c.SetConfig(without, pls)
	if got := schemaOf(bob, listInTeam); got != "catch-all" {
		t.Fatalf("bob's list once its schema is gone: %s, want catch-all", got)
	}
}
