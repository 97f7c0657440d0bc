package apiserver_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The bootstrap roles of the resources cronplane serves have kube's rules,
// as kube-apiserver v1.29 answers them (the aggregated view and edit roles
// are checked on their services and endpoints rules).
func TestBootstrapPolicy_RolesAndBindingsAsKube(t *testing.T) {
	ctx := context.Background()
	roles := []struct{ name, rules string }{
		{"system:auth-delegator", `[{"verbs":["create"],"apiGroups":["authentication.k8s.io"],"resources":["tokenreviews"]},{"verbs":["create"],"apiGroups":["authorization.k8s.io"],"resources":["subjectaccessreviews"]}]`},
		{"system:service-account-issuer-discovery", `[{"verbs":["get"],"nonResourceURLs":["/.well-known/openid-configuration","/.well-known/openid-configuration/","/openid/v1/jwks","/openid/v1/jwks/"]}]`},
		{"system:kube-dns", `[{"verbs":["list","watch"],"apiGroups":[""],"resources":["endpoints","services"]}]`},
		{"system:kube-aggregator", `[{"verbs":["get","list","watch"],"apiGroups":[""],"resources":["endpoints","services"]}]`},
		{"system:kube-scheduler", `[{"verbs":["create","patch","update"],"apiGroups":["","events.k8s.io"],"resources":["events"]},{"verbs":["create"],"apiGroups":["coordination.k8s.io"],"resources":["leases"]},{"verbs":["get","update"],"apiGroups":["coordination.k8s.io"],"resources":["leases"],"resourceNames":["kube-scheduler"]},{"verbs":["get","list","watch"],"apiGroups":[""],"resources":["nodes"]},{"verbs":["delete","get","list","watch"],"apiGroups":[""],"resources":["pods"]},{"verbs":["create"],"apiGroups":[""],"resources":["bindings","pods/binding"]},{"verbs":["patch","update"],"apiGroups":[""],"resources":["pods/status"]},{"verbs":["get","list","watch"],"apiGroups":[""],"resources":["replicationcontrollers","services"]},{"verbs":["get","list","watch"],"apiGroups":["apps","extensions"],"resources":["replicasets"]},{"verbs":["get","list","watch"],"apiGroups":["apps"],"resources":["statefulsets"]},{"verbs":["get","list","watch"],"apiGroups":["policy"],"resources":["poddisruptionbudgets"]},{"verbs":["get","list","watch"],"apiGroups":[""],"resources":["persistentvolumeclaims","persistentvolumes"]},{"verbs":["create"],"apiGroups":["authentication.k8s.io"],"resources":["tokenreviews"]},{"verbs":["create"],"apiGroups":["authorization.k8s.io"],"resources":["subjectaccessreviews"]},{"verbs":["get","list","watch"],"apiGroups":["storage.k8s.io"],"resources":["csinodes"]},{"verbs":["get","list","watch"],"apiGroups":[""],"resources":["namespaces"]},{"verbs":["get","list","watch"],"apiGroups":["storage.k8s.io"],"resources":["csidrivers"]},{"verbs":["get","list","watch"],"apiGroups":["storage.k8s.io"],"resources":["csistoragecapacities"]}]`},
		{"system:controller:node-controller", `[{"verbs":["delete","get","list","patch","update"],"apiGroups":[""],"resources":["nodes"]},{"verbs":["patch","update"],"apiGroups":[""],"resources":["nodes/status"]},{"verbs":["patch","update"],"apiGroups":[""],"resources":["pods/status"]},{"verbs":["delete","list"],"apiGroups":[""],"resources":["pods"]},{"verbs":["create","get","list","update"],"apiGroups":["networking.k8s.io"],"resources":["clustercidrs"]},{"verbs":["create","patch","update"],"apiGroups":["","events.k8s.io"],"resources":["events"]},{"verbs":["get"],"apiGroups":[""],"resources":["pods"]}]`},
		{"system:node", `[{"verbs":["create"],"apiGroups":["authentication.k8s.io"],"resources":["tokenreviews"]},{"verbs":["create"],"apiGroups":["authorization.k8s.io"],"resources":["localsubjectaccessreviews","subjectaccessreviews"]},{"verbs":["get","list","watch"],"apiGroups":[""],"resources":["services"]},{"verbs":["create","get","list","watch"],"apiGroups":[""],"resources":["nodes"]},{"verbs":["patch","update"],"apiGroups":[""],"resources":["nodes/status"]},{"verbs":["patch","update"],"apiGroups":[""],"resources":["nodes"]},{"verbs":["create","patch","update"],"apiGroups":[""],"resources":["events"]},{"verbs":["get","list","watch"],"apiGroups":[""],"resources":["pods"]},{"verbs":["create","delete"],"apiGroups":[""],"resources":["pods"]},{"verbs":["patch","update"],"apiGroups":[""],"resources":["pods/status"]},{"verbs":["create"],"apiGroups":[""],"resources":["pods/eviction"]},{"verbs":["get","list","watch"],"apiGroups":[""],"resources":["configmaps","secrets"]},{"verbs":["get"],"apiGroups":[""],"resources":["persistentvolumeclaims","persistentvolumes"]},{"verbs":["get"],"apiGroups":[""],"resources":["endpoints"]},{"verbs":["create","get","list","watch"],"apiGroups":["certificates.k8s.io"],"resources":["certificatesigningrequests"]},{"verbs":["create","delete","get","patch","update"],"apiGroups":["coordination.k8s.io"],"resources":["leases"]},{"verbs":["get"],"apiGroups":["storage.k8s.io"],"resources":["volumeattachments"]},{"verbs":["create"],"apiGroups":[""],"resources":["serviceaccounts/token"]},{"verbs":["get","patch","update"],"apiGroups":[""],"resources":["persistentvolumeclaims/status"]},{"verbs":["get","list","watch"],"apiGroups":["storage.k8s.io"],"resources":["csidrivers"]},{"verbs":["create","delete","get","patch","update"],"apiGroups":["storage.k8s.io"],"resources":["csinodes"]},{"verbs":["get","list","watch"],"apiGroups":["node.k8s.io"],"resources":["runtimeclasses"]}]`},
		{"system:controller:pod-garbage-collector", `[{"verbs":["delete","list","watch"],"apiGroups":[""],"resources":["pods"]},{"verbs":["get","list"],"apiGroups":[""],"resources":["nodes"]},{"verbs":["patch"],"apiGroups":[""],"resources":["pods/status"]}]`},
		{"system:controller:ttl-after-finished-controller", `[{"verbs":["delete","get","list","watch"],"apiGroups":["batch"],"resources":["jobs"]},{"verbs":["create","patch","update"],"apiGroups":["","events.k8s.io"],"resources":["events"]}]`},
	}
	for _, tc := range roles {
		role, err := srv.Client.RbacV1().ClusterRoles().Get(ctx, tc.name, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		got, _ := json.Marshal(role.Rules)
		if string(got) != tc.rules || role.Labels["kubernetes.io/bootstrapping"] != "rbac-defaults" {
			t.Errorf("%s: labels %v rules\n%s\nwant\n%s", tc.name, role.Labels, got, tc.rules)
		}
	}
	bindings := []struct{ name, subjects string }{
		{"system:service-account-issuer-discovery", `[{"kind":"Group","apiGroup":"rbac.authorization.k8s.io","name":"system:serviceaccounts"}]`},
		{"system:kube-dns", `[{"kind":"ServiceAccount","name":"kube-dns","namespace":"kube-system"}]`},
		{"system:kube-scheduler", `[{"kind":"User","apiGroup":"rbac.authorization.k8s.io","name":"system:kube-scheduler"}]`},
		{"system:controller:node-controller", `[{"kind":"ServiceAccount","name":"node-controller","namespace":"kube-system"}]`},
		{"system:controller:pod-garbage-collector", `[{"kind":"ServiceAccount","name":"pod-garbage-collector","namespace":"kube-system"}]`},
		{"system:node", `null`},
		{"system:node-proxier", `[{"kind":"User","apiGroup":"rbac.authorization.k8s.io","name":"system:kube-proxy"}]`},
		{"system:controller:ttl-after-finished-controller", `[{"kind":"ServiceAccount","name":"ttl-after-finished-controller","namespace":"kube-system"}]`},
	}
	for _, tc := range bindings {
		b, err := srv.Client.RbacV1().ClusterRoleBindings().Get(ctx, tc.name, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		got, _ := json.Marshal(b.Subjects)
		if string(got) != tc.subjects || b.RoleRef.Name != tc.name {
			t.Errorf("%s: subjects %s roleRef %v, want %s", tc.name, got, b.RoleRef, tc.subjects)
		}
	}
	for _, tc := range []struct{ role, rule string }{
		{"system:aggregate-to-view", `{"verbs":["get","list","watch"],"apiGroups":[""],"resources":["configmaps","endpoints","persistentvolumeclaims","persistentvolumeclaims/status","pods","replicationcontrollers","replicationcontrollers/scale","serviceaccounts","services","services/status"]}`},
		{"system:aggregate-to-view", `{"verbs":["get","list","watch"],"apiGroups":[""],"resources":["bindings","events","limitranges","namespaces/status","pods/log","pods/status","replicationcontrollers/status","resourcequotas","resourcequotas/status"]}`},
		{"system:aggregate-to-edit", `{"verbs":["create","delete","deletecollection","patch","update"],"apiGroups":[""],"resources":["configmaps","events","persistentvolumeclaims","replicationcontrollers","replicationcontrollers/scale","secrets","serviceaccounts","services","services/proxy"]}`},
		{"system:aggregate-to-edit", `{"verbs":["create","delete","deletecollection","patch","update"],"apiGroups":[""],"resources":["pods","pods/attach","pods/exec","pods/portforward","pods/proxy"]}`},
		{"system:aggregate-to-edit", `{"verbs":["create"],"apiGroups":[""],"resources":["pods/eviction"]}`},
	} {
		role, err := srv.Client.RbacV1().ClusterRoles().Get(ctx, tc.role, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		found := false
		for _, r := range role.Rules {
			got, _ := json.Marshal(r)
			found = found || string(got) == tc.rule
		}
		if !found {
			t.Errorf("%s lacks %s: %+v", tc.role, tc.rule, role.Rules)
		}
	}
}

// A service account bound to system:auth-delegator may review tokens and
// access, as a delegating server's needs.
func TestBootstrapPolicy_AuthDelegatorMayReview(t *testing.T) {
	ns := "delegator"
	mustKubectl(t, "create", "namespace", ns)
	defer mustKubectl(t, "delete", "namespace", ns, "--wait=false")
	mustKubectl(t, "create", "clusterrolebinding", "delegator-reviews", "--clusterrole=system:auth-delegator", "--serviceaccount="+ns+":server")
	defer mustKubectl(t, "delete", "clusterrolebinding", "delegator-reviews")
	as := "--as=system:serviceaccount:" + ns + ":server"
	for _, resource := range []string{"tokenreviews.authentication.k8s.io", "subjectaccessreviews.authorization.k8s.io"} {
		// kubectl warns first that the resource is cluster-scoped.
		if out := mustKubectl(t, "auth", "can-i", "create", resource, as); !strings.HasSuffix(strings.TrimSpace(out), "\nyes") {
			t.Errorf("can-i create %s: %s", resource, out)
		}
	}
	if out, _ := kubectl(t, "auth", "can-i", "list", "secrets", as, "-n", ns); strings.TrimSpace(out) != "no" {
		t.Errorf("can-i list secrets: %s", out)
	}
}
