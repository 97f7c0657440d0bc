package apiextensions

import (
	"context"
	"fmt"
	"strings"
	"time"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	apiextensionsv1 "github.com/cronplane/cronplane/pkg/apis/apiextensions/v1"
	"github.com/cronplane/cronplane/pkg/apply"
	"github.com/cronplane/cronplane/pkg/registry/generic"
	"github.com/cronplane/cronplane/pkg/registry/rest"
	"github.com/cronplane/cronplane/pkg/storage"
)

// ScaleStorage serves a custom resource's scale subresource: the
// autoscaling/v1 Scale read from, and its replicas written to, the paths
// the definition names. A write is recorded in the object's managedFields
// as kube records it, through the Scale's own fields.
type ScaleStorage struct {
	store  *generic.Store
	paths  apiextensionsv1.CustomResourceSubresourceScale
	fields *apply.ScaleFields
}

var (
	_ rest.Patcher   = (*ScaleStorage)(nil)
	_ rest.Describer = (*ScaleStorage)(nil)
)

var scaleDescription = func() *rest.Resource {
	r := &rest.Resource{
		GroupVersionKind: autoscalingv1.SchemeGroupVersion.WithKind("Scale"),
		Plural:           "scales",
		Singular:         "scale",
		Namespaced:       true,
		New:              func() runtime.Object { return &autoscalingv1.Scale{} },
	}
	// Completed once: every server in the process shares it.
	r.Complete()
	return r
}()

// scaleManager keeps the managedFields of a Scale while it is written.
var scaleManager = func() *apply.Manager {
	m, err := apply.NewManager(scaleDescription.Schema, &autoscalingv1.Scale{}, autoscalingv1.SchemeGroupVersion.String(), nil)
	if err != nil {
		panic(fmt.Sprintf("the Scale's field manager: %v", err))
	}
	return m
}()

// scaleFields converts the managedFields of a definition's objects served
// as version to and from their Scale's: each version's replicas path, if
// it has a scale subresource.
func scaleFields(crd *apiextensionsv1.CustomResourceDefinition, version string) *apply.ScaleFields {
	paths := map[string]string{}
	for _, v := range crd.Spec.Versions {
		gv := crd.Spec.Group + "/" + v.Name
		paths[gv] = ""
		if v.Subresources != nil && v.Subresources.Scale != nil {
			paths[gv] = v.Subresources.Scale.SpecReplicasPath
		}
	}
	return apply.NewScaleFields(crd.Spec.Group+"/"+version, paths)
}

func (s *ScaleStorage) New() runtime.Object      { return &autoscalingv1.Scale{} }
func (s *ScaleStorage) Describe() *rest.Resource { return scaleDescription }

// Get returns the object's Scale.
func (s *ScaleStorage) Get(ctx context.Context, namespace, name string, opts *metav1.GetOptions) (runtime.Object, error) {
	obj, err := s.store.Get(ctx, namespace, name, opts)
	if err != nil {
		return nil, err
	}
	u := storage.Unwrap(obj).(*unstructured.Unstructured)
	// As kube, an object without its spec replicas has no Scale to read,
	// though a write of one sets them.
	if _, found, _ := unstructured.NestedFieldNoCopy(u.Object, splitPath(s.paths.SpecReplicasPath)...); !found {
		return nil, apierrors.NewInternalError(fmt.Errorf("the spec replicas field %q does not exist", s.paths.SpecReplicasPath))
	}
	return s.scaleOf(u)
}

// Update writes the Scale's spec.replicas into the object, checking the
// Scale's resourceVersion against the object's.
func (s *ScaleStorage) Update(ctx context.Context, namespace, name string, info rest.UpdatedObjectInfo, _ rest.ValidateObjectFunc, _ rest.ValidateObjectUpdateFunc, _ bool, opts *metav1.UpdateOptions) (runtime.Object, bool, error) {
	out, _, err := s.store.Update(ctx, namespace, name, scaleUpdate{info: info, s: s, manager: opts.FieldManager}, nil, nil, false, opts)
	if err != nil {
		return nil, false, err
	}
	scale, err := s.scaleOf(storage.Unwrap(out).(*unstructured.Unstructured))
	return scale, false, err
}

type scaleUpdate struct {
	info    rest.UpdatedObjectInfo
	s       *ScaleStorage
	manager string
}

func (u scaleUpdate) Preconditions() *metav1.Preconditions { return u.info.Preconditions() }

func (u scaleUpdate) UpdatedObject(ctx context.Context, current runtime.Object) (runtime.Object, error) {
	if current == nil {
		return nil, apierrors.NewNotFound(u.s.store.Resource.GroupResource(), "")
	}
	obj := current.DeepCopyObject().(*unstructured.Unstructured)
	old, err := u.s.scaleOf(obj)
	if err != nil {
		return nil, err
	}
	if old.ManagedFields, err = u.s.fields.ToScale(obj.GetManagedFields()); err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	newObj, err := u.info.UpdatedObject(ctx, old)
	if err != nil {
		return nil, err
	}
	scale, ok := newObj.(*autoscalingv1.Scale)
	if !ok {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("expected input object type to be Scale, but %T", newObj))
	}
	if scale.Spec.Replicas < 0 {
		return nil, apierrors.NewInvalid(autoscalingv1.SchemeGroupVersion.WithKind("Scale").GroupKind(), scale.Name,
			field.ErrorList{field.Invalid(field.NewPath("spec", "replicas"), scale.Spec.Replicas, "must be greater than or equal to 0")})
	}
	if rv := scale.ResourceVersion; rv != "" && rv != obj.GetResourceVersion() {
		return nil, apierrors.NewConflict(u.s.store.Resource.GroupResource(), obj.GetName(), fmt.Errorf(generic.OptimisticLockErrorMsg))
	}
	if err := unstructured.SetNestedField(obj.Object, int64(scale.Spec.Replicas), splitPath(u.s.paths.SpecReplicasPath)...); err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	if err := scaleManager.Update(old, scale, u.manager, "scale", time.Now()); err != nil {
		return nil, err
	}
	entries, err := u.s.fields.FromScale(obj.GetManagedFields(), scale.ManagedFields)
	if err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	obj.SetManagedFields(entries)
	return obj, nil
}

func (s *ScaleStorage) scaleOf(obj *unstructured.Unstructured) (*autoscalingv1.Scale, error) {
	spec, _, err := unstructured.NestedInt64(obj.Object, splitPath(s.paths.SpecReplicasPath)...)
	if err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	status, _, _ := unstructured.NestedInt64(obj.Object, splitPath(s.paths.StatusReplicasPath)...)
	scale := &autoscalingv1.Scale{
		TypeMeta: metav1.TypeMeta{APIVersion: "autoscaling/v1", Kind: "Scale"},
		ObjectMeta: metav1.ObjectMeta{Name: obj.GetName(), Namespace: obj.GetNamespace(), UID: obj.GetUID(),
			ResourceVersion: obj.GetResourceVersion(), CreationTimestamp: obj.GetCreationTimestamp()},
		Spec:   autoscalingv1.ScaleSpec{Replicas: int32(spec)},
		Status: autoscalingv1.ScaleStatus{Replicas: int32(status)},
	}
	if p := s.paths.LabelSelectorPath; p != nil && *p != "" {
		scale.Status.Selector, _, _ = unstructured.NestedString(obj.Object, splitPath(*p)...)
	}
	return scale, nil
}

func splitPath(p string) []string { return strings.Split(strings.TrimPrefix(p, "."), ".") }
