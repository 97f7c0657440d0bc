package bootstrap

import (
	"strconv"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// autoUpdate reports whether a stored bootstrap object may be rewritten from
// the bootstrap copy: the annotation decides when it parses as a boolean;
// otherwise only an object nobody has changed since its creation
// (generation 1) is updated.
func autoUpdate(m metav1.Object) bool {
	if v, err := strconv.ParseBool(m.GetAnnotations()[flowcontrolv1.AutoUpdateAnnotationKey]); err == nil {
		return v
	}
	return m.GetGeneration() == 1
}

// annotatedTrue reports whether the auto-update annotation already says true.
func annotatedTrue(m metav1.Object) bool {
	v, err := strconv.ParseBool(m.GetAnnotations()[flowcontrolv1.AutoUpdateAnnotationKey])
	return err == nil && v
}

func setAnnotatedTrue(m metav1.Object) {
	a := m.GetAnnotations()
	if a == nil {
		a = map[string]string{}
	}
	a[flowcontrolv1.AutoUpdateAnnotationKey] = "true"
	m.SetAnnotations(a)
}

// ReviseFlowSchema returns the object to write back when the stored FlowSchema
// current must be brought in line with the bootstrap copy desired, or false
// when it is to be left alone. Mandatory objects are always revised;
// suggested ones only while auto-update is allowed.
func ReviseFlowSchema(current, desired *flowcontrolv1.FlowSchema, mandatory bool) (*flowcontrolv1.FlowSchema, bool) {
	if !mandatory && !autoUpdate(current) {
		return nil, false
	}
	if annotatedTrue(current) && equality.Semantic.DeepEqual(current.Spec, desired.Spec) {
		return nil, false
	}
	out := current.DeepCopy()
	out.Spec = *desired.Spec.DeepCopy()
	setAnnotatedTrue(out)
	return out, true
}

// RevisePriorityLevel is ReviseFlowSchema for PriorityLevelConfigurations.
// The exempt level's nominalConcurrencyShares and lendablePercent are the
// operator's to tune, so they are kept as stored.
func RevisePriorityLevel(current, desired *flowcontrolv1.PriorityLevelConfiguration, mandatory bool) (*flowcontrolv1.PriorityLevelConfiguration, bool) {
	if !mandatory && !autoUpdate(current) {
		return nil, false
	}
	want := desired.Spec.DeepCopy()
	if desired.Name == flowcontrolv1.PriorityLevelConfigurationNameExempt && current.Spec.Exempt != nil && want.Exempt != nil {
		want.Exempt.NominalConcurrencyShares = current.Spec.Exempt.NominalConcurrencyShares
		want.Exempt.LendablePercent = current.Spec.Exempt.LendablePercent
	}
	if annotatedTrue(current) && equality.Semantic.DeepEqual(current.Spec, *want) {
		return nil, false
	}
	out := current.DeepCopy()
	out.Spec = *want
	setAnnotatedTrue(out)
	return out, true
}

// Obsolete reports whether a stored object that is no longer part of the
// bootstrap configuration is to be deleted: only objects still marked for
// auto-update are, the ones an operator took over are kept.
func Obsolete(m metav1.Object) bool {
	return annotatedTrue(m)
}

// Names returns the names of all bootstrap FlowSchemas and priority levels.
func Names() (flowSchemas, levels map[string]bool) {
	flowSchemas, levels = map[string]bool{}, map[string]bool{}
	for _, get := range []func() ([]*flowcontrolv1.FlowSchema, []*flowcontrolv1.PriorityLevelConfiguration){Mandatory, Suggested} {
		fs, pl := get()
		for _, o := range fs {
			flowSchemas[o.Name] = true
		}
		for _, o := range pl {
			levels[o.Name] = true
		}
	}
	return flowSchemas, levels
}
