// Package coordination registers coordination.k8s.io/v1 leases, which
// controllers use for leader election.
package coordination

import (
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/cronplane/cronplane/pkg/codec"
	"github.com/cronplane/cronplane/pkg/registry/generic"
	"github.com/cronplane/cronplane/pkg/registry/rest"
)

// Resources registers leases.
func Resources() []*generic.Resource {
	gvk := coordinationv1.SchemeGroupVersion.WithKind("Lease")
	newFunc := func() runtime.Object { return &coordinationv1.Lease{} }
	return []*generic.Resource{{
		Resource: rest.Resource{
			GroupVersionKind: gvk,
			Plural:           "leases",
			Singular:         "lease",
			Namespaced:       true,
			New:              newFunc,
			NewList:          func() runtime.Object { return &coordinationv1.LeaseList{} },
			Table: &rest.TableSpec{
				Columns: []metav1.TableColumnDefinition{
					rest.NameColumn,
					{Name: "Holder", Type: "string", Description: coordinationv1.LeaseSpec{}.SwaggerDoc()["holderIdentity"]},
					rest.AgeColumn,
				},
				Cells: func(obj runtime.Object, now time.Time) []interface{} {
					l := obj.(*coordinationv1.Lease)
					holder := ""
					if l.Spec.HolderIdentity != nil {
						holder = *l.Spec.HolderIdentity
					}
					return []interface{}{l.Name, holder, rest.Age(l.CreationTimestamp, now)}
				},
			},
		},
		Codec:    codec.Protobuf(gvk, newFunc),
		Strategy: strategy{},
	}}
}

type strategy struct{ generic.DefaultStrategy }

// AllowCreateOnUpdate: a PUT of a missing Lease creates it, as in kube.
func (strategy) AllowCreateOnUpdate() bool { return true }

func (strategy) Validate(obj runtime.Object) field.ErrorList {
	return validate(obj.(*coordinationv1.Lease))
}

func (strategy) ValidateUpdate(obj, _ runtime.Object) field.ErrorList {
	return validate(obj.(*coordinationv1.Lease))
}

func validate(l *coordinationv1.Lease) field.ErrorList {
	var errs field.ErrorList
	spec := field.NewPath("spec")
	if d := l.Spec.LeaseDurationSeconds; d != nil && *d <= 0 {
		errs = append(errs, field.Invalid(spec.Child("leaseDurationSeconds"), *d, "must be greater than 0"))
	}
	if t := l.Spec.LeaseTransitions; t != nil && *t < 0 {
		errs = append(errs, field.Invalid(spec.Child("leaseTransitions"), *t, "must be greater than or equal to 0"))
	}
	return errs
}
