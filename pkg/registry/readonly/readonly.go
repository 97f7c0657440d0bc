// Package readonly registers the kinds kubectl expects every cluster to
// have (kubectl apply --prune's default list) that cronplane does not run:
// Pods, ReplicationControllers, PersistentVolumes and their claims,
// Ingresses and the apps/v1 workloads. Without nodes, a scheduler or
// their controllers, such objects would never do anything, so they are
// served read-only: discovery lists them with get, list and watch, and a
// client sees what kube answers for a kind with no objects (an empty
// list, a NotFound, a quiet watch), from the same keys kube uses, so
// objects a kube apiserver wrote to a shared etcd read as they are.
// Writes are not served (405).
package readonly

import (
	"context"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/cronplane/cronplane/pkg/codec"
	"github.com/cronplane/cronplane/pkg/registry/generic"
	"github.com/cronplane/cronplane/pkg/registry/rest"
)

// kind is one read-only kind: its names as kube's discovery gives them
// and the key segment kube stores it under.
type kind struct {
	gvk                  schema.GroupVersionKind
	plural, singular     string
	shortNames           []string
	categories           []string
	namespaced           bool
	storageResource      string
	newFunc, newListFunc func() runtime.Object
}

var all = []string{"all"}

var kinds = []kind{
	{corev1.SchemeGroupVersion.WithKind("Pod"), "pods", "pod", []string{"po"}, all, true, "",
		func() runtime.Object { return &corev1.Pod{} }, func() runtime.Object { return &corev1.PodList{} }},
	{corev1.SchemeGroupVersion.WithKind("ReplicationController"), "replicationcontrollers", "replicationcontroller", []string{"rc"}, all, true, "controllers",
		func() runtime.Object { return &corev1.ReplicationController{} }, func() runtime.Object { return &corev1.ReplicationControllerList{} }},
	{corev1.SchemeGroupVersion.WithKind("PersistentVolumeClaim"), "persistentvolumeclaims", "persistentvolumeclaim", []string{"pvc"}, nil, true, "",
		func() runtime.Object { return &corev1.PersistentVolumeClaim{} }, func() runtime.Object { return &corev1.PersistentVolumeClaimList{} }},
	{corev1.SchemeGroupVersion.WithKind("PersistentVolume"), "persistentvolumes", "persistentvolume", []string{"pv"}, nil, false, "",
		func() runtime.Object { return &corev1.PersistentVolume{} }, func() runtime.Object { return &corev1.PersistentVolumeList{} }},
	{networkingv1.SchemeGroupVersion.WithKind("Ingress"), "ingresses", "ingress", []string{"ing"}, nil, true, "ingress",
		func() runtime.Object { return &networkingv1.Ingress{} }, func() runtime.Object { return &networkingv1.IngressList{} }},
	{appsv1.SchemeGroupVersion.WithKind("DaemonSet"), "daemonsets", "daemonset", []string{"ds"}, all, true, "",
		func() runtime.Object { return &appsv1.DaemonSet{} }, func() runtime.Object { return &appsv1.DaemonSetList{} }},
	{appsv1.SchemeGroupVersion.WithKind("Deployment"), "deployments", "deployment", []string{"deploy"}, all, true, "",
		func() runtime.Object { return &appsv1.Deployment{} }, func() runtime.Object { return &appsv1.DeploymentList{} }},
	{appsv1.SchemeGroupVersion.WithKind("ReplicaSet"), "replicasets", "replicaset", []string{"rs"}, all, true, "",
		func() runtime.Object { return &appsv1.ReplicaSet{} }, func() runtime.Object { return &appsv1.ReplicaSetList{} }},
	{appsv1.SchemeGroupVersion.WithKind("StatefulSet"), "statefulsets", "statefulset", []string{"sts"}, all, true, "",
		func() runtime.Object { return &appsv1.StatefulSet{} }, func() runtime.Object { return &appsv1.StatefulSetList{} }},
}

// Resources registers the read-only kinds.
func Resources() []*generic.Resource {
	out := make([]*generic.Resource, 0, len(kinds))
	for _, k := range kinds {
		out = append(out, &generic.Resource{
			Resource: rest.Resource{
				GroupVersionKind: k.gvk,
				Plural:           k.plural,
				Singular:         k.singular,
				ShortNames:       k.shortNames,
				Categories:       k.categories,
				Namespaced:       k.namespaced,
				New:              k.newFunc,
				NewList:          k.newListFunc,
			},
			Codec:           codec.Protobuf(k.gvk, k.newFunc),
			Strategy:        generic.DefaultStrategy{},
			StorageResource: k.storageResource,
			Serve: func(s *generic.Store) (rest.Storage, map[string]rest.Storage) {
				return reader{s}, nil
			},
		})
	}
	return out
}

// reader serves the store's reads only.
type reader struct{ s *generic.Store }

var (
	_ rest.Getter  = reader{}
	_ rest.Lister  = reader{}
	_ rest.Watcher = reader{}
)

func (r reader) New() runtime.Object     { return r.s.New() }
func (r reader) NewList() runtime.Object { return r.s.NewList() }
func (r reader) NamespaceScoped() bool   { return r.s.NamespaceScoped() }

func (r reader) Get(ctx context.Context, namespace, name string, opts *metav1.GetOptions) (runtime.Object, error) {
	return r.s.Get(ctx, namespace, name, opts)
}

func (r reader) List(ctx context.Context, namespace string, opts *rest.ListOptions) (runtime.Object, error) {
	return r.s.List(ctx, namespace, opts)
}

func (r reader) Watch(ctx context.Context, namespace string, opts *rest.ListOptions) (watch.Interface, error) {
	return r.s.Watch(ctx, namespace, opts)
}
