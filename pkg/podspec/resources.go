package podspec

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

const hugePagesPrefix = "hugepages-"

var (
	standardResources = sets.New("cpu", "memory", "ephemeral-storage", "requests.cpu", "requests.memory",
		"requests.ephemeral-storage", "limits.cpu", "limits.memory", "limits.ephemeral-storage", "pods", "resourcequotas",
		"services", "replicationcontrollers", "secrets", "configmaps", "persistentvolumeclaims", "storage",
		"requests.storage", "services.nodeports", "services.loadbalancers")
	standardContainerResources = sets.New("cpu", "memory", "ephemeral-storage")
	integerResources           = sets.New("pods", "resourcequotas", "services", "replicationcontrollers", "secrets",
		"configmaps", "persistentvolumeclaims", "services.nodeports", "services.loadbalancers")
)

// nativeResource: unprefixed names and kubernetes.io's are kube's own.
func nativeResource(name string) bool {
	return !strings.Contains(name, "/") || strings.Contains(name, "kubernetes.io/")
}

func hugePages(name string) bool { return strings.HasPrefix(name, hugePagesPrefix) }

// extendedResource: a device plugin's resource, counted in whole units.
func extendedResource(name string) bool {
	if nativeResource(name) || strings.HasPrefix(name, "requests.") {
		return false
	}
	return len(validation.IsQualifiedName("requests."+name)) == 0
}

// overcommitAllowed: requests may be below limits, except for hugepages
// and extended resources.
func overcommitAllowed(name string) bool { return nativeResource(name) && !hugePages(name) }

func validateContainerResourceName(name string, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, msg := range validation.IsQualifiedName(name) {
		errs = append(errs, field.Invalid(path, corev1.ResourceName(name), msg))
	}
	unprefixed := !strings.Contains(name, "/")
	if len(errs) == 0 && unprefixed && !standardResources.Has(name) && !hugePages(name) && !strings.HasPrefix(name, "requests.hugepages-") {
		errs = append(errs, field.Invalid(path, corev1.ResourceName(name), "must be a standard resource type or fully qualified"))
	}
	switch {
	case unprefixed && !standardContainerResources.Has(name) && !hugePages(name):
		errs = append(errs, field.Invalid(path, corev1.ResourceName(name), "must be a standard resource for containers"))
	case !unprefixed && !nativeResource(name) && !extendedResource(name):
		errs = append(errs, field.Invalid(path, corev1.ResourceName(name), "doesn't follow extended resource name standard"))
	}
	return errs
}

func validateQuantity(name string, q resource.Quantity, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if q.Cmp(resource.Quantity{}) < 0 {
		errs = append(errs, field.Invalid(path, q.String(), apivalidation.IsNegativeErrorMsg))
	}
	if (integerResources.Has(name) || extendedResource(name)) && q.MilliValue()%1000 != 0 {
		errs = append(errs, field.Invalid(path, q, "must be an integer"))
	}
	return errs
}

// hugePagesError refuses a hugepages quantity that is not a whole number
// of pages.
func hugePagesError(name string, q resource.Quantity, opts Options) error {
	if opts.AllowIndivisibleHugePagesValues {
		return nil
	}
	size, err := resource.ParseQuantity(strings.TrimPrefix(name, hugePagesPrefix))
	if err != nil || size.Sign() <= 0 || size.MilliValue()%1000 != 0 || q.Value()%size.Value() != 0 {
		return fmt.Errorf("%s is not positive integer multiple of %s", q.String(), name)
	}
	return nil
}

// validateResources checks a container's requests and limits (or a pod's
// overhead, as limits). Kube walks them in map order; this walks them by
// name, one of kube's orders.
func validateResources(r *corev1.ResourceRequirements, claims sets.Set[string], path *field.Path, opts Options) field.ErrorList {
	var errs field.ErrorList
	limPath, reqPath := path.Child("limits"), path.Child("requests")
	computeInLimits, computeInRequests, hugePagesSet := false, false, false
	for _, k := range sortedKeys(r.Limits) {
		q, p := r.Limits[corev1.ResourceName(k)], limPath.Key(k)
		errs = append(errs, validateContainerResourceName(k, p)...)
		errs = append(errs, validateQuantity(k, q, p)...)
		if hugePages(k) {
			hugePagesSet = true
			if err := hugePagesError(k, q, opts); err != nil {
				errs = append(errs, field.Invalid(p, q.String(), err.Error()))
			}
		}
		computeInLimits = computeInLimits || k == "cpu" || k == "memory"
	}
	for _, k := range sortedKeys(r.Requests) {
		q, p := r.Requests[corev1.ResourceName(k)], reqPath.Key(k)
		errs = append(errs, validateContainerResourceName(k, p)...)
		errs = append(errs, validateQuantity(k, q, p)...)
		if limit, set := r.Limits[corev1.ResourceName(k)]; set {
			if q.Cmp(limit) != 0 && !overcommitAllowed(k) {
				errs = append(errs, field.Invalid(reqPath, q.String(), fmt.Sprintf("must be equal to %s limit of %s", k, limit.String())))
			} else if q.Cmp(limit) > 0 {
				errs = append(errs, field.Invalid(reqPath, q.String(), fmt.Sprintf("must be less than or equal to %s limit of %s", k, limit.String())))
			}
		} else if !overcommitAllowed(k) {
			errs = append(errs, field.Required(limPath, "Limit must be set for non overcommitable resources"))
		}
		if hugePages(k) {
			hugePagesSet = true
			if err := hugePagesError(k, q, opts); err != nil {
				errs = append(errs, field.Invalid(p, q.String(), err.Error()))
			}
		}
		computeInRequests = computeInRequests || k == "cpu" || k == "memory"
	}
	if hugePagesSet && !computeInLimits && !computeInRequests {
		errs = append(errs, field.Forbidden(path, "HugePages require cpu or memory"))
	}
	return append(errs, validateClaimNames(r.Claims, claims, path.Child("claims"))...)
}

// validateClaimNames: a container's claims name the pod's resource
// claims.
func validateClaimNames(claims []corev1.ResourceClaim, podClaims sets.Set[string], path *field.Path) field.ErrorList {
	var errs field.ErrorList
	names := sets.New[string]()
	for i, c := range claims {
		p := path.Index(i)
		if c.Name == "" {
			errs = append(errs, field.Required(p, ""))
			continue
		}
		if names.Has(c.Name) {
			errs = append(errs, field.Duplicate(p, c.Name))
		} else {
			names.Insert(c.Name)
		}
		if !podClaims.Has(c.Name) {
			err := field.NotFound(p, c.Name)
			err.Detail = "must be one of the names in pod.spec.resourceClaims"
			if podClaims.Len() == 0 {
				err.Detail += " which is empty"
			} else {
				err.Detail += ": " + strings.Join(sets.List(podClaims), ", ")
			}
			errs = append(errs, err)
		}
	}
	return errs
}

func podClaimNames(claims []corev1.PodResourceClaim) sets.Set[string] {
	names := sets.New[string]()
	for _, c := range claims {
		if c.Name != "" {
			names.Insert(c.Name)
		}
	}
	return names
}

// validateResourceClaims checks a pod's resource claims (kept only where
// the stored spec has them, DynamicResourceAllocation being off in v1.29).
func validateResourceClaims(meta *metav1.ObjectMeta, claims []corev1.PodResourceClaim, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	names := sets.New[string]()
	for i, c := range claims {
		p := path.Index(i)
		switch {
		case c.Name == "":
			errs = append(errs, field.Required(p.Child("name"), ""))
		case names.Has(c.Name):
			errs = append(errs, field.Duplicate(p.Child("name"), c.Name))
		default:
			if nameErrs := dnsLabel(c.Name, p.Child("name")); len(nameErrs) > 0 {
				errs = append(errs, nameErrs...)
			} else if meta != nil && c.Source.ResourceClaimTemplateName != nil {
				claim := meta.Name + "-" + c.Name
				for _, msg := range validation.IsDNS1123Subdomain(claim) {
					errs = append(errs, field.Invalid(p.Child("name"), claim, "final ResourceClaim name: "+msg))
				}
			}
			names.Insert(c.Name)
		}
		s, sp := c.Source, p.Child("source")
		if s.ResourceClaimName != nil && s.ResourceClaimTemplateName != nil {
			errs = append(errs, field.Invalid(sp, internalValue{s}, "at most one of `resourceClaimName` or `resourceClaimTemplateName` may be specified"))
		}
		if s.ResourceClaimName == nil && s.ResourceClaimTemplateName == nil {
			errs = append(errs, field.Invalid(sp, internalValue{s}, "must specify one of: `resourceClaimName`, `resourceClaimTemplateName`"))
		}
		if n := s.ResourceClaimName; n != nil {
			errs = append(errs, subdomainName(*n, sp.Child("resourceClaimName"))...)
		}
		if n := s.ResourceClaimTemplateName; n != nil {
			errs = append(errs, subdomainName(*n, sp.Child("resourceClaimTemplateName"))...)
		}
	}
	return errs
}

// usesIndivisibleHugePages reports whether a stored spec asks for a
// hugepages quantity that is not a whole number of pages: its updates are
// forgiven that.
func usesIndivisibleHugePages(spec *corev1.PodSpec) bool {
	return anyContainer(spec, func(c *corev1.Container) bool {
		for _, list := range []corev1.ResourceList{c.Resources.Limits, c.Resources.Requests} {
			for name, q := range list {
				if hugePages(string(name)) && hugePagesError(string(name), q, Options{}) != nil {
					return true
				}
			}
		}
		return false
	})
}

// ValidateResourceQuantity checks a quantity of the named resource as
// kube does wherever resources are listed (a node's capacity, too): not
// negative, and whole for resources counted in units.
func ValidateResourceQuantity(name string, q resource.Quantity, path *field.Path) field.ErrorList {
	return validateQuantity(name, q, path)
}
