// Package bootstrap owns the API Priority and Fairness configuration that
// every cronplane apiserver keeps in place, as kube-apiserver v1.29 does: the
// mandatory FlowSchemas and PriorityLevelConfigurations (exempt, catch-all),
// which are always restored, and the suggested ones, which are created when
// missing and updated only while their apf.kubernetes.io/autoupdate-spec
// annotation allows it. The objects are written out fully defaulted, as they
// are stored, so that comparing them with stored objects needs no defaulting.
package bootstrap

import (
	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Mandatory returns fresh copies of the objects that must always exist with
// exactly this spec (the exempt level's two tunable fields excepted).
func Mandatory() ([]*flowcontrolv1.FlowSchema, []*flowcontrolv1.PriorityLevelConfiguration) {
	fs := []*flowcontrolv1.FlowSchema{
		flowSchema("exempt", "exempt", 1, "",
			rules(groups("system:masters"), everyResource(), everyNonResource())),
		flowSchema("catch-all", "catch-all", 10000, flowcontrolv1.FlowDistinguisherMethodByUserType,
			rules(groups("system:unauthenticated", "system:authenticated"), everyResource(), everyNonResource())),
	}
	pl := []*flowcontrolv1.PriorityLevelConfiguration{
		{
			ObjectMeta: meta("exempt"),
			Spec: flowcontrolv1.PriorityLevelConfigurationSpec{
				Type:   flowcontrolv1.PriorityLevelEnablementExempt,
				Exempt: &flowcontrolv1.ExemptPriorityLevelConfiguration{NominalConcurrencyShares: i32(0), LendablePercent: i32(0)},
			},
		},
		{
			ObjectMeta: meta("catch-all"),
			Spec: flowcontrolv1.PriorityLevelConfigurationSpec{
				Type: flowcontrolv1.PriorityLevelEnablementLimited,
				Limited: &flowcontrolv1.LimitedPriorityLevelConfiguration{
					NominalConcurrencyShares: i32(5),
					LendablePercent:          i32(0),
					LimitResponse:            flowcontrolv1.LimitResponse{Type: flowcontrolv1.LimitResponseTypeReject},
				},
			},
		},
	}
	return fs, pl
}

// Suggested returns fresh copies of the objects created when missing and
// kept up to date while their auto-update annotation is true.
func Suggested() ([]*flowcontrolv1.FlowSchema, []*flowcontrolv1.PriorityLevelConfiguration) {
	byUser := flowcontrolv1.FlowDistinguisherMethodByUserType
	byNamespace := flowcontrolv1.FlowDistinguisherMethodByNamespaceType
	kcm := user("system:kube-controller-manager")
	scheduler := user("system:kube-scheduler")
	kubeSystemSAs := serviceAccount("kube-system", "*")
	getCreateUpdate := []string{"get", "create", "update"}
	leases := resourceRule(getCreateUpdate, "coordination.k8s.io", false, "leases")

	fs := []*flowcontrolv1.FlowSchema{
		flowSchema("system-nodes", "system", 500, byUser,
			rules(groups("system:nodes"), everyResource(), everyNonResource())),
		flowSchema("system-node-high", "node-high", 400, byUser,
			rules(groups("system:nodes"),
				resourceRule([]string{"*"}, "", true, "nodes", "nodes/status"),
				resourceRule([]string{"*"}, "coordination.k8s.io", false, "leases"))),
		flowSchema("probes", "exempt", 2, "",
			flowcontrolv1.PolicyRulesWithSubjects{
				Subjects: groups("system:unauthenticated", "system:authenticated"),
				NonResourceRules: []flowcontrolv1.NonResourcePolicyRule{{
					Verbs:           []string{"get"},
					NonResourceURLs: []string{"/healthz", "/readyz", "/livez"},
				}},
			}),
		flowSchema("system-leader-election", "leader-election", 100, byUser,
			rules([]flowcontrolv1.Subject{kcm, scheduler, kubeSystemSAs}, leases)),
		flowSchema("workload-leader-election", "leader-election", 200, byUser,
			rules([]flowcontrolv1.Subject{kubeSystemSAs},
				resourceRule(getCreateUpdate, "", false, "endpoints", "configmaps"), leases)),
		flowSchema("endpoint-controller", "workload-high", 150, byUser,
			rules([]flowcontrolv1.Subject{kcm,
				serviceAccount("kube-system", "endpoint-controller"),
				serviceAccount("kube-system", "endpointslicemirroring-controller")},
				resourceRule(getCreateUpdate, "", false, "endpoints"))),
		flowSchema("kube-controller-manager", "workload-high", 800, byNamespace,
			rules([]flowcontrolv1.Subject{kcm}, everyResource(), everyNonResource())),
		flowSchema("kube-scheduler", "workload-high", 800, byNamespace,
			rules([]flowcontrolv1.Subject{scheduler}, everyResource(), everyNonResource())),
		flowSchema("kube-system-service-accounts", "workload-high", 900, byNamespace,
			rules([]flowcontrolv1.Subject{kubeSystemSAs}, everyResource(), everyNonResource())),
		flowSchema("service-accounts", "workload-low", 9000, byUser,
			rules(groups("system:serviceaccounts"), everyResource(), everyNonResource())),
		flowSchema("global-default", "global-default", 9900, byUser,
			rules(groups("system:unauthenticated", "system:authenticated"), everyResource(), everyNonResource())),
	}
	pl := []*flowcontrolv1.PriorityLevelConfiguration{
		queuingLevel("system", 30, 33, 64, 6),
		queuingLevel("node-high", 40, 25, 64, 6),
		queuingLevel("leader-election", 10, 0, 16, 4),
		queuingLevel("workload-high", 40, 50, 128, 6),
		queuingLevel("workload-low", 100, 90, 128, 6),
		queuingLevel("global-default", 20, 50, 128, 6),
	}
	return fs, pl
}

// meta names a bootstrap object and marks it auto-updated, as it is created.
func meta(name string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: name, Annotations: map[string]string{flowcontrolv1.AutoUpdateAnnotationKey: "true"}}
}

func i32(v int32) *int32 { return &v }

func flowSchema(name, level string, precedence int32, method flowcontrolv1.FlowDistinguisherMethodType, r ...flowcontrolv1.PolicyRulesWithSubjects) *flowcontrolv1.FlowSchema {
	fs := &flowcontrolv1.FlowSchema{
		ObjectMeta: meta(name),
		Spec: flowcontrolv1.FlowSchemaSpec{
			PriorityLevelConfiguration: flowcontrolv1.PriorityLevelConfigurationReference{Name: level},
			MatchingPrecedence:         precedence,
			Rules:                      r,
		},
	}
	if method != "" {
		fs.Spec.DistinguisherMethod = &flowcontrolv1.FlowDistinguisherMethod{Type: method}
	}
	return fs
}

// rules groups subjects with resource and non-resource rules; each rule is a
// ResourcePolicyRule or a NonResourcePolicyRule.
func rules(subjects []flowcontrolv1.Subject, rs ...any) flowcontrolv1.PolicyRulesWithSubjects {
	p := flowcontrolv1.PolicyRulesWithSubjects{Subjects: subjects}
	for _, r := range rs {
		switch r := r.(type) {
		case flowcontrolv1.ResourcePolicyRule:
			p.ResourceRules = append(p.ResourceRules, r)
		case flowcontrolv1.NonResourcePolicyRule:
			p.NonResourceRules = append(p.NonResourceRules, r)
		}
	}
	return p
}

func groups(names ...string) []flowcontrolv1.Subject {
	s := make([]flowcontrolv1.Subject, 0, len(names))
	for _, n := range names {
		s = append(s, flowcontrolv1.Subject{Kind: flowcontrolv1.SubjectKindGroup, Group: &flowcontrolv1.GroupSubject{Name: n}})
	}
	return s
}

func user(name string) flowcontrolv1.Subject {
	return flowcontrolv1.Subject{Kind: flowcontrolv1.SubjectKindUser, User: &flowcontrolv1.UserSubject{Name: name}}
}

func serviceAccount(namespace, name string) flowcontrolv1.Subject {
	return flowcontrolv1.Subject{Kind: flowcontrolv1.SubjectKindServiceAccount,
		ServiceAccount: &flowcontrolv1.ServiceAccountSubject{Namespace: namespace, Name: name}}
}

func resourceRule(verbs []string, group string, clusterScope bool, resources ...string) flowcontrolv1.ResourcePolicyRule {
	return flowcontrolv1.ResourcePolicyRule{
		Verbs:        verbs,
		APIGroups:    []string{group},
		Resources:    resources,
		ClusterScope: clusterScope,
		Namespaces:   []string{flowcontrolv1.NamespaceEvery},
	}
}

func everyResource() flowcontrolv1.ResourcePolicyRule {
	return resourceRule([]string{flowcontrolv1.VerbAll}, flowcontrolv1.APIGroupAll, true, flowcontrolv1.ResourceAll)
}

func everyNonResource() flowcontrolv1.NonResourcePolicyRule {
	return flowcontrolv1.NonResourcePolicyRule{Verbs: []string{flowcontrolv1.VerbAll}, NonResourceURLs: []string{flowcontrolv1.NonResourceAll}}
}

func queuingLevel(name string, shares, lendable, queues, handSize int32) *flowcontrolv1.PriorityLevelConfiguration {
	return &flowcontrolv1.PriorityLevelConfiguration{
		ObjectMeta: meta(name),
		Spec: flowcontrolv1.PriorityLevelConfigurationSpec{
			Type: flowcontrolv1.PriorityLevelEnablementLimited,
			Limited: &flowcontrolv1.LimitedPriorityLevelConfiguration{
				NominalConcurrencyShares: i32(shares),
				LendablePercent:          i32(lendable),
				LimitResponse: flowcontrolv1.LimitResponse{
					Type:    flowcontrolv1.LimitResponseTypeQueue,
					Queuing: &flowcontrolv1.QueuingConfiguration{Queues: queues, HandSize: handSize, QueueLengthLimit: 50},
				},
			},
		},
	}
}
