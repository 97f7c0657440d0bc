package core

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/cronplane/cronplane/pkg/registry/generic"
	"github.com/cronplane/cronplane/pkg/registry/rest"
	"github.com/cronplane/cronplane/pkg/storage"
)

// bindingDescription is what pods/binding takes.
var bindingDescription = func() *rest.Resource {
	r := &rest.Resource{
		GroupVersionKind: corev1.SchemeGroupVersion.WithKind("Binding"),
		Plural:           "bindings",
		Singular:         "binding",
		Namespaced:       true,
		New:              func() runtime.Object { return &corev1.Binding{} },
	}
	// Completed once: every server in the process shares it.
	r.Complete()
	return r
}()

// bindingStorage serves pods/binding: a POST of a Binding assigns the
// pod to the target node, as a scheduler does, and answers a Success
// Status. The pod is changed in storage directly, as kube changes it:
// the pod's update rules, which fix spec.nodeName, do not apply.
type bindingStorage struct{ pods *generic.Store }

var (
	_ rest.NamedCreater = (*bindingStorage)(nil)
	_ rest.Describer    = (*bindingStorage)(nil)
)

func (b *bindingStorage) New() runtime.Object      { return &corev1.Binding{} }
func (b *bindingStorage) Describe() *rest.Resource { return bindingDescription }

// The codes kube puts in the Status it answers a binding or an eviction
// with: 201 for success, as the answer to a POST; 500 for a Binding that
// fails validation, which kube reports as an error of no known kind.
const (
	createdCode       = 201
	internalErrorCode = 500
)

var bindingsResource = schema.GroupResource{Resource: "pods/binding"}

// Create binds the pod name: the body names the same pod, targets a node
// by name, and may carry the pod's uid and resourceVersion as
// preconditions and annotations to add. A pod that is bound already,
// being deleted or still gated is refused with kube's 409.
func (b *bindingStorage) Create(ctx context.Context, namespace, name string, obj runtime.Object, validate rest.ValidateObjectFunc, opts *metav1.CreateOptions) (runtime.Object, error) {
	binding := obj.(*corev1.Binding)
	if binding.Name != name {
		return nil, apierrors.NewBadRequest("name in URL does not match name in Binding object")
	}
	if errs := validateBinding(binding); len(errs) > 0 {
		// kube answers its aggregated errors as an error without a reason.
		return nil, &apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusFailure, Code: internalErrorCode, Message: errs.ToAggregate().Error()}}
	}
	if validate != nil {
		if err := validate(ctx, binding.DeepCopy()); err != nil {
			return nil, err
		}
	}
	var pre *storage.Preconditions
	if binding.UID != "" || binding.ResourceVersion != "" {
		pre = &storage.Preconditions{}
		if binding.UID != "" {
			uid := types.UID(binding.UID)
			pre.UID = &uid
		}
		if binding.ResourceVersion != "" {
			rv := binding.ResourceVersion
			pre.ResourceVersion = &rv
		}
	}
	node := binding.Target.Name
	_, err := b.pods.UpdateStored(ctx, namespace, name, pre, len(opts.DryRun) > 0, func(obj runtime.Object) error {
		pod := obj.(*corev1.Pod)
		var refusal string
		switch {
		case pod.DeletionTimestamp != nil:
			refusal = fmt.Sprintf("pod %s is being deleted, cannot be assigned to a host", pod.Name)
		case pod.Spec.NodeName != "":
			refusal = fmt.Sprintf("pod %v is already assigned to node %q", pod.Name, pod.Spec.NodeName)
		case len(pod.Spec.SchedulingGates) != 0:
			refusal = fmt.Sprintf("pod %v has non-empty .spec.schedulingGates", pod.Name)
		}
		if refusal != "" {
			return apierrors.NewConflict(bindingsResource, pod.Name, fmt.Errorf("%s", refusal))
		}
		pod.Spec.NodeName = node
		if len(binding.Annotations) > 0 && pod.Annotations == nil {
			pod.Annotations = map[string]string{}
		}
		for k, v := range binding.Annotations {
			pod.Annotations[k] = v
		}
		setPodCondition(&pod.Status, corev1.PodCondition{Type: corev1.PodScheduled, Status: corev1.ConditionTrue}, metav1.Now())
		return nil
	})
	if err != nil {
		return nil, err
	}
	return &metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}, Status: metav1.StatusSuccess, Code: createdCode}, nil
}

// validateBinding: the target is a node, named.
func validateBinding(b *corev1.Binding) field.ErrorList {
	var errs field.ErrorList
	target := field.NewPath("target")
	if k := b.Target.Kind; k != "" && k != "Node" {
		errs = append(errs, field.NotSupported(target.Child("kind"), k, []string{"Node", "<empty>"}))
	}
	if b.Target.Name == "" {
		errs = append(errs, field.Required(target.Child("name"), ""))
	}
	return errs
}

// setPodCondition sets a condition of the pod's status: a new one, or a
// change of an existing one, takes now as its transition time when its
// status changes.
func setPodCondition(status *corev1.PodStatus, c corev1.PodCondition, now metav1.Time) {
	for i := range status.Conditions {
		old := &status.Conditions[i]
		if old.Type != c.Type {
			continue
		}
		c.LastTransitionTime = old.LastTransitionTime
		if old.Status != c.Status || c.LastTransitionTime.IsZero() {
			c.LastTransitionTime = now
		}
		status.Conditions[i] = c
		return
	}
	c.LastTransitionTime = now
	status.Conditions = append(status.Conditions, c)
}
