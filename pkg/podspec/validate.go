package podspec

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync/atomic"

	corev1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// allowPrivileged is kube-apiserver's --allow-privileged: process-wide, as
// kube's capabilities are, set once when the server starts.
var allowPrivileged atomic.Bool

// SetAllowPrivileged sets the cluster policy on privileged and hostProcess
// containers for every validation after it.
func SetAllowPrivileged(allow bool) { allowPrivileged.Store(allow) }

// Options are what the validation of a spec depends on besides the spec:
// where it is, kube-apiserver's cluster policy, and the leniency an update
// owes to values the stored object already has (kube's
// PodValidationOptions).
type Options struct {
	// ResourceIsPod is set for a Pod's own spec; a template's is laxer.
	ResourceIsPod bool
	// AllowPrivileged is kube-apiserver's --allow-privileged, false by
	// default: privileged and hostProcess containers are refused.
	AllowPrivileged bool

	// What an update is forgiven because the stored object has it already:
	// a deletion cost that is no 32-bit integer, pod affinity selectors
	// with label values kube now refuses, hugepages that are not whole
	// pages, bad spread selectors, namespaced sysctls on a host network or
	// IPC namespace.
	AllowInvalidPodDeletionCost                       bool
	AllowInvalidLabelValueInSelector                  bool
	AllowIndivisibleHugePagesValues                   bool
	AllowInvalidTopologySpreadConstraintLabelSelector bool
	AllowNamespacedSysctlsForHostNetAndHostIPC        bool
}

// OptionsFor returns the options kube uses for a spec written over old,
// with metadata oldMeta (both nil on create).
func OptionsFor(old *corev1.PodSpec, oldMeta *metav1.ObjectMeta) Options {
	opts := Options{AllowPrivileged: allowPrivileged.Load()}
	if old != nil {
		opts.AllowIndivisibleHugePagesValues = usesIndivisibleHugePages(old)
		opts.AllowInvalidLabelValueInSelector = hasInvalidAffinityLabelValue(old)
		opts.AllowInvalidTopologySpreadConstraintLabelSelector = hasInvalidSpreadSelector(old)
		for _, s := range sysctlsOf(old) {
			if hostSysctlError(s.Name, old, nil) != nil {
				opts.AllowNamespacedSysctlsForHostNetAndHostIPC = true
				break
			}
		}
	}
	if oldMeta != nil {
		_, err := deletionCost(oldMeta.Annotations)
		opts.AllowInvalidPodDeletionCost = err != nil
	}
	return opts
}

// TemplateOptions returns the options for a pod template written over old
// (nil on create).
func TemplateOptions(old *corev1.PodTemplateSpec) Options {
	if old == nil {
		return Options{AllowPrivileged: allowPrivileged.Load()}
	}
	return OptionsFor(&old.Spec, &old.ObjectMeta)
}

func sysctlsOf(spec *corev1.PodSpec) []corev1.Sysctl {
	if spec.SecurityContext == nil {
		return nil
	}
	return spec.SecurityContext.Sysctls
}

// ValidateTemplate checks a pod template as kube does one inside a Job, a
// CronJob or a PodTemplate: its labels and annotations (at path.labels and
// path.annotations, as kube words them) and its spec; templates may not
// have ephemeral containers.
func ValidateTemplate(t *corev1.PodTemplateSpec, path *field.Path, opts Options) field.ErrorList {
	errs := metav1validation.ValidateLabels(t.Labels, path.Child("labels"))
	errs = append(errs, apivalidation.ValidateAnnotations(t.Annotations, path.Child("annotations"))...)
	errs = append(errs, ValidatePodAnnotations(t.Annotations, &t.Spec, path.Child("annotations"), opts)...)
	errs = append(errs, ValidateSpec(&t.Spec, nil, path.Child("spec"), opts)...)
	errs = append(errs, validateSeccompAnnotationsMatch(t.Annotations, &t.Spec, path.Child("spec"))...)
	if len(t.Spec.EphemeralContainers) > 0 {
		errs = append(errs, field.Forbidden(path.Child("spec", "ephemeralContainers"), "ephemeral containers not allowed in pod template"))
	}
	return errs
}

// ValidatePod checks a new Pod's metadata annotations and spec as kube
// does on create; the object metadata itself is the store's. Ephemeral
// containers come only through their subresource.
func ValidatePod(pod *corev1.Pod, opts Options) field.ErrorList {
	return validatePod(pod, opts, true)
}

// ValidatePodForUpdate checks an updated Pod's metadata annotations and
// spec as kube does before its rules of what an update may change: as on
// create, without the checks only a new Pod gets.
func ValidatePodForUpdate(pod *corev1.Pod, opts Options) field.ErrorList {
	return validatePod(pod, opts, false)
}

func validatePod(pod *corev1.Pod, opts Options, create bool) field.ErrorList {
	opts.ResourceIsPod = true
	meta, spec := field.NewPath("metadata"), field.NewPath("spec")
	errs := ValidatePodAnnotations(pod.Annotations, &pod.Spec, meta.Child("annotations"), opts)
	errs = append(errs, ValidateSpec(&pod.Spec, &pod.ObjectMeta, spec, opts)...)
	if pod.Spec.ServiceAccountName == "" {
		for i, v := range pod.Spec.Volumes {
			if v.Projected == nil {
				continue
			}
			for j, s := range v.Projected.Sources {
				if s.ServiceAccountToken != nil {
					errs = append(errs, field.Forbidden(spec.Child("volumes").Index(i).Child("projected", "sources").Index(j).Child("serviceAccountToken"), "must not be specified when serviceAccountName is not set"))
				}
			}
		}
	}
	for _, list := range []struct {
		name string
		cs   []corev1.Container
	}{{"containers", pod.Spec.Containers}, {"initContainers", pod.Spec.InitContainers}} {
		for i := range list.cs {
			errs = append(errs, validateImageWhitespace(&list.cs[i], spec.Child(list.name).Index(i))...)
		}
	}
	if create && len(pod.Spec.EphemeralContainers) > 0 {
		errs = append(errs, field.Forbidden(spec.Child("ephemeralContainers"), "cannot be set on create"))
	}
	if create && pod.Spec.NodeName != "" && len(pod.Spec.SchedulingGates) != 0 {
		errs = append(errs, field.Forbidden(spec.Child("nodeName"), "cannot be set until all schedulingGates have been cleared"))
	}
	return append(errs, validateSeccompAnnotationsMatch(pod.Annotations, &pod.Spec, spec)...)
}

// validateImageWhitespace is a Pod's rule only: templates may keep
// images with surrounding blanks, as some tools set them.
func validateImageWhitespace(c *corev1.Container, path *field.Path) field.ErrorList {
	if len(c.Image) != len(strings.TrimSpace(c.Image)) {
		return field.ErrorList{field.Invalid(path.Child("image"), c.Image, "must not have leading or trailing whitespace")}
	}
	return nil
}

// Annotations a pod spec's metadata may carry with a meaning.
const (
	mirrorPodAnnotation         = "kubernetes.io/config.mirror"
	tolerationsAnnotation       = "scheduler.alpha.kubernetes.io/tolerations"
	deletionCostAnnotation      = "controller.kubernetes.io/pod-deletion-cost"
	seccompPodAnnotation        = "seccomp.security.alpha.kubernetes.io/pod"
	seccompContainerAnnotation  = "container.seccomp.security.alpha.kubernetes.io/"
	appArmorContainerAnnotation = "container.apparmor.security.beta.kubernetes.io/"
)

// ValidatePodAnnotations checks the annotations of a pod or pod template
// that kube gives a meaning: mirror pods, tolerations, the deletion cost,
// seccomp and AppArmor profiles.
func ValidatePodAnnotations(annotations map[string]string, spec *corev1.PodSpec, path *field.Path, opts Options) field.ErrorList {
	var errs field.ErrorList
	if value, mirror := annotations[mirrorPodAnnotation]; mirror && spec.NodeName == "" {
		errs = append(errs, field.Invalid(path.Key(mirrorPodAnnotation), value, "must set spec.nodeName if mirror pod annotation is set"))
	}
	if annotations[tolerationsAnnotation] != "" {
		var tolerations []corev1.Toleration
		if err := json.Unmarshal([]byte(annotations[tolerationsAnnotation]), &tolerations); err != nil {
			errs = append(errs, field.Invalid(path, tolerationsAnnotation, err.Error()))
		} else if len(tolerations) > 0 {
			errs = append(errs, ValidateTolerations(tolerations, path.Child(tolerationsAnnotation))...)
		}
	}
	if !opts.AllowInvalidPodDeletionCost {
		if _, err := deletionCost(annotations); err != nil {
			errs = append(errs, field.Invalid(path.Key(deletionCostAnnotation), annotations[deletionCostAnnotation], "must be a 32bit integer"))
		}
	}
	if p, set := annotations[seccompPodAnnotation]; set {
		errs = append(errs, validateSeccompAnnotation(p, path.Child(seccompPodAnnotation))...)
	}
	keys := sortedKeys(annotations)
	for _, k := range keys {
		if strings.HasPrefix(k, seccompContainerAnnotation) {
			errs = append(errs, validateSeccompAnnotation(annotations[k], path.Child(k))...)
		}
	}
	for _, k := range keys {
		p := annotations[k]
		name, found := strings.CutPrefix(k, appArmorContainerAnnotation)
		if !found {
			continue
		}
		if !anyContainer(spec, func(c *corev1.Container) bool { return c.Name == name }) {
			errs = append(errs, field.Invalid(path.Key(k), name, "container not found"))
		}
		if p != "" && p != "runtime/default" && p != "unconfined" && !strings.HasPrefix(p, "localhost/") {
			errs = append(errs, field.Invalid(path.Key(k), p, fmt.Sprintf("invalid AppArmor profile name: %q", p)))
		}
	}
	return errs
}

// deletionCost reads the pod-deletion-cost annotation: a 32-bit integer
// without a plus sign or leading zeros.
func deletionCost(annotations map[string]string) (int32, error) {
	value, set := annotations[deletionCostAnnotation]
	if !set {
		return 0, nil
	}
	if value == "" || !(value[0] == '-' || value == "0" || (value[0] >= '1' && value[0] <= '9')) {
		return 0, fmt.Errorf("invalid value %q", value)
	}
	n, err := strconv.ParseInt(value, 10, 32)
	return int32(n), err
}

// ValidateSpec checks a PodSpec as kube v1.29 does, in kube's order; meta
// is the Pod's metadata (nil for a template), which names the claims of
// its ephemeral volumes.
func ValidateSpec(spec *corev1.PodSpec, meta *metav1.ObjectMeta, path *field.Path, opts Options) field.ErrorList {
	var grace int64
	if spec.TerminationGracePeriodSeconds != nil {
		grace = *spec.TerminationGracePeriodSeconds
	}
	vols, errs := validateVolumes(spec.Volumes, meta, path.Child("volumes"))
	claims := podClaimNames(spec.ResourceClaims)
	errs = append(errs, validateResourceClaims(meta, spec.ResourceClaims, path.Child("resourceClaims"))...)
	ctx := &containerContext{volumes: vols, claims: claims, grace: grace, restartPolicy: spec.RestartPolicy, opts: opts}
	errs = append(errs, ctx.validateContainers(spec.Containers, path.Child("containers"))...)
	errs = append(errs, ctx.validateInitContainers(spec.InitContainers, spec.Containers, path.Child("initContainers"))...)
	errs = append(errs, ctx.validateEphemeralContainers(spec.EphemeralContainers, spec.Containers, spec.InitContainers, path.Child("ephemeralContainers"))...)
	errs = append(errs, validateHostNetworkPorts(spec, path, opts)...)
	errs = append(errs, validateRestartPolicy(spec.RestartPolicy, path.Child("restartPolicy"))...)
	errs = append(errs, validateDNSPolicy(spec.DNSPolicy, path.Child("dnsPolicy"))...)
	errs = append(errs, metav1validation.ValidateLabels(spec.NodeSelector, path.Child("nodeSelector"))...)
	errs = append(errs, validatePodSecurityContext(spec, path, path.Child("securityContext"), opts)...)
	errs = append(errs, validateAffinity(spec.Affinity, opts, path.Child("affinity"))...)
	errs = append(errs, validateDNSConfig(spec.DNSConfig, spec.DNSPolicy, path.Child("dnsConfig"))...)
	for i, g := range spec.ReadinessGates {
		errs = append(errs, qualifiedName(string(g.ConditionType), path.Child("readinessGates").Index(i).Child("conditionType"))...)
	}
	errs = append(errs, validateSchedulingGates(spec.SchedulingGates, path.Child("schedulingGates"))...)
	errs = append(errs, validateTopologySpreadConstraints(spec.TopologySpreadConstraints, path.Child("topologySpreadConstraints"), opts)...)
	errs = append(errs, validateHostProcess(spec, path, opts)...)
	errs = append(errs, validateHostUsers(spec, path)...)
	if spec.ServiceAccountName != "" {
		for _, msg := range apivalidation.ValidateServiceAccountName(spec.ServiceAccountName, false) {
			errs = append(errs, field.Invalid(path.Child("serviceAccountName"), spec.ServiceAccountName, msg))
		}
	}
	if spec.NodeName != "" {
		errs = append(errs, subdomainName(spec.NodeName, path.Child("nodeName"))...)
	}
	if d := spec.ActiveDeadlineSeconds; d != nil && (*d < 1 || *d > math.MaxInt32) {
		errs = append(errs, field.Invalid(path.Child("activeDeadlineSeconds"), *d, validation.InclusiveRangeError(1, math.MaxInt32)))
	}
	if spec.Hostname != "" {
		errs = append(errs, dnsLabel(spec.Hostname, path.Child("hostname"))...)
	}
	if spec.Subdomain != "" {
		errs = append(errs, dnsLabel(spec.Subdomain, path.Child("subdomain"))...)
	}
	if len(spec.Tolerations) > 0 {
		errs = append(errs, ValidateTolerations(spec.Tolerations, path.Child("tolerations"))...)
	}
	errs = append(errs, validateHostAliases(spec.HostAliases, path.Child("hostAliases"))...)
	if spec.PriorityClassName != "" {
		errs = append(errs, subdomainName(spec.PriorityClassName, path.Child("priorityClassName"))...)
	}
	if spec.RuntimeClassName != nil {
		errs = append(errs, subdomainName(*spec.RuntimeClassName, path.Child("runtimeClassName"))...)
	}
	if p := spec.PreemptionPolicy; p != nil {
		errs = append(errs, validatePreemptionPolicy(*p, path.Child("preemptionPolicy"))...)
	}
	if spec.Overhead != nil {
		errs = append(errs, validateResources(&corev1.ResourceRequirements{Limits: spec.Overhead}, nil, path.Child("overhead"), opts)...)
	}
	if spec.OS != nil {
		errs = append(errs, validateOS(spec, path)...)
	}
	return errs
}

// dnsLabel, subdomainName and qualifiedName word kube's name rules as
// field errors at path.
func dnsLabel(value string, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, msg := range validation.IsDNS1123Label(value) {
		errs = append(errs, field.Invalid(path, value, msg))
	}
	return errs
}

func subdomainName(value string, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, msg := range apivalidation.NameIsDNSSubdomain(value, false) {
		errs = append(errs, field.Invalid(path, value, msg))
	}
	return errs
}

func dnsSubdomain(value string, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, msg := range validation.IsDNS1123Subdomain(value) {
		errs = append(errs, field.Invalid(path, value, msg))
	}
	return errs
}

func qualifiedName(value string, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, msg := range validation.IsQualifiedName(value) {
		errs = append(errs, field.Invalid(path, value, msg))
	}
	return errs
}

func validateRestartPolicy(p corev1.RestartPolicy, path *field.Path) field.ErrorList {
	switch p {
	case corev1.RestartPolicyAlways, corev1.RestartPolicyOnFailure, corev1.RestartPolicyNever:
		return nil
	case "":
		return field.ErrorList{field.Required(path, "")}
	}
	return field.ErrorList{field.NotSupported(path, p, []corev1.RestartPolicy{corev1.RestartPolicyAlways, corev1.RestartPolicyOnFailure, corev1.RestartPolicyNever})}
}

func validateDNSPolicy(p corev1.DNSPolicy, path *field.Path) field.ErrorList {
	switch p {
	case corev1.DNSClusterFirstWithHostNet, corev1.DNSClusterFirst, corev1.DNSDefault, corev1.DNSNone:
		return nil
	case "":
		return field.ErrorList{field.Required(path, "")}
	}
	return field.ErrorList{field.NotSupported(path, p, []corev1.DNSPolicy{corev1.DNSClusterFirstWithHostNet, corev1.DNSClusterFirst, corev1.DNSDefault, corev1.DNSNone})}
}

func validatePreemptionPolicy(p corev1.PreemptionPolicy, path *field.Path) field.ErrorList {
	switch p {
	case corev1.PreemptLowerPriority, corev1.PreemptNever:
		return nil
	case "":
		return field.ErrorList{field.Required(path, "")}
	}
	return field.ErrorList{field.NotSupported(path, p, []corev1.PreemptionPolicy{corev1.PreemptLowerPriority, corev1.PreemptNever})}
}

// validateHostNetworkPorts: on the host network a container port is the
// host's, so a host port must equal it; templates may leave it 0, which
// the Pod's defaults fill in.
func validateHostNetworkPorts(spec *corev1.PodSpec, path *field.Path, opts Options) field.ErrorList {
	if !spec.HostNetwork {
		return nil
	}
	var errs field.ErrorList
	for i, c := range spec.Containers {
		for j, p := range c.Ports {
			if (opts.ResourceIsPod || p.HostPort != 0) && p.HostPort != p.ContainerPort {
				errs = append(errs, field.Invalid(path.Child("containers").Index(i).Child("ports").Index(j).Child("hostPort"), p.HostPort, "must match `containerPort` when `hostNetwork` is true"))
			}
		}
	}
	return errs
}

// validateOS checks the OS name and, for a known one, that no option of
// the other is set.
func validateOS(spec *corev1.PodSpec, path *field.Path) field.ErrorList {
	p := path.Child("os")
	switch spec.OS.Name {
	case "":
		return field.ErrorList{field.Required(p.Child("name"), "cannot be empty")}
	case corev1.Linux:
		return validateLinuxOnly(spec, path)
	case corev1.Windows:
		return validateWindowsOnly(spec, path)
	}
	return field.ErrorList{field.NotSupported(p, spec.OS.Name, []corev1.OSName{corev1.Linux, corev1.Windows})}
}
