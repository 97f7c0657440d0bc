package flowcontrol

import (
	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	flowcontrolv1beta3 "k8s.io/api/flowcontrol/v1beta3"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/cronplane/cronplane/pkg/registry/generic"
)

// conversionFailed reports an object that does not convert to v1, which
// only a broken registration causes.
func conversionFailed(err error) field.ErrorList {
	return field.ErrorList{field.InternalError(nil, err)}
}

// flowSchemaStrategy validates FlowSchemas of either version as v1.
type flowSchemaStrategy struct {
	generic.SpecStatusStrategy
	toV1 func(runtime.Object) (*flowcontrolv1.FlowSchema, error)
}

func (s flowSchemaStrategy) Validate(obj runtime.Object) field.ErrorList {
	fs, err := s.toV1(obj)
	if err != nil {
		return conversionFailed(err)
	}
	return validateFlowSchema(fs)
}

func (s flowSchemaStrategy) ValidateUpdate(obj, _ runtime.Object) field.ErrorList {
	return s.Validate(obj)
}

// flowSchemaStatusStrategy writes the status only: metadata, like the
// spec, is kept from the stored object, as kube does for these kinds.
func flowSchemaStatusStrategy(toV1 func(runtime.Object) (*flowcontrolv1.FlowSchema, error)) generic.StatusStrategy {
	return generic.StatusStrategy{
		KeepMetadata: true,
		ValidateStatus: func(obj, _ runtime.Object) field.ErrorList {
			fs, err := toV1(obj)
			if err != nil {
				return conversionFailed(err)
			}
			return validateFlowSchemaStatus(&fs.Status)
		},
	}
}

// levelStrategy validates priority levels of either version as v1; beta3
// marks a v1beta3 level's meant zero shares as kube stores them.
type levelStrategy struct {
	generic.SpecStatusStrategy
	toV1  func(runtime.Object) (*flowcontrolv1.PriorityLevelConfiguration, error)
	beta3 bool
}

func (s levelStrategy) PrepareForCreate(obj runtime.Object) {
	s.SpecStatusStrategy.PrepareForCreate(obj)
	s.remark(obj)
}

func (s levelStrategy) PrepareForUpdate(obj, old runtime.Object) {
	s.SpecStatusStrategy.PrepareForUpdate(obj, old)
	s.remark(obj)
}

// remark sets the v1beta3 zero-shares mark exactly when the shares are 0,
// as kube's conversion through its internal version leaves it.
func (s levelStrategy) remark(obj runtime.Object) {
	if !s.beta3 {
		return
	}
	pl := obj.(*flowcontrolv1beta3.PriorityLevelConfiguration)
	delete(pl.Annotations, flowcontrolv1beta3.PriorityLevelPreserveZeroConcurrencySharesKey)
	if len(pl.Annotations) == 0 {
		pl.Annotations = nil
	}
	markZeroShares(pl)
}

func (s levelStrategy) Validate(obj runtime.Object) field.ErrorList {
	pl, err := s.toV1(obj)
	if err != nil {
		return conversionFailed(err)
	}
	return validateLevel(pl, false)
}

// ValidateUpdate allows 0 shares to a level that has them already.
func (s levelStrategy) ValidateUpdate(obj, old runtime.Object) field.ErrorList {
	pl, err := s.toV1(obj)
	if err != nil {
		return conversionFailed(err)
	}
	was, err := s.toV1(old)
	if err != nil {
		return conversionFailed(err)
	}
	zero := was.Spec.Limited != nil && was.Spec.Limited.NominalConcurrencyShares != nil && *was.Spec.Limited.NominalConcurrencyShares == 0
	return validateLevel(pl, zero)
}

func levelStatusStrategy(toV1 func(runtime.Object) (*flowcontrolv1.PriorityLevelConfiguration, error)) generic.StatusStrategy {
	return generic.StatusStrategy{
		KeepMetadata: true,
		ValidateStatus: func(obj, _ runtime.Object) field.ErrorList {
			pl, err := toV1(obj)
			if err != nil {
				return conversionFailed(err)
			}
			return validateLevelStatus(&pl.Status)
		},
	}
}
