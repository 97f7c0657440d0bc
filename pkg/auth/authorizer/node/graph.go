package node

import (
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/cronplane/cronplane/pkg/storage"
)

// Kind is a kind of object the graph relates to nodes.
type Kind int

const (
	Secret Kind = iota
	ConfigMap
	ServiceAccount
	PersistentVolumeClaim
	PersistentVolume
)

// ref names one object of a kind (PersistentVolumes have no namespace).
type ref struct {
	kind            Kind
	namespace, name string
}

// podKey names a pod.
type podKey struct{ namespace, name string }

// boundPod is what the graph keeps of a pod bound to a node.
type boundPod struct {
	node string
	refs []ref
}

// volume is what the graph keeps of a PersistentVolume with a claim.
type volume struct {
	claim   ref
	secrets []ref
}

// Graph relates secrets, config maps, service accounts, claims and
// volumes to the nodes whose pods use them, as kube's node authorizer
// graph does: node ← pod ← secret, config map, service account, claim;
// claim ← volume ← secret. It is fed the pods and volumes the
// apiserver stores (PodHandler, VolumeHandler) and read under a lock.
type Graph struct {
	mu sync.RWMutex
	// pods are the pods bound to a node.
	pods map[podKey]*boundPod
	// users are, for each object a bound pod refers to, those pods.
	users map[ref]map[podKey]struct{}
	// volumes are the PersistentVolumes with a claim, by name.
	volumes map[string]*volume
	// volumesOf are, for each claim and secret a volume refers to, those
	// volumes.
	volumesOf map[ref]map[string]struct{}
}

// NewGraph returns an empty graph.
func NewGraph() *Graph {
	return &Graph{
		pods:      map[podKey]*boundPod{},
		users:     map[ref]map[podKey]struct{}{},
		volumes:   map[string]*volume{},
		volumesOf: map[ref]map[string]struct{}{},
	}
}

// SetPod records a pod: bound to a node, it relates that node to what it
// refers to. A mirror pod refers to nothing, as kube's graph has it.
func (g *Graph) SetPod(pod *corev1.Pod) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.setPod(pod)
}

func (g *Graph) setPod(pod *corev1.Pod) {
	g.deletePod(podKey{pod.Namespace, pod.Name})
	if pod.Spec.NodeName == "" {
		return
	}
	key := podKey{pod.Namespace, pod.Name}
	p := &boundPod{node: pod.Spec.NodeName}
	if _, mirror := pod.Annotations[corev1.MirrorPodAnnotationKey]; !mirror {
		p.refs = podRefs(pod)
	}
	g.pods[key] = p
	for _, r := range p.refs {
		if g.users[r] == nil {
			g.users[r] = map[podKey]struct{}{}
		}
		g.users[r][key] = struct{}{}
	}
}

// DeletePod forgets a pod.
func (g *Graph) DeletePod(namespace, name string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.deletePod(podKey{namespace, name})
}

func (g *Graph) deletePod(key podKey) {
	p, ok := g.pods[key]
	if !ok {
		return
	}
	delete(g.pods, key)
	for _, r := range p.refs {
		delete(g.users[r], key)
		if len(g.users[r]) == 0 {
			delete(g.users, r)
		}
	}
}

// SetVolume records a PersistentVolume: with a claim, it relates the
// claim's users to the volume and to the secrets a kubelet reads for it.
func (g *Graph) SetVolume(pv *corev1.PersistentVolume) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.setVolume(pv)
}

func (g *Graph) setVolume(pv *corev1.PersistentVolume) {
	g.deleteVolume(pv.Name)
	if pv.Spec.ClaimRef == nil {
		return
	}
	v := &volume{
		claim:   ref{PersistentVolumeClaim, pv.Spec.ClaimRef.Namespace, pv.Spec.ClaimRef.Name},
		secrets: volumeSecrets(pv),
	}
	g.volumes[pv.Name] = v
	for _, r := range append([]ref{v.claim}, v.secrets...) {
		if g.volumesOf[r] == nil {
			g.volumesOf[r] = map[string]struct{}{}
		}
		g.volumesOf[r][pv.Name] = struct{}{}
	}
}

// DeleteVolume forgets a PersistentVolume.
func (g *Graph) DeleteVolume(name string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.deleteVolume(name)
}

func (g *Graph) deleteVolume(name string) {
	v, ok := g.volumes[name]
	if !ok {
		return
	}
	delete(g.volumes, name)
	for _, r := range append([]ref{v.claim}, v.secrets...) {
		delete(g.volumesOf[r], name)
		if len(g.volumesOf[r]) == 0 {
			delete(g.volumesOf, r)
		}
	}
}

// Related reports whether the object is used by a pod bound to node,
// directly or through a claim and its volume.
func (g *Graph) Related(node string, kind Kind, namespace, name string) bool {
	g.mu.RLock()
	defer g.mu.RUnlock()
	return g.related(node, ref{kind, namespace, name})
}

func (g *Graph) related(node string, r ref) bool {
	if r.kind == PersistentVolume {
		v, ok := g.volumes[r.name]
		return ok && g.usedOn(node, v.claim)
	}
	if g.usedOn(node, r) {
		return true
	}
	// A secret may be a volume's, and a claim's volume's users are the
	// claim's.
	if r.kind == Secret {
		for pv := range g.volumesOf[r] {
			if g.usedOn(node, g.volumes[pv].claim) {
				return true
			}
		}
	}
	return false
}

// usedOn reports whether a pod bound to node refers to r.
func (g *Graph) usedOn(node string, r ref) bool {
	for key := range g.users[r] {
		if g.pods[key].node == node {
			return true
		}
	}
	return false
}

// podRefs are the objects a pod refers to, in its namespace: its service
// account, the secrets and config maps of its image pull secrets,
// environment and volumes, and its claims (those of its ephemeral
// volumes are named after the pod and the volume).
func podRefs(pod *corev1.Pod) []ref {
	var out []ref
	add := func(kind Kind, name string) {
		if name != "" {
			out = append(out, ref{kind, pod.Namespace, name})
		}
	}
	add(ServiceAccount, pod.Spec.ServiceAccountName)
	for _, s := range pod.Spec.ImagePullSecrets {
		add(Secret, s.Name)
	}
	env := func(from []corev1.EnvFromSource, vars []corev1.EnvVar) {
		for _, e := range from {
			if e.SecretRef != nil {
				add(Secret, e.SecretRef.Name)
			}
			if e.ConfigMapRef != nil {
				add(ConfigMap, e.ConfigMapRef.Name)
			}
		}
		for _, v := range vars {
			if v.ValueFrom == nil {
				continue
			}
			if v.ValueFrom.SecretKeyRef != nil {
				add(Secret, v.ValueFrom.SecretKeyRef.Name)
			}
			if v.ValueFrom.ConfigMapKeyRef != nil {
				add(ConfigMap, v.ValueFrom.ConfigMapKeyRef.Name)
			}
		}
	}
	for _, c := range pod.Spec.InitContainers {
		env(c.EnvFrom, c.Env)
	}
	for _, c := range pod.Spec.Containers {
		env(c.EnvFrom, c.Env)
	}
	for _, c := range pod.Spec.EphemeralContainers {
		env(c.EnvFrom, c.Env)
	}
	for i := range pod.Spec.Volumes {
		v := &pod.Spec.Volumes[i]
		for _, s := range volumeSourceSecrets(&v.VolumeSource) {
			add(Secret, s)
		}
		switch {
		case v.ConfigMap != nil:
			add(ConfigMap, v.ConfigMap.Name)
		case v.Projected != nil:
			for _, src := range v.Projected.Sources {
				if src.ConfigMap != nil {
					add(ConfigMap, src.ConfigMap.Name)
				}
			}
		case v.PersistentVolumeClaim != nil:
			add(PersistentVolumeClaim, v.PersistentVolumeClaim.ClaimName)
		case v.Ephemeral != nil:
			add(PersistentVolumeClaim, pod.Name+"-"+v.Name)
		}
	}
	return out
}

// volumeSourceSecrets are the secrets a pod's volume names.
func volumeSourceSecrets(v *corev1.VolumeSource) []string {
	switch {
	case v.Secret != nil:
		return []string{v.Secret.SecretName}
	case v.Projected != nil:
		var out []string
		for _, src := range v.Projected.Sources {
			if src.Secret != nil {
				out = append(out, src.Secret.Name)
			}
		}
		return out
	case v.AzureFile != nil:
		return []string{v.AzureFile.SecretName}
	case v.CephFS != nil && v.CephFS.SecretRef != nil:
		return []string{v.CephFS.SecretRef.Name}
	case v.Cinder != nil && v.Cinder.SecretRef != nil:
		return []string{v.Cinder.SecretRef.Name}
	case v.FlexVolume != nil && v.FlexVolume.SecretRef != nil:
		return []string{v.FlexVolume.SecretRef.Name}
	case v.RBD != nil && v.RBD.SecretRef != nil:
		return []string{v.RBD.SecretRef.Name}
	case v.ScaleIO != nil && v.ScaleIO.SecretRef != nil:
		return []string{v.ScaleIO.SecretRef.Name}
	case v.ISCSI != nil && v.ISCSI.SecretRef != nil:
		return []string{v.ISCSI.SecretRef.Name}
	case v.StorageOS != nil && v.StorageOS.SecretRef != nil:
		return []string{v.StorageOS.SecretRef.Name}
	case v.CSI != nil && v.CSI.NodePublishSecretRef != nil:
		return []string{v.CSI.NodePublishSecretRef.Name}
	}
	return nil
}

// volumeSecrets are the secrets a kubelet reads to mount a volume: in
// the namespace the source names, else the claim's. The CSI controller's
// secrets are not the kubelet's.
func volumeSecrets(pv *corev1.PersistentVolume) []ref {
	claimNS := pv.Spec.ClaimRef.Namespace
	var out []ref
	add := func(namespace, name string) {
		if name != "" {
			out = append(out, ref{Secret, namespace, name})
		}
	}
	or := func(namespace string) string {
		if namespace != "" {
			return namespace
		}
		return claimNS
	}
	s := &pv.Spec.PersistentVolumeSource
	switch {
	case s.AzureFile != nil:
		ns := claimNS
		if s.AzureFile.SecretNamespace != nil && *s.AzureFile.SecretNamespace != "" {
			ns = *s.AzureFile.SecretNamespace
		}
		add(ns, s.AzureFile.SecretName)
	case s.CephFS != nil && s.CephFS.SecretRef != nil:
		add(or(s.CephFS.SecretRef.Namespace), s.CephFS.SecretRef.Name)
	case s.Cinder != nil && s.Cinder.SecretRef != nil:
		add(s.Cinder.SecretRef.Namespace, s.Cinder.SecretRef.Name)
	case s.FlexVolume != nil && s.FlexVolume.SecretRef != nil:
		add(or(s.FlexVolume.SecretRef.Namespace), s.FlexVolume.SecretRef.Name)
	case s.RBD != nil && s.RBD.SecretRef != nil:
		add(or(s.RBD.SecretRef.Namespace), s.RBD.SecretRef.Name)
	case s.ScaleIO != nil && s.ScaleIO.SecretRef != nil:
		add(or(s.ScaleIO.SecretRef.Namespace), s.ScaleIO.SecretRef.Name)
	case s.ISCSI != nil && s.ISCSI.SecretRef != nil:
		add(or(s.ISCSI.SecretRef.Namespace), s.ISCSI.SecretRef.Name)
	case s.StorageOS != nil && s.StorageOS.SecretRef != nil:
		add(s.StorageOS.SecretRef.Namespace, s.StorageOS.SecretRef.Name)
	case s.CSI != nil:
		for _, r := range []*corev1.SecretReference{s.CSI.NodePublishSecretRef, s.CSI.NodeStageSecretRef, s.CSI.NodeExpandSecretRef} {
			if r != nil {
				add(r.Namespace, r.Name)
			}
		}
	}
	return out
}

// PodHandler feeds the graph the stored pods; it implements
// informer.Handler.
type PodHandler struct{ G *Graph }

func (h PodHandler) Replace(objs []runtime.Object) {
	h.G.mu.Lock()
	defer h.G.mu.Unlock()
	h.G.pods = map[podKey]*boundPod{}
	h.G.users = map[ref]map[podKey]struct{}{}
	for _, o := range objs {
		if pod, ok := storage.Unwrap(o).(*corev1.Pod); ok {
			h.G.setPod(pod)
		}
	}
}

func (h PodHandler) Set(obj runtime.Object) {
	if pod, ok := storage.Unwrap(obj).(*corev1.Pod); ok {
		h.G.SetPod(pod)
	}
}

func (h PodHandler) Delete(obj runtime.Object) {
	if pod, ok := storage.Unwrap(obj).(*corev1.Pod); ok {
		h.G.DeletePod(pod.Namespace, pod.Name)
	}
}

// VolumeHandler feeds the graph the stored PersistentVolumes; it
// implements informer.Handler.
type VolumeHandler struct{ G *Graph }

func (h VolumeHandler) Replace(objs []runtime.Object) {
	h.G.mu.Lock()
	defer h.G.mu.Unlock()
	h.G.volumes = map[string]*volume{}
	h.G.volumesOf = map[ref]map[string]struct{}{}
	for _, o := range objs {
		if pv, ok := storage.Unwrap(o).(*corev1.PersistentVolume); ok {
			h.G.setVolume(pv)
		}
	}
}

func (h VolumeHandler) Set(obj runtime.Object) {
	if pv, ok := storage.Unwrap(obj).(*corev1.PersistentVolume); ok {
		h.G.SetVolume(pv)
	}
}

func (h VolumeHandler) Delete(obj runtime.Object) {
	if pv, ok := storage.Unwrap(obj).(*corev1.PersistentVolume); ok {
		h.G.DeleteVolume(pv.Name)
	}
}
