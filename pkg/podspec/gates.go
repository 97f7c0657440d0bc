package podspec

import (
	corev1 "k8s.io/api/core/v1"
)

// DropDisabledFields clears the fields of the alpha features kube v1.29
// has off by default (PodLifecycleSleepAction, InPlacePodVerticalScaling,
// UserNamespacesSupport, ProcMountType, MatchLabelKeysInPodAffinity,
// DynamicResourceAllocation, ClusterTrustBundleProjection), as kube's
// strategies do before validating, so that a write naming them stores
// nothing of them. A field the old spec (nil on create) already uses is
// kept, so that updates of such objects go through.
func DropDisabledFields(spec, old *corev1.PodSpec) {
	if !hostUsersInUse(old) {
		spec.HostUsers = nil
	}
	if !procMountInUse(old) {
		def := corev1.DefaultProcMount
		visitContainers(spec, func(c *corev1.Container) {
			if sc := c.SecurityContext; sc != nil && sc.ProcMount != nil {
				// Kube forces it to the default rather than nil: 1.12 stored
				// it non-nil, and clearing it would change stored objects.
				sc.ProcMount = &def
			}
		})
	}
	if spec.Affinity != nil && !matchLabelKeysInPodAffinityInUse(old) {
		for _, terms := range podAffinityTerms(spec.Affinity) {
			for _, t := range terms {
				t.MatchLabelKeys, t.MismatchLabelKeys = nil, nil
			}
		}
	}
	if old == nil || len(old.ResourceClaims) == 0 {
		spec.ResourceClaims = nil
		visitContainers(spec, func(c *corev1.Container) { c.Resources.Claims = nil })
	}
	if !clusterTrustBundleInUse(old) {
		for i := range spec.Volumes {
			if p := spec.Volumes[i].Projected; p != nil {
				for j := range p.Sources {
					p.Sources[j].ClusterTrustBundle = nil
				}
			}
		}
	}
	if !resizePolicyInUse(old) {
		visitContainers(spec, func(c *corev1.Container) { c.ResizePolicy = nil })
	}
	if !sleepActionInUse(old) {
		visitContainers(spec, func(c *corev1.Container) {
			if l := c.Lifecycle; l != nil {
				if l.PreStop != nil {
					l.PreStop.Sleep = nil
				}
				if l.PostStart != nil {
					l.PostStart.Sleep = nil
				}
			}
		})
	}
}

// visitContainers calls f with each init, regular and ephemeral container
// of spec, in that order.
func visitContainers(spec *corev1.PodSpec, f func(c *corev1.Container)) {
	if spec == nil {
		return
	}
	for i := range spec.InitContainers {
		f(&spec.InitContainers[i])
	}
	for i := range spec.Containers {
		f(&spec.Containers[i])
	}
	for i := range spec.EphemeralContainers {
		f((*corev1.Container)(&spec.EphemeralContainers[i].EphemeralContainerCommon))
	}
}

// anyContainer reports whether f holds for a container of spec.
func anyContainer(spec *corev1.PodSpec, f func(c *corev1.Container) bool) bool {
	found := false
	visitContainers(spec, func(c *corev1.Container) { found = found || f(c) })
	return found
}

func hostUsersInUse(spec *corev1.PodSpec) bool {
	return spec != nil && spec.HostUsers != nil
}

func procMountInUse(spec *corev1.PodSpec) bool {
	return anyContainer(spec, func(c *corev1.Container) bool {
		sc := c.SecurityContext
		return sc != nil && sc.ProcMount != nil && *sc.ProcMount != corev1.DefaultProcMount
	})
}

func resizePolicyInUse(spec *corev1.PodSpec) bool {
	return anyContainer(spec, func(c *corev1.Container) bool { return len(c.ResizePolicy) > 0 })
}

func sleepActionInUse(spec *corev1.PodSpec) bool {
	return anyContainer(spec, func(c *corev1.Container) bool {
		l := c.Lifecycle
		return l != nil && ((l.PreStop != nil && l.PreStop.Sleep != nil) || (l.PostStart != nil && l.PostStart.Sleep != nil))
	})
}

func clusterTrustBundleInUse(spec *corev1.PodSpec) bool {
	if spec == nil {
		return false
	}
	for _, v := range spec.Volumes {
		if v.Projected != nil {
			for _, s := range v.Projected.Sources {
				if s.ClusterTrustBundle != nil {
					return true
				}
			}
		}
	}
	return false
}

func matchLabelKeysInPodAffinityInUse(spec *corev1.PodSpec) bool {
	if spec == nil || spec.Affinity == nil {
		return false
	}
	for _, terms := range podAffinityTerms(spec.Affinity) {
		for _, t := range terms {
			if len(t.MatchLabelKeys) > 0 || len(t.MismatchLabelKeys) > 0 {
				return true
			}
		}
	}
	return false
}

// podAffinityTerms returns the pod (anti-)affinity terms of a, required
// and preferred, as pointers into a.
func podAffinityTerms(a *corev1.Affinity) [][]*corev1.PodAffinityTerm {
	var out [][]*corev1.PodAffinityTerm
	add := func(required []corev1.PodAffinityTerm, preferred []corev1.WeightedPodAffinityTerm) {
		var terms []*corev1.PodAffinityTerm
		for i := range required {
			terms = append(terms, &required[i])
		}
		for i := range preferred {
			terms = append(terms, &preferred[i].PodAffinityTerm)
		}
		out = append(out, terms)
	}
	if p := a.PodAffinity; p != nil {
		add(p.RequiredDuringSchedulingIgnoredDuringExecution, p.PreferredDuringSchedulingIgnoredDuringExecution)
	}
	if p := a.PodAntiAffinity; p != nil {
		add(p.RequiredDuringSchedulingIgnoredDuringExecution, p.PreferredDuringSchedulingIgnoredDuringExecution)
	}
	return out
}
