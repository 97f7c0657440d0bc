package node

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/cronplane/cronplane/pkg/auth/authorizer"
	"github.com/cronplane/cronplane/pkg/auth/authorizer/rbac/bootstrap"
	"github.com/cronplane/cronplane/pkg/auth/user"
)

func nodeUser(name string) *user.Info {
	return &user.Info{Name: "system:node:" + name, Groups: []string{Group, user.AllAuthenticated}}
}

// testGraph has pod ns/a on node-a using secret s-a (volume), config map
// cm-a (env), account sa-a and claim pvc-a, bound to volume pv-a with the
// secret pv-secret; pod ns/b on node-b uses secret s-b; the mirror pod
// ns/m on node-a names secret s-m.
func testGraph() *Graph {
	g := NewGraph()
	PodHandler{g}.Replace([]runtime.Object{
		&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a"}, Spec: corev1.PodSpec{
			NodeName: "node-a", ServiceAccountName: "sa-a",
			Containers: []corev1.Container{{Name: "c", Env: []corev1.EnvVar{{Name: "X", ValueFrom: &corev1.EnvVarSource{
				ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "cm-a"}, Key: "k"}}}}}},
			Volumes: []corev1.Volume{
				{Name: "s", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "s-a"}}},
				{Name: "p", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "pvc-a"}}},
			},
		}},
		&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "b"}, Spec: corev1.PodSpec{
			NodeName: "node-b", ImagePullSecrets: []corev1.LocalObjectReference{{Name: "s-b"}}}},
		&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "m", Annotations: map[string]string{corev1.MirrorPodAnnotationKey: "x"}}, Spec: corev1.PodSpec{
			NodeName: "node-a", ImagePullSecrets: []corev1.LocalObjectReference{{Name: "s-m"}}}},
		&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "unbound"}, Spec: corev1.PodSpec{
			ImagePullSecrets: []corev1.LocalObjectReference{{Name: "s-u"}}}},
	})
	VolumeHandler{g}.Replace([]runtime.Object{&corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: "pv-a"},
		Spec: corev1.PersistentVolumeSpec{
			ClaimRef: &corev1.ObjectReference{Namespace: "ns", Name: "pvc-a"},
			PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{
				Driver: "d", VolumeHandle: "h",
				NodePublishSecretRef:       &corev1.SecretReference{Namespace: "other", Name: "pv-secret"},
				ControllerPublishSecretRef: &corev1.SecretReference{Namespace: "other", Name: "controller-secret"},
			}},
		},
	}})
	return g
}

func TestAuthorize_NodeReadsOnlyWhatItsPodsUse(t *testing.T) {
	z := Authorizer{Graph: testGraph(), Rules: bootstrap.NodeRules()}
	res := func(verb, resource, sub, ns, name string) authorizer.Attributes {
		return authorizer.Attributes{User: nodeUser("node-a"), Verb: verb, ResourceRequest: true, APIVersion: "v1", Resource: resource, Subresource: sub, Namespace: ns, Name: name}
	}
	noRelation := "no relationship found between node 'node-a' and this object"
	for _, tc := range []struct {
		name   string
		a      authorizer.Attributes
		want   authorizer.Decision
		reason string
	}{
		{"its pod's secret", res("get", "secrets", "", "ns", "s-a"), authorizer.Allow, ""},
		{"its pod's secret by watch of one name", res("watch", "secrets", "", "ns", "s-a"), authorizer.Allow, ""},
		{"another node's pod's secret", res("get", "secrets", "", "ns", "s-b"), authorizer.NoOpinion, noRelation},
		{"a mirror pod's secret", res("get", "secrets", "", "ns", "s-m"), authorizer.NoOpinion, noRelation},
		{"an unbound pod's secret", res("get", "secrets", "", "ns", "s-u"), authorizer.NoOpinion, noRelation},
		{"the secret in another namespace", res("get", "secrets", "", "other", "s-a"), authorizer.NoOpinion, noRelation},
		{"a list of all secrets", res("list", "secrets", "", "ns", ""), authorizer.NoOpinion, "No Object name found"},
		{"a secret across namespaces", res("list", "secrets", "", "", ""), authorizer.NoOpinion, "can only read namespaced object of this type"},
		{"an update of its secret", res("update", "secrets", "", "ns", "s-a"), authorizer.NoOpinion, "can only read resources of this type"},
		{"its config map", res("get", "configmaps", "", "ns", "cm-a"), authorizer.Allow, ""},
		{"its claim", res("get", "persistentvolumeclaims", "", "ns", "pvc-a"), authorizer.Allow, ""},
		{"a list of claims", res("list", "persistentvolumeclaims", "", "ns", "pvc-a"), authorizer.NoOpinion, "can only get individual resources of this type"},
		{"its claim's status", res("patch", "persistentvolumeclaims", "status", "ns", "pvc-a"), authorizer.Allow, ""},
		{"its claim's volume", res("get", "persistentvolumes", "", "", "pv-a"), authorizer.Allow, ""},
		{"its volume's secret", res("get", "secrets", "", "other", "pv-secret"), authorizer.Allow, ""},
		{"its volume's controller secret", res("get", "secrets", "", "other", "controller-secret"), authorizer.NoOpinion, noRelation},
		{"a token for its pod's account", res("create", "serviceaccounts", "token", "ns", "sa-a"), authorizer.Allow, ""},
		{"its pod's account", res("get", "serviceaccounts", "", "ns", "sa-a"), authorizer.NoOpinion, "can only create tokens for individual service accounts"},
		{"a token for another account", res("create", "serviceaccounts", "token", "ns", "default"), authorizer.NoOpinion, noRelation},
		{"a volume attachment", authorizer.Attributes{User: nodeUser("node-a"), Verb: "get", ResourceRequest: true, APIGroup: "storage.k8s.io", Resource: "volumeattachments", Name: "va"}, authorizer.NoOpinion, noRelation},
		{"its own node", res("update", "nodes", "status", "", "node-a"), authorizer.Allow, ""},
		{"pods, as system:node", res("list", "pods", "", "", ""), authorizer.Allow, ""},
		{"a pod's status, as system:node", res("patch", "pods", "status", "ns", "b"), authorizer.Allow, ""},
		{"a pod's binding", res("create", "pods", "binding", "ns", "b"), authorizer.NoOpinion, ""},
		{"namespaces", res("get", "namespaces", "", "", "ns"), authorizer.NoOpinion, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, reason, err := z.Authorize(context.Background(), tc.a)
			if d != tc.want || reason != tc.reason || err != nil {
				t.Errorf("got %v %q %v, want %v %q", d, reason, err, tc.want, tc.reason)
			}
		})
	}
}

func TestAuthorize_LeasesOnlyTheNodesOwnInNodeLease(t *testing.T) {
	z := Authorizer{Graph: NewGraph(), Rules: bootstrap.NodeRules()}
	lease := func(verb, ns, name string) authorizer.Attributes {
		return authorizer.Attributes{User: nodeUser("node-a"), Verb: verb, ResourceRequest: true, APIGroup: "coordination.k8s.io", APIVersion: "v1", Resource: "leases", Namespace: ns, Name: name}
	}
	for _, tc := range []struct {
		a      authorizer.Attributes
		want   authorizer.Decision
		reason string
	}{
		{lease("get", "kube-node-lease", "node-a"), authorizer.Allow, ""},
		{lease("update", "kube-node-lease", "node-a"), authorizer.Allow, ""},
		{lease("create", "kube-node-lease", ""), authorizer.Allow, ""},
		{lease("update", "kube-node-lease", "node-b"), authorizer.NoOpinion, "can only access node lease with the same name as the requesting node"},
		{lease("get", "kube-system", "node-a"), authorizer.NoOpinion, `can only access leases in the "kube-node-lease" system namespace`},
		{lease("list", "kube-node-lease", ""), authorizer.NoOpinion, "can only get, create, update, patch, or delete a node lease"},
	} {
		d, reason, err := z.Authorize(context.Background(), tc.a)
		if d != tc.want || reason != tc.reason || err != nil {
			t.Errorf("%s %s/%s: got %v %q %v, want %v %q", tc.a.Verb, tc.a.Namespace, tc.a.Name, d, reason, err, tc.want, tc.reason)
		}
	}
}

func TestAuthorize_OnlyNodesAreDecided(t *testing.T) {
	z := Authorizer{Graph: testGraph(), Rules: bootstrap.NodeRules()}
	for _, tc := range []struct {
		u      *user.Info
		reason string
	}{
		{&user.Info{Name: "system:node:node-a"}, ""},
		{&user.Info{Name: "node-a", Groups: []string{Group}}, ""},
		{&user.Info{Name: "system:node:", Groups: []string{Group}}, `unknown node for user "system:node:"`},
		{nil, ""},
	} {
		a := authorizer.Attributes{User: tc.u, Verb: "list", ResourceRequest: true, APIVersion: "v1", Resource: "pods"}
		d, reason, err := z.Authorize(context.Background(), a)
		if d != authorizer.NoOpinion || reason != tc.reason || err != nil {
			t.Errorf("%+v: got %v %q %v, want no opinion %q", tc.u, d, reason, err, tc.reason)
		}
	}
	if _, incomplete, err := z.RulesFor(context.Background(), nodeUser("node-a"), "ns"); !incomplete || err == nil {
		t.Errorf("rules of a node: incomplete %v, err %v; want incomplete with kube's error", incomplete, err)
	}
}

func TestGraph_FollowsChangesAndDeletes(t *testing.T) {
	g := testGraph()
	// Rebinding the secret's pod elsewhere moves the relation.
	g.SetPod(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "b"}, Spec: corev1.PodSpec{
		NodeName: "node-a", ImagePullSecrets: []corev1.LocalObjectReference{{Name: "s-b"}}}})
	for _, tc := range []struct {
		step       string
		node       string
		kind       Kind
		ns, name   string
		want       bool
		afterwards func()
	}{
		{"moved pod", "node-a", Secret, "ns", "s-b", true, func() { PodHandler{g}.Delete(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "b"}}) }},
		{"deleted pod", "node-a", Secret, "ns", "s-b", false, func() { VolumeHandler{g}.Delete(&corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pv-a"}}) }},
		{"deleted volume", "node-a", PersistentVolume, "", "pv-a", false, nil},
		{"deleted volume's secret", "node-a", Secret, "other", "pv-secret", false, func() { g.DeletePod("ns", "a") }},
		{"deleted pod's claim", "node-a", PersistentVolumeClaim, "ns", "pvc-a", false, nil},
	} {
		if got := g.Related(tc.node, tc.kind, tc.ns, tc.name); got != tc.want {
			t.Errorf("%s: related %v, want %v", tc.step, got, tc.want)
		}
		if tc.afterwards != nil {
			tc.afterwards()
		}
	}
	if len(g.pods) != 1 || len(g.users) != 0 || len(g.volumes) != 0 || len(g.volumesOf) != 0 {
		t.Errorf("left behind: pods %v users %v volumes %v volumesOf %v", g.pods, g.users, g.volumes, g.volumesOf)
	}
}
