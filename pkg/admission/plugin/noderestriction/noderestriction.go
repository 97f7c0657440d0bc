// Package noderestriction is the admission plugin that keeps a node's
// writes to its own objects, as kube's NodeRestriction plugin does: a
// node (user system:node:<name> in system:nodes) may create, update and
// delete only its own Node, without changing its taints, its config
// source or labels kubelets may not set; create only mirror pods bound
// to itself that refer to no other object, and delete, evict and write
// the status of only the pods bound to it; write only its own lease in
// kube-node-lease; and ask tokens only bound to its pods. (Kube's checks
// of claims' status and CSINodes have nothing to check here: cronplane
// takes no writes of either.) The Node authorizer decides what a node may
// read. It runs in the
// mutating phase, after the ServiceAccount plugin, as in kube.
package noderestriction

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/cronplane/cronplane/pkg/admission"
	"github.com/cronplane/cronplane/pkg/auth/authorizer/node"
)

// Getter reads pods and nodes from the apiserver's cache, as kube's
// plugin reads them from its informers; a missing one is an API
// NotFound error.
type Getter interface {
	GetPod(ctx context.Context, namespace, name string) (*corev1.Pod, error)
	GetNode(ctx context.Context, name string) (*corev1.Node, error)
}

// Plugin restricts nodes' writes.
type Plugin struct{ objects Getter }

// New returns the plugin reading pods and nodes through g.
func New(g Getter) *Plugin { return &Plugin{objects: g} }

var _ admission.MutationInterface = (*Plugin)(nil)

func (*Plugin) Handles(op admission.Operation) bool {
	return op == admission.Create || op == admission.Update || op == admission.Delete
}

func (p *Plugin) Admit(ctx context.Context, a *admission.Attributes) error {
	nodeName, isNode := node.Identity(a.User)
	if !isNode {
		return nil
	}
	if nodeName == "" {
		return forbidden(a, "could not determine node from user %q", a.User.Name)
	}
	switch a.Resource.GroupResource().String() {
	case "pods":
		switch a.Subresource {
		case "":
			return p.admitPod(ctx, nodeName, a)
		case "status":
			return admitPodStatus(nodeName, a)
		case "eviction":
			return p.admitEviction(ctx, nodeName, a)
		}
		return forbidden(a, "unexpected pod subresource %q, only 'status' and 'eviction' are allowed", a.Subresource)
	case "nodes":
		return admitNode(nodeName, a)
	case "serviceaccounts":
		return p.admitToken(ctx, nodeName, a)
	case "leases.coordination.k8s.io":
		if a.Namespace != corev1.NamespaceNodeLease {
			return forbidden(a, "can only access leases in the %q system namespace", corev1.NamespaceNodeLease)
		}
		return admitOwnLease(nodeName, a)
	}
	return nil
}

// forbidden is kube's admission refusal: the resource and the name of
// the request (else of the object, else its generateName, else
// "Unknown").
func forbidden(a *admission.Attributes, format string, args ...any) error {
	name := a.Name
	if name == "" {
		name = "Unknown"
		if o, err := meta.Accessor(a.Object); err == nil && a.Object != nil {
			switch {
			case o.GetName() != "":
				name = o.GetName()
			case o.GetGenerateName() != "":
				name = o.GetGenerateName()
			}
		}
	}
	return apierrors.NewForbidden(a.Resource.GroupResource(), name, fmt.Errorf(format, args...))
}

// getPod reads a pod as kube's plugin reads it from its lister: a
// missing one is kube's lister NotFound, any other failure forbids.
func (p *Plugin) getPod(ctx context.Context, a *admission.Attributes, namespace, name string) (*corev1.Pod, error) {
	pod, err := p.objects.GetPod(ctx, namespace, name)
	if apierrors.IsNotFound(err) {
		return nil, apierrors.NewNotFound(corev1.Resource("pod"), name)
	}
	if err != nil {
		return nil, forbidden(a, "%v", err)
	}
	return pod, nil
}

func (p *Plugin) admitPod(ctx context.Context, nodeName string, a *admission.Attributes) error {
	switch a.Operation {
	case admission.Create:
		return p.admitMirrorPod(ctx, nodeName, a)
	case admission.Delete:
		pod, err := p.getPod(ctx, a, a.Namespace, a.Name)
		if err != nil {
			return err
		}
		if pod.Spec.NodeName != nodeName {
			return forbidden(a, "node %q can only delete pods with spec.nodeName set to itself", nodeName)
		}
		return nil
	}
	return forbidden(a, "unexpected operation %q, node %q can only create and delete mirror pods", a.Operation, nodeName)
}

// admitMirrorPod allows a mirror pod bound to the node, owned by it and
// referring to no other object.
func (p *Plugin) admitMirrorPod(ctx context.Context, nodeName string, a *admission.Attributes) error {
	pod, ok := a.Object.(*corev1.Pod)
	if !ok {
		return forbidden(a, "unexpected type %T", a.Object)
	}
	if _, mirror := pod.Annotations[corev1.MirrorPodAnnotationKey]; !mirror {
		return forbidden(a, "pod does not have %q annotation, node %q can only create mirror pods", corev1.MirrorPodAnnotationKey, nodeName)
	}
	if pod.Spec.NodeName != nodeName {
		return forbidden(a, "node %q can only create pods with spec.nodeName set to itself", nodeName)
	}
	switch len(pod.OwnerReferences) {
	case 0:
		return forbidden(a, "node %q can only create pods with an owner reference set to itself", nodeName)
	case 1:
	default:
		return forbidden(a, "node %q can only create pods with a single owner reference set to itself", nodeName)
	}
	owner := pod.OwnerReferences[0]
	if owner.APIVersion != "v1" || owner.Kind != "Node" || owner.Name != nodeName {
		return forbidden(a, "node %q can only create pods with an owner reference set to itself", nodeName)
	}
	if owner.Controller == nil || !*owner.Controller {
		return forbidden(a, "node %q can only create pods with a controller owner reference set to itself", nodeName)
	}
	if owner.BlockOwnerDeletion != nil && *owner.BlockOwnerDeletion {
		return forbidden(a, "node %q must not set blockOwnerDeletion on an owner reference", nodeName)
	}
	n, err := p.objects.GetNode(ctx, nodeName)
	if apierrors.IsNotFound(err) {
		return apierrors.NewNotFound(corev1.Resource("node"), nodeName)
	}
	if err != nil {
		return forbidden(a, "error looking up node %s to verify uid: %v", nodeName, err)
	}
	if owner.UID != n.UID {
		return forbidden(a, "node %s UID mismatch: expected %s got %s", nodeName, owner.UID, n.UID)
	}
	if pod.Spec.ServiceAccountName != "" {
		return forbidden(a, "node %q can not create pods that reference a service account", nodeName)
	}
	var secrets, configMaps, trustBundles, claims bool
	visitReferences(&pod.Spec, func(kind reference) {
		switch kind {
		case secretRef:
			secrets = true
		case configMapRef:
			configMaps = true
		case trustBundleRef:
			trustBundles = true
		case claimRef:
			claims = true
		}
	})
	switch {
	case secrets:
		return forbidden(a, "node %q can not create pods that reference secrets", nodeName)
	case configMaps:
		return forbidden(a, "node %q can not create pods that reference configmaps", nodeName)
	case trustBundles:
		return forbidden(a, "node %q can not create pods that reference clustertrustbundles", nodeName)
	case claims:
		return forbidden(a, "node %q can not create pods that reference persistentvolumeclaims", nodeName)
	}
	return nil
}

// reference is a kind of object a pod may refer to.
type reference int

const (
	secretRef reference = iota
	configMapRef
	trustBundleRef
	claimRef
)

// visitReferences calls f for each reference of a pod to a secret, a
// config map, a cluster trust bundle or a claim.
func visitReferences(spec *corev1.PodSpec, f func(reference)) {
	for _, s := range spec.ImagePullSecrets {
		if s.Name != "" {
			f(secretRef)
		}
	}
	env := func(from []corev1.EnvFromSource, vars []corev1.EnvVar) {
		for _, e := range from {
			if e.SecretRef != nil && e.SecretRef.Name != "" {
				f(secretRef)
			}
			if e.ConfigMapRef != nil && e.ConfigMapRef.Name != "" {
				f(configMapRef)
			}
		}
		for _, v := range vars {
			if v.ValueFrom != nil && v.ValueFrom.SecretKeyRef != nil && v.ValueFrom.SecretKeyRef.Name != "" {
				f(secretRef)
			}
			if v.ValueFrom != nil && v.ValueFrom.ConfigMapKeyRef != nil && v.ValueFrom.ConfigMapKeyRef.Name != "" {
				f(configMapRef)
			}
		}
	}
	for _, c := range spec.InitContainers {
		env(c.EnvFrom, c.Env)
	}
	for _, c := range spec.Containers {
		env(c.EnvFrom, c.Env)
	}
	for _, c := range spec.EphemeralContainers {
		env(c.EnvFrom, c.Env)
	}
	for i := range spec.Volumes {
		v := &spec.Volumes[i].VolumeSource
		switch {
		case v.Secret != nil && v.Secret.SecretName != "",
			v.AzureFile != nil && v.AzureFile.SecretName != "",
			v.CephFS != nil && v.CephFS.SecretRef != nil && v.CephFS.SecretRef.Name != "",
			v.Cinder != nil && v.Cinder.SecretRef != nil && v.Cinder.SecretRef.Name != "",
			v.FlexVolume != nil && v.FlexVolume.SecretRef != nil && v.FlexVolume.SecretRef.Name != "",
			v.RBD != nil && v.RBD.SecretRef != nil && v.RBD.SecretRef.Name != "",
			v.ScaleIO != nil && v.ScaleIO.SecretRef != nil && v.ScaleIO.SecretRef.Name != "",
			v.ISCSI != nil && v.ISCSI.SecretRef != nil && v.ISCSI.SecretRef.Name != "",
			v.StorageOS != nil && v.StorageOS.SecretRef != nil && v.StorageOS.SecretRef.Name != "",
			v.CSI != nil && v.CSI.NodePublishSecretRef != nil && v.CSI.NodePublishSecretRef.Name != "":
			f(secretRef)
		case v.ConfigMap != nil && v.ConfigMap.Name != "":
			f(configMapRef)
		case v.PersistentVolumeClaim != nil:
			f(claimRef)
		case v.Projected != nil:
			for _, src := range v.Projected.Sources {
				switch {
				case src.Secret != nil && src.Secret.Name != "":
					f(secretRef)
				case src.ConfigMap != nil && src.ConfigMap.Name != "":
					f(configMapRef)
				case src.ClusterTrustBundle != nil:
					f(trustBundleRef)
				}
			}
		}
	}
}

// admitPodStatus allows a status update of a pod bound to the node that
// leaves its labels alone.
func admitPodStatus(nodeName string, a *admission.Attributes) error {
	if a.Operation != admission.Update {
		return forbidden(a, "unexpected operation %q", a.Operation)
	}
	old, ok := a.OldObject.(*corev1.Pod)
	if !ok {
		return forbidden(a, "unexpected type %T", a.OldObject)
	}
	if old.Spec.NodeName != nodeName {
		return forbidden(a, "node %q can only update pod status for pods with spec.nodeName set to itself", nodeName)
	}
	pod, ok := a.Object.(*corev1.Pod)
	if !ok {
		return forbidden(a, "unexpected type %T", a.Object)
	}
	if !labels.Equals(old.Labels, pod.Labels) {
		return forbidden(a, "node %q cannot update labels through pod status", nodeName)
	}
	if !apiequality.Semantic.DeepEqual(claimStatuses(old), claimStatuses(pod)) {
		return forbidden(a, "node %q cannot update resource claim statues", nodeName)
	}
	return nil
}

// claimStatuses are a pod's resource claim statuses, none being as
// empty as an empty list.
func claimStatuses(pod *corev1.Pod) []corev1.PodResourceClaimStatus {
	if len(pod.Status.ResourceClaimStatuses) == 0 {
		return nil
	}
	return pod.Status.ResourceClaimStatuses
}

// admitEviction allows the eviction of a pod bound to the node.
func (p *Plugin) admitEviction(ctx context.Context, nodeName string, a *admission.Attributes) error {
	if a.Operation != admission.Create {
		return forbidden(a, "unexpected operation %s", a.Operation)
	}
	eviction, ok := a.Object.(*policyv1.Eviction)
	if !ok {
		return forbidden(a, "unexpected type %T", a.Object)
	}
	// The pod named by the request, rather than by the Eviction.
	name := a.Name
	if name == "" {
		if eviction.Name == "" {
			return forbidden(a, "could not determine pod from request data")
		}
		name = eviction.Name
	}
	pod, err := p.getPod(ctx, a, a.Namespace, name)
	if err != nil {
		return err
	}
	if pod.Spec.NodeName != nodeName {
		return forbidden(a, "node %s can only evict pods with spec.nodeName set to itself", nodeName)
	}
	return nil
}

// admitNode allows the node's own Node, without a new config source, a
// change of taints, or labels kubelets may not set.
func admitNode(nodeName string, a *admission.Attributes) error {
	if a.Name != nodeName {
		return forbidden(a, "node %q is not allowed to modify node %q", nodeName, a.Name)
	}
	switch a.Operation {
	case admission.Create:
		n, ok := a.Object.(*corev1.Node)
		if !ok {
			return forbidden(a, "unexpected type %T", a.Object)
		}
		if n.Spec.ConfigSource != nil {
			return forbidden(a, "node %q is not allowed to create pods with a non-nil configSource", nodeName)
		}
		if bad := forbiddenLabels(modifiedLabels(n.Labels, nil)); len(bad) > 0 {
			return forbidden(a, "node %q is not allowed to set the following labels: %s", nodeName, strings.Join(bad, ", "))
		}
	case admission.Update:
		n, ok := a.Object.(*corev1.Node)
		if !ok {
			return forbidden(a, "unexpected type %T", a.Object)
		}
		old, ok := a.OldObject.(*corev1.Node)
		if !ok {
			return forbidden(a, "unexpected type %T", a.Object)
		}
		if n.Spec.ConfigSource != nil && !apiequality.Semantic.DeepEqual(n.Spec.ConfigSource, old.Spec.ConfigSource) {
			return forbidden(a, "node %q is not allowed to update configSource to a new non-nil configSource", nodeName)
		}
		if !apiequality.Semantic.DeepEqual(n.Spec.Taints, old.Spec.Taints) {
			return forbidden(a, "node %q is not allowed to modify taints", nodeName)
		}
		if bad := forbiddenLabels(modifiedLabels(n.Labels, old.Labels)); len(bad) > 0 {
			return forbidden(a, "is not allowed to modify labels: %s", strings.Join(bad, ", "))
		}
	}
	return nil
}

// modifiedLabels are the keys added, removed or changed from b to a.
func modifiedLabels(a, b map[string]string) []string {
	var out []string
	for k, v := range a {
		if w, ok := b[k]; !ok || v != w {
			out = append(out, k)
		}
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			out = append(out, k)
		}
	}
	return out
}

// kubeletLabels are the kubernetes.io labels a kubelet sets on its node.
var kubeletLabels = []string{
	corev1.LabelHostname, corev1.LabelTopologyZone, corev1.LabelTopologyRegion,
	corev1.LabelFailureDomainBetaZone, corev1.LabelFailureDomainBetaRegion,
	corev1.LabelInstanceType, corev1.LabelInstanceTypeStable, corev1.LabelOSStable, corev1.LabelArchStable,
	"beta.kubernetes.io/os", "beta.kubernetes.io/arch",
}

// forbiddenLabels are, sorted, the keys a node may not set: those under
// node-restriction.kubernetes.io, and those under kubernetes.io or
// k8s.io that are not a kubelet's (its well-known labels, and
// [*.]kubelet.kubernetes.io and [*.]node.kubernetes.io).
func forbiddenLabels(keys []string) []string {
	var out []string
	for _, k := range keys {
		ns := labelNamespace(k)
		restricted := inDomain(ns, corev1.LabelNamespaceNodeRestriction)
		kube := inDomain(ns, "kubernetes.io") || inDomain(ns, "k8s.io")
		kubelet := slices.Contains(kubeletLabels, k) || inDomain(ns, corev1.LabelNamespaceSuffixKubelet) || inDomain(ns, corev1.LabelNamespaceSuffixNode)
		if restricted || (kube && !kubelet) {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

func labelNamespace(key string) string {
	if prefix, _, ok := strings.Cut(key, "/"); ok {
		return prefix
	}
	return ""
}

// inDomain reports whether ns is domain or one of its subdomains.
func inDomain(ns, domain string) bool {
	return ns == domain || strings.HasSuffix(ns, "."+domain)
}

// admitToken allows a node tokens only bound to a pod bound to it.
func (p *Plugin) admitToken(ctx context.Context, nodeName string, a *admission.Attributes) error {
	if a.Operation != admission.Create || a.Subresource != "token" {
		return nil
	}
	tr, ok := a.Object.(*authenticationv1.TokenRequest)
	if !ok {
		return forbidden(a, "unexpected type %T", a.Object)
	}
	ref := tr.Spec.BoundObjectRef
	if ref == nil || ref.APIVersion != "v1" || ref.Kind != "Pod" || ref.Name == "" {
		return forbidden(a, "node requested token not bound to a pod")
	}
	if ref.UID == "" {
		return forbidden(a, "node requested token with a pod binding without a uid")
	}
	pod, err := p.getPod(ctx, a, a.Namespace, ref.Name)
	if err != nil {
		return err
	}
	if ref.UID != pod.UID {
		return forbidden(a, "the UID in the bound object reference (%s) does not match the UID in record. The object might have been deleted and then recreated", ref.UID)
	}
	if pod.Spec.NodeName != nodeName {
		return forbidden(a, "node requested token bound to a pod scheduled on a different node")
	}
	return nil
}

// admitOwnLease allows only the lease named after the node (the name of
// a create is in its body).
func admitOwnLease(nodeName string, a *admission.Attributes) error {
	name := a.Name
	if a.Operation == admission.Create {
		o, err := meta.Accessor(a.Object)
		if err != nil {
			return forbidden(a, "unable to access the object name")
		}
		name = o.GetName()
	}
	if name != nodeName {
		return forbidden(a, "can only access node lease with the same name as the requesting node")
	}
	return nil
}
