// Package bootstrap owns the default RBAC policy the apiserver keeps in
// place: kube's bootstrap ClusterRoles and ClusterRoleBindings (cluster-
// admin, admin, edit, view, the system: roles for discovery, basic users,
// public information, delegated authentication and authorization, service
// account issuer discovery, DNS and aggregation, the controller-manager
// and each of its controllers), written for the resources cronplane
// serves, and their
// reconciliation at every start: missing objects are created, and
// existing ones gain what they lack unless annotated
// rbac.authorization.kubernetes.io/autoupdate=false.
package bootstrap

import (
	"slices"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/cronplane/cronplane/pkg/auth/serviceaccount"
	"github.com/cronplane/cronplane/pkg/auth/user"
)

// Well-known names of the policy.
const (
	// AutoUpdateAnnotation set to "false" keeps reconciliation off an
	// object.
	AutoUpdateAnnotation = "rbac.authorization.kubernetes.io/autoupdate"
	bootstrappingLabel   = "kubernetes.io/bootstrapping"
	aggregateToAdmin     = "rbac.authorization.k8s.io/aggregate-to-admin"
	aggregateToEdit      = "rbac.authorization.k8s.io/aggregate-to-edit"
	aggregateToView      = "rbac.authorization.k8s.io/aggregate-to-view"
	// ControllerManagerUser is the controller-manager's own identity.
	ControllerManagerUser = "system:kube-controller-manager"
	// SchedulerUser is kube-scheduler's identity, and the name of its
	// role and binding.
	SchedulerUser = "system:kube-scheduler"
	// SchedulerBinding grants the scheduler's role to cronplane's
	// scheduler, which runs in the controller-manager: to its service
	// account under --use-service-account-credentials, else to the
	// manager's own identity.
	SchedulerBinding = "system:controller:scheduler"
	// ControllerRolePrefix starts the name of each controller's role, and
	// of the binding of that role to the controller's service account in
	// kube-system.
	ControllerRolePrefix = "system:controller:"
	// NodeRole is the role of what kubelets do, which kube binds to no
	// one: the Node authorizer grants it to each node, narrowed to the
	// objects of its own pods.
	NodeRole = "system:node"
	// KubeProxyUser is kube-proxy's identity.
	KubeProxyUser = "system:kube-proxy"
)

// NodeRules are what a kubelet may do, as kube's system:node role lists
// it (with the alpha features off). The Node authorizer and the
// NodeRestriction admission plugin narrow these to the node's own
// objects.
func NodeRules() []rbacv1.PolicyRule {
	return []rbacv1.PolicyRule{
		rule("authentication.k8s.io").resources("tokenreviews").verbs("create"),
		rule("authorization.k8s.io").resources("subjectaccessreviews", "localsubjectaccessreviews").verbs("create"),
		rule("").resources("services").verbs(readVerbs...),
		rule("").resources("nodes").verbs("create", "get", "list", "watch"),
		rule("").resources("nodes/status").verbs("patch", "update"),
		rule("").resources("nodes").verbs("patch", "update"),
		rule("").resources("events").verbs("create", "patch", "update"),
		rule("").resources("pods").verbs(readVerbs...),
		rule("").resources("pods").verbs("create", "delete"),
		rule("").resources("pods/status").verbs("patch", "update"),
		rule("").resources("pods/eviction").verbs("create"),
		rule("").resources("secrets", "configmaps").verbs(readVerbs...),
		rule("").resources("persistentvolumeclaims", "persistentvolumes").verbs("get"),
		rule("").resources("endpoints").verbs("get"),
		rule("certificates.k8s.io").resources("certificatesigningrequests").verbs("create", "get", "list", "watch"),
		rule("coordination.k8s.io").resources("leases").verbs("create", "delete", "get", "patch", "update"),
		rule("storage.k8s.io").resources("volumeattachments").verbs("get"),
		rule("").resources("serviceaccounts/token").verbs("create"),
		rule("").resources("persistentvolumeclaims/status").verbs("get", "patch", "update"),
		rule("storage.k8s.io").resources("csidrivers").verbs(readVerbs...),
		rule("storage.k8s.io").resources("csinodes").verbs("create", "delete", "get", "patch", "update"),
		rule("node.k8s.io").resources("runtimeclasses").verbs(readVerbs...),
	}
}

// Controllers are the service accounts (in kube-system) of the
// controllers that run with their own credentials, with what each needs.
var Controllers = map[string][]rbacv1.PolicyRule{
	"cronjob-controller": {
		rule("batch").resources("cronjobs").verbs("get", "list", "update", "watch"),
		rule("batch").resources("jobs").verbs("create", "delete", "get", "list", "patch", "update", "watch"),
		rule("batch").resources("cronjobs/status").verbs("update"),
		rule("batch").resources("cronjobs/finalizers").verbs("update"),
		eventsRule,
	},
	"generic-garbage-collector": {
		rule("*").resources("*").verbs("delete", "get", "list", "patch", "update", "watch"),
		eventsRule,
	},
	"job-controller": {
		rule("batch").resources("jobs").verbs("get", "list", "patch", "update", "watch"),
		rule("batch").resources("jobs/status").verbs("update"),
		rule("batch").resources("jobs/finalizers").verbs("update"),
		rule("").resources("pods").verbs("create", "delete", "list", "patch", "watch"),
		eventsRule,
	},
	"namespace-controller": {
		rule("").resources("namespaces").verbs("delete", "get", "list", "watch"),
		rule("").resources("namespaces/finalize", "namespaces/status").verbs("update"),
		rule("*").resources("*").verbs("delete", "deletecollection", "get", "list"),
	},
	"node-controller": {
		rule("").resources("nodes").verbs("delete", "get", "list", "patch", "update"),
		rule("").resources("nodes/status").verbs("patch", "update"),
		rule("").resources("pods/status").verbs("patch", "update"),
		rule("").resources("pods").verbs("delete", "list"),
		rule("networking.k8s.io").resources("clustercidrs").verbs("create", "get", "list", "update"),
		eventsRule,
		rule("").resources("pods").verbs("get"),
	},
	"pod-garbage-collector": {
		rule("").resources("pods").verbs("delete", "list", "watch"),
		rule("").resources("nodes").verbs("get", "list"),
		rule("").resources("pods/status").verbs("patch"),
	},
	"root-ca-cert-publisher": {
		rule("").resources("configmaps").verbs("create", "update"),
		eventsRule,
	},
	"service-account-controller": {
		rule("").resources("serviceaccounts").verbs("create"),
		eventsRule,
	},
	"ttl-after-finished-controller": {
		rule("batch").resources("jobs").verbs("delete", "get", "list", "watch"),
		eventsRule,
	},
	"clusterrole-aggregation-controller": {
		rule("rbac.authorization.k8s.io").resources("clusterroles").verbs("escalate", "get", "list", "patch", "update", "watch"),
	},
}

var eventsRule = rule("", "events.k8s.io").resources("events").verbs("create", "patch", "update")

var (
	readVerbs  = []string{"get", "list", "watch"}
	writeVerbs = []string{"create", "delete", "deletecollection", "patch", "update"}
	allVerbs   = []string{"create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"}
)

// ClusterRoles are the default cluster roles.
func ClusterRoles() []*rbacv1.ClusterRole {
	roles := []*rbacv1.ClusterRole{
		clusterRole("cluster-admin", nil,
			rule("*").resources("*").verbs("*"),
			rbacv1.PolicyRule{NonResourceURLs: []string{"*"}, Verbs: []string{"*"}}),
		aggregated("admin", aggregateToAdmin, nil),
		aggregated("edit", aggregateToEdit, map[string]string{aggregateToAdmin: "true"}),
		aggregated("view", aggregateToView, map[string]string{aggregateToEdit: "true"}),
		clusterRole("system:aggregate-to-admin", map[string]string{aggregateToAdmin: "true"},
			rule("authorization.k8s.io").resources("localsubjectaccessreviews").verbs("create"),
			rule("rbac.authorization.k8s.io").resources("rolebindings", "roles").verbs(allVerbs...)),
		clusterRole("system:aggregate-to-edit", map[string]string{aggregateToEdit: "true"},
			rule("").resources("pods/attach", "pods/proxy", "pods/exec", "pods/portforward", "secrets", "services/proxy").verbs(readVerbs...),
			rule("").resources("serviceaccounts").verbs("impersonate"),
			rule("").resources("pods", "pods/attach", "pods/proxy", "pods/exec", "pods/portforward").verbs(writeVerbs...),
			rule("").resources("pods/eviction").verbs("create"),
			rule("").resources("replicationcontrollers", "replicationcontrollers/scale", "serviceaccounts",
				"services", "services/proxy", "persistentvolumeclaims", "configmaps", "secrets", "events").verbs(writeVerbs...),
			rule("").resources("serviceaccounts/token").verbs("create"),
			rule("apps").resources("statefulsets", "statefulsets/scale", "daemonsets",
				"deployments", "deployments/scale", "deployments/rollback", "replicasets", "replicasets/scale").verbs(writeVerbs...),
			rule("autoscaling").resources("horizontalpodautoscalers").verbs(writeVerbs...),
			rule("batch").resources("jobs", "cronjobs").verbs(writeVerbs...),
			rule("extensions").resources("daemonsets", "deployments", "deployments/scale", "deployments/rollback", "ingresses",
				"replicasets", "replicasets/scale", "replicationcontrollers/scale", "networkpolicies").verbs(writeVerbs...),
			rule("policy").resources("poddisruptionbudgets").verbs(writeVerbs...),
			rule("networking.k8s.io").resources("networkpolicies", "ingresses").verbs(writeVerbs...),
			rule("coordination.k8s.io").resources("leases").verbs(allVerbs...)),
		clusterRole("system:aggregate-to-view", map[string]string{aggregateToView: "true"},
			rule("").resources("pods", "replicationcontrollers", "replicationcontrollers/scale", "serviceaccounts",
				"services", "services/status", "endpoints", "persistentvolumeclaims", "persistentvolumeclaims/status", "configmaps").verbs(readVerbs...),
			rule("").resources("limitranges", "resourcequotas", "bindings", "events", "pods/status", "resourcequotas/status",
				"namespaces/status", "replicationcontrollers/status", "pods/log").verbs(readVerbs...),
			rule("").resources("namespaces").verbs(readVerbs...),
			rule("discovery.k8s.io").resources("endpointslices").verbs(readVerbs...),
			rule("apps").resources("controllerrevisions", "statefulsets", "statefulsets/status", "statefulsets/scale",
				"daemonsets", "daemonsets/status", "deployments", "deployments/status", "deployments/scale",
				"replicasets", "replicasets/status", "replicasets/scale").verbs(readVerbs...),
			rule("autoscaling").resources("horizontalpodautoscalers", "horizontalpodautoscalers/status").verbs(readVerbs...),
			rule("batch").resources("jobs", "cronjobs", "cronjobs/status", "jobs/status").verbs(readVerbs...),
			rule("extensions").resources("daemonsets", "daemonsets/status", "deployments", "deployments/scale", "deployments/status",
				"ingresses", "ingresses/status", "replicasets", "replicasets/scale", "replicasets/status", "replicationcontrollers/scale",
				"networkpolicies").verbs(readVerbs...),
			rule("policy").resources("poddisruptionbudgets", "poddisruptionbudgets/status").verbs(readVerbs...),
			rule("networking.k8s.io").resources("networkpolicies", "ingresses", "ingresses/status").verbs(readVerbs...)),
		clusterRole("system:auth-delegator", nil,
			rule("authentication.k8s.io").resources("tokenreviews").verbs("create"),
			rule("authorization.k8s.io").resources("subjectaccessreviews").verbs("create")),
		clusterRole("system:basic-user", nil,
			rule("authorization.k8s.io").resources("selfsubjectaccessreviews", "selfsubjectrulesreviews").verbs("create"),
			rule("authentication.k8s.io").resources("selfsubjectreviews").verbs("create")),
		clusterRole("system:discovery", nil,
			rbacv1.PolicyRule{NonResourceURLs: []string{"/api", "/api/*", "/apis", "/apis/*", "/healthz", "/livez", "/openapi", "/openapi/*", "/readyz", "/version", "/version/"}, Verbs: []string{"get"}}),
		clusterRole("system:heapster", nil,
			rule("").resources("events", "pods", "nodes", "namespaces").verbs(readVerbs...),
			rule("extensions").resources("deployments").verbs(readVerbs...)),
		clusterRole(NodeRole, nil, NodeRules()...),
		clusterRole("system:node-problem-detector", nil,
			rule("").resources("nodes").verbs("get"),
			rule("").resources("nodes/status").verbs("patch"),
			eventsRule),
		clusterRole("system:kubelet-api-admin", nil,
			rule("").resources("nodes").verbs(readVerbs...),
			rule("").resources("nodes").verbs("proxy"),
			rule("").resources("nodes/proxy", "nodes/metrics", "nodes/stats", "nodes/log").verbs("*")),
		clusterRole("system:node-proxier", nil,
			rule("").resources("services", "endpoints").verbs("list", "watch"),
			rule("").resources("nodes").verbs(readVerbs...),
			eventsRule,
			rule("discovery.k8s.io").resources("endpointslices").verbs("list", "watch")),
		clusterRole("system:kube-aggregator", nil,
			rule("").resources("endpoints", "services").verbs(readVerbs...)),
		clusterRole("system:kube-dns", nil,
			rule("").resources("endpoints", "services").verbs("list", "watch")),
		clusterRole("system:monitoring", nil,
			rbacv1.PolicyRule{NonResourceURLs: []string{"/healthz", "/healthz/*", "/livez", "/livez/*", "/metrics", "/metrics/slis", "/readyz", "/readyz/*"}, Verbs: []string{"get"}}),
		clusterRole("system:public-info-viewer", nil,
			rbacv1.PolicyRule{NonResourceURLs: []string{"/healthz", "/livez", "/readyz", "/version", "/version/"}, Verbs: []string{"get"}}),
		clusterRole("system:service-account-issuer-discovery", nil,
			rbacv1.PolicyRule{NonResourceURLs: []string{"/.well-known/openid-configuration", "/.well-known/openid-configuration/", "/openid/v1/jwks", "/openid/v1/jwks/"}, Verbs: []string{"get"}}),
		clusterRole(ControllerManagerUser, nil,
			eventsRule,
			rule("coordination.k8s.io").resources("leases").verbs("create"),
			rule("coordination.k8s.io").resources("leases").names("kube-controller-manager").verbs("get", "update"),
			rule("").resources("secrets", "serviceaccounts").verbs("create"),
			rule("").resources("secrets").verbs("delete"),
			rule("").resources("configmaps", "namespaces", "secrets", "serviceaccounts").verbs("get"),
			rule("").resources("secrets", "serviceaccounts").verbs("update"),
			rule("authentication.k8s.io").resources("tokenreviews").verbs("create"),
			rule("authorization.k8s.io").resources("subjectaccessreviews").verbs("create"),
			rule("*").resources("*").verbs("list", "watch"),
			rule("").resources("serviceaccounts/token").verbs("create")),
		clusterRole(SchedulerUser, nil,
			eventsRule,
			rule("coordination.k8s.io").resources("leases").verbs("create"),
			rule("coordination.k8s.io").resources("leases").names("kube-scheduler").verbs("get", "update"),
			rule("").resources("nodes").verbs(readVerbs...),
			rule("").resources("pods").verbs("delete", "get", "list", "watch"),
			rule("").resources("bindings", "pods/binding").verbs("create"),
			rule("").resources("pods/status").verbs("patch", "update"),
			rule("").resources("replicationcontrollers", "services").verbs(readVerbs...),
			rule("apps", "extensions").resources("replicasets").verbs(readVerbs...),
			rule("apps").resources("statefulsets").verbs(readVerbs...),
			rule("policy").resources("poddisruptionbudgets").verbs(readVerbs...),
			rule("").resources("persistentvolumeclaims", "persistentvolumes").verbs(readVerbs...),
			rule("authentication.k8s.io").resources("tokenreviews").verbs("create"),
			rule("authorization.k8s.io").resources("subjectaccessreviews").verbs("create"),
			rule("storage.k8s.io").resources("csinodes").verbs(readVerbs...),
			rule("").resources("namespaces").verbs(readVerbs...),
			rule("storage.k8s.io").resources("csidrivers").verbs(readVerbs...),
			rule("storage.k8s.io").resources("csistoragecapacities").verbs(readVerbs...)),
	}
	for _, name := range controllerNames() {
		roles = append(roles, clusterRole(ControllerRolePrefix+name, nil, Controllers[name]...))
	}
	return roles
}

// ClusterRoleBindings are the default cluster role bindings.
func ClusterRoleBindings() []*rbacv1.ClusterRoleBinding {
	group := func(name string) rbacv1.Subject {
		return rbacv1.Subject{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: name}
	}
	bindings := []*rbacv1.ClusterRoleBinding{
		binding("cluster-admin", group(user.SystemPrivileged)),
		binding("system:basic-user", group(user.AllAuthenticated)),
		binding("system:discovery", group(user.AllAuthenticated)),
		binding("system:kube-dns", rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Name: "kube-dns", Namespace: "kube-system"}),
		binding("system:monitoring", group("system:monitoring")),
		binding("system:public-info-viewer", group(user.AllAuthenticated), group(user.AllUnauthenticated)),
		binding("system:service-account-issuer-discovery", group(serviceaccount.AllServiceAccountsGroup)),
		binding(ControllerManagerUser, rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: ControllerManagerUser}),
		binding(SchedulerUser, rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: SchedulerUser}),
		binding("system:node-proxier", rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: KubeProxyUser}),
		// Kube keeps this binding without subjects: nodes are authorized
		// by the Node authorizer, not through RBAC.
		binding(NodeRole),
	}
	scheduler := binding(SchedulerBinding,
		rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Name: "scheduler", Namespace: "kube-system"},
		rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: ControllerManagerUser})
	scheduler.RoleRef.Name = SchedulerUser
	bindings = append(bindings, scheduler)
	for _, name := range controllerNames() {
		bindings = append(bindings, binding(ControllerRolePrefix+name,
			rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Name: name, Namespace: "kube-system"}))
	}
	return bindings
}

func controllerNames() []string {
	return []string{"clusterrole-aggregation-controller", "cronjob-controller", "generic-garbage-collector", "job-controller", "namespace-controller", "node-controller", "pod-garbage-collector", "root-ca-cert-publisher", "service-account-controller", "ttl-after-finished-controller"}
}

func meta(name string, labels map[string]string) metav1.ObjectMeta {
	l := map[string]string{bootstrappingLabel: "rbac-defaults"}
	for k, v := range labels {
		l[k] = v
	}
	return metav1.ObjectMeta{Name: name, Labels: l, Annotations: map[string]string{AutoUpdateAnnotation: "true"}}
}

func clusterRole(name string, labels map[string]string, rules ...rbacv1.PolicyRule) *rbacv1.ClusterRole {
	return &rbacv1.ClusterRole{ObjectMeta: meta(name, labels), Rules: rules}
}

// aggregated is a role whose rules the aggregation controller gathers
// from the roles labelled label=true.
func aggregated(name, label string, labels map[string]string) *rbacv1.ClusterRole {
	r := clusterRole(name, labels)
	r.AggregationRule = &rbacv1.AggregationRule{ClusterRoleSelectors: []metav1.LabelSelector{{MatchLabels: map[string]string{label: "true"}}}}
	return r
}

func binding(role string, subjects ...rbacv1.Subject) *rbacv1.ClusterRoleBinding {
	return &rbacv1.ClusterRoleBinding{
		ObjectMeta: meta(role, nil),
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
		Subjects:   subjects,
	}
}

// ruleBuilder writes rules as kube's policy reads: groups, resources,
// names, verbs. Each list is stored sorted, as kube's builder stores it.
type ruleBuilder struct{ r rbacv1.PolicyRule }

func rule(groups ...string) ruleBuilder {
	return ruleBuilder{rbacv1.PolicyRule{APIGroups: sorted(groups)}}
}

func (b ruleBuilder) resources(r ...string) ruleBuilder { b.r.Resources = sorted(r); return b }
func (b ruleBuilder) names(n ...string) ruleBuilder     { b.r.ResourceNames = sorted(n); return b }
func (b ruleBuilder) verbs(v ...string) rbacv1.PolicyRule {
	b.r.Verbs = sorted(v)
	return b.r
}

func sorted(s []string) []string {
	out := slices.Clone(s)
	slices.Sort(out)
	return out
}
