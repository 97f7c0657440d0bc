package noderestriction

import (
	"context"
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/cronplane/cronplane/pkg/admission"
	"github.com/cronplane/cronplane/pkg/auth/user"
)

type objects struct {
	pods  map[string]*corev1.Pod
	nodes map[string]*corev1.Node
}

func (o objects) GetPod(_ context.Context, namespace, name string) (*corev1.Pod, error) {
	if p, ok := o.pods[namespace+"/"+name]; ok {
		return p, nil
	}
	return nil, apierrors.NewNotFound(corev1.Resource("pods"), name)
}

func (o objects) GetNode(_ context.Context, name string) (*corev1.Node, error) {
	if n, ok := o.nodes[name]; ok {
		return n, nil
	}
	return nil, apierrors.NewNotFound(corev1.Resource("nodes"), name)
}

var nodeA = &user.Info{Name: "system:node:node-a", Groups: []string{"system:nodes", user.AllAuthenticated}}

func testObjects() objects {
	return objects{
		pods: map[string]*corev1.Pod{
			"ns/a": {ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a", UID: "uid-a"}, Spec: corev1.PodSpec{NodeName: "node-a"}},
			"ns/b": {ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "b", UID: "uid-b"}, Spec: corev1.PodSpec{NodeName: "node-b"}},
		},
		nodes: map[string]*corev1.Node{"node-a": {ObjectMeta: metav1.ObjectMeta{Name: "node-a", UID: "node-uid"}}},
	}
}

var (
	podsGVR   = corev1.SchemeGroupVersion.WithResource("pods")
	nodesGVR  = corev1.SchemeGroupVersion.WithResource("nodes")
	leasesGVR = coordinationv1.SchemeGroupVersion.WithResource("leases")
	saGVR     = corev1.SchemeGroupVersion.WithResource("serviceaccounts")
)

func attrs(op admission.Operation, gvr schema.GroupVersionResource, sub, ns, name string, obj, old runtime.Object) *admission.Attributes {
	return &admission.Attributes{Operation: op, Resource: gvr, Subresource: sub, Namespace: ns, Name: name, Object: obj, OldObject: old, User: nodeA}
}

func mirrorPod(mutate func(*corev1.Pod)) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "static-node-a", Annotations: map[string]string{corev1.MirrorPodAnnotationKey: "h"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: "node-a", UID: "node-uid", Controller: ptr.To(true)}}},
		Spec: corev1.PodSpec{NodeName: "node-a"},
	}
	if mutate != nil {
		mutate(p)
	}
	return p
}

func newNode(name string, mutate func(*corev1.Node)) *corev1.Node {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{corev1.LabelHostname: name}}}
	if mutate != nil {
		mutate(n)
	}
	return n
}

func TestAdmit_NodeWritesOnlyItsOwnObjects(t *testing.T) {
	p := New(testObjects())
	podStatus := func(old *corev1.Pod, mutate func(*corev1.Pod)) *admission.Attributes {
		pod := old.DeepCopy()
		if mutate != nil {
			mutate(pod)
		}
		return attrs(admission.Update, podsGVR, "status", "ns", old.Name, pod, old)
	}
	pods := testObjects().pods
	token := func(name string, uid types.UID) *admission.Attributes {
		return attrs(admission.Create, saGVR, "token", "ns", "default", &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{
			BoundObjectRef: &authenticationv1.BoundObjectReference{APIVersion: "v1", Kind: "Pod", Name: name, UID: uid}}}, nil)
	}
	for _, tc := range []struct {
		name string
		a    *admission.Attributes
		want string // the error's message; "" admits
	}{
		{"the status of its pod", podStatus(pods["ns/a"], func(p *corev1.Pod) { p.Status.Phase = corev1.PodRunning }), ""},
		{"the status of another node's pod", podStatus(pods["ns/b"], nil), `pods "b" is forbidden: node "node-a" can only update pod status for pods with spec.nodeName set to itself`},
		{"labels through its pod's status", podStatus(pods["ns/a"], func(p *corev1.Pod) { p.Labels = map[string]string{"x": "y"} }), `pods "a" is forbidden: node "node-a" cannot update labels through pod status`},
		{"a delete of its pod", attrs(admission.Delete, podsGVR, "", "ns", "a", nil, nil), ""},
		{"a delete of another node's pod", attrs(admission.Delete, podsGVR, "", "ns", "b", nil, nil), `pods "b" is forbidden: node "node-a" can only delete pods with spec.nodeName set to itself`},
		{"a delete of a missing pod", attrs(admission.Delete, podsGVR, "", "ns", "gone", nil, nil), `pod "gone" not found`},
		{"an update of its pod", attrs(admission.Update, podsGVR, "", "ns", "a", pods["ns/a"], pods["ns/a"]), `pods "a" is forbidden: unexpected operation "UPDATE", node "node-a" can only create and delete mirror pods`},
		{"a binding", attrs(admission.Create, podsGVR, "binding", "ns", "a", &corev1.Binding{}, nil), `pods "a" is forbidden: unexpected pod subresource "binding", only 'status' and 'eviction' are allowed`},
		{"an eviction of its pod", attrs(admission.Create, podsGVR, "eviction", "ns", "a", &policyv1.Eviction{}, nil), ""},
		{"an eviction of another node's pod", attrs(admission.Create, podsGVR, "eviction", "ns", "b", &policyv1.Eviction{}, nil), `pods "b" is forbidden: node node-a can only evict pods with spec.nodeName set to itself`},
		{"a mirror pod", attrs(admission.Create, podsGVR, "", "ns", "", mirrorPod(nil), nil), ""},
		{"a pod that is no mirror", attrs(admission.Create, podsGVR, "", "ns", "", mirrorPod(func(p *corev1.Pod) { p.Annotations = nil }), nil), `pods "static-node-a" is forbidden: pod does not have "kubernetes.io/config.mirror" annotation, node "node-a" can only create mirror pods`},
		{"a mirror pod on another node", attrs(admission.Create, podsGVR, "", "ns", "", mirrorPod(func(p *corev1.Pod) { p.Spec.NodeName = "node-b" }), nil), `pods "static-node-a" is forbidden: node "node-a" can only create pods with spec.nodeName set to itself`},
		{"a mirror pod without owner", attrs(admission.Create, podsGVR, "", "ns", "", mirrorPod(func(p *corev1.Pod) { p.OwnerReferences = nil }), nil), `pods "static-node-a" is forbidden: node "node-a" can only create pods with an owner reference set to itself`},
		{"a mirror pod of another node uid", attrs(admission.Create, podsGVR, "", "ns", "", mirrorPod(func(p *corev1.Pod) { p.OwnerReferences[0].UID = "old" }), nil), `pods "static-node-a" is forbidden: node node-a UID mismatch: expected old got node-uid`},
		{"a mirror pod with a secret", attrs(admission.Create, podsGVR, "", "ns", "", mirrorPod(func(p *corev1.Pod) {
			p.Spec.Volumes = []corev1.Volume{{Name: "s", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "s"}}}}
		}), nil), `pods "static-node-a" is forbidden: node "node-a" can not create pods that reference secrets`},
		{"a mirror pod with an account", attrs(admission.Create, podsGVR, "", "ns", "", mirrorPod(func(p *corev1.Pod) { p.Spec.ServiceAccountName = "default" }), nil), `pods "static-node-a" is forbidden: node "node-a" can not create pods that reference a service account`},
		{"its node", attrs(admission.Create, nodesGVR, "", "", "node-a", newNode("node-a", nil), nil), ""},
		{"another node", attrs(admission.Update, nodesGVR, "status", "", "node-b", newNode("node-b", nil), newNode("node-b", nil)), `nodes "node-b" is forbidden: node "node-a" is not allowed to modify node "node-b"`},
		{"its node with a restricted label", attrs(admission.Create, nodesGVR, "", "", "node-a", newNode("node-a", func(n *corev1.Node) {
			n.Labels["node-restriction.kubernetes.io/x"] = "y"
			n.Labels["foo.k8s.io/z"] = "y"
			n.Labels["node.kubernetes.io/ok"] = "y"
		}), nil), `nodes "node-a" is forbidden: node "node-a" is not allowed to set the following labels: foo.k8s.io/z, node-restriction.kubernetes.io/x`},
		{"its node's taints", attrs(admission.Update, nodesGVR, "", "", "node-a", newNode("node-a", nil), newNode("node-a", func(n *corev1.Node) {
			n.Spec.Taints = []corev1.Taint{{Key: "node.kubernetes.io/not-ready", Effect: corev1.TaintEffectNoSchedule}}
		})), `nodes "node-a" is forbidden: node "node-a" is not allowed to modify taints`},
		{"a label of its node removed", attrs(admission.Update, nodesGVR, "", "", "node-a", newNode("node-a", nil), newNode("node-a", func(n *corev1.Node) {
			n.Labels["kubernetes.io/role"] = "x"
		})), `nodes "node-a" is forbidden: is not allowed to modify labels: kubernetes.io/role`},
		{"its lease", attrs(admission.Create, leasesGVR, "", "kube-node-lease", "", &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "node-a"}}, nil), ""},
		{"another node's lease", attrs(admission.Update, leasesGVR, "", "kube-node-lease", "node-b", &coordinationv1.Lease{}, &coordinationv1.Lease{}), `leases.coordination.k8s.io "node-b" is forbidden: can only access node lease with the same name as the requesting node`},
		{"a lease elsewhere", attrs(admission.Create, leasesGVR, "", "default", "", &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "node-a"}}, nil), `leases.coordination.k8s.io "node-a" is forbidden: can only access leases in the "kube-node-lease" system namespace`},
		{"a token bound to its pod", token("a", "uid-a"), ""},
		{"a token bound to another node's pod", token("b", "uid-b"), `serviceaccounts "default" is forbidden: node requested token bound to a pod scheduled on a different node`},
		{"a token bound to a recreated pod", token("a", "uid-old"), `serviceaccounts "default" is forbidden: the UID in the bound object reference (uid-old) does not match the UID in record. The object might have been deleted and then recreated`},
		{"a token bound to nothing", attrs(admission.Create, saGVR, "token", "ns", "default", &authenticationv1.TokenRequest{}, nil), `serviceaccounts "default" is forbidden: node requested token not bound to a pod`},
		{"a config map", attrs(admission.Create, corev1.SchemeGroupVersion.WithResource("configmaps"), "", "ns", "", &corev1.ConfigMap{}, nil), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := p.Admit(context.Background(), tc.a)
			got := ""
			if err != nil {
				got = err.Error()
			}
			if got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
			if err != nil && !apierrors.IsForbidden(err) && !apierrors.IsNotFound(err) {
				t.Errorf("%v is neither Forbidden nor NotFound", err)
			}
		})
	}
}

func TestAdmit_OtherUsersAreLeftAlone(t *testing.T) {
	p := New(testObjects())
	for _, u := range []*user.Info{
		{Name: "alice", Groups: []string{"system:nodes"}},
		{Name: "system:node:node-a"},
		nil,
	} {
		a := attrs(admission.Delete, podsGVR, "", "ns", "b", nil, nil)
		a.User = u
		if err := p.Admit(context.Background(), a); err != nil {
			t.Errorf("%+v: %v", u, err)
		}
	}
	a := attrs(admission.Delete, podsGVR, "", "ns", "b", nil, nil)
	a.User = &user.Info{Name: "system:node:", Groups: []string{"system:nodes"}}
	if err := p.Admit(context.Background(), a); err == nil || err.Error() != `pods "b" is forbidden: could not determine node from user "system:node:"` {
		t.Errorf("a node without a name: %v", err)
	}
}
