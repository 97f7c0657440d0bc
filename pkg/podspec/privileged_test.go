package podspec

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
)

func TestSetAllowPrivileged_DecidesWhetherPrivilegedContainersAreRefused(t *testing.T) {
	t.Cleanup(func() { SetAllowPrivileged(false) })
	sc := &corev1.SecurityContext{Privileged: ptr.To(true)}
	for _, allow := range []bool{false, true} {
		SetAllowPrivileged(allow)
		for name, opts := range map[string]Options{"create": TemplateOptions(nil), "update": OptionsFor(&corev1.PodSpec{}, nil)} {
			if errs := validateSecurityContext(sc, nil, opts); (len(errs) == 0) != allow {
				t.Errorf("allow-privileged=%v, %s: errors %v", allow, name, errs)
			}
		}
	}
}
