// Package batch registers the resources of the batch/v1 group: cronjobs
// and jobs, with kube's defaulting and validation of them and of the pod
// template they carry.
package batch

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// defaultPodSpec applies kube's v1 defaults to a pod template's spec, as a
// user sees them in `kubectl get -o yaml`.
func defaultPodSpec(spec *corev1.PodSpec) {
	if spec.DNSPolicy == "" {
		spec.DNSPolicy = corev1.DNSClusterFirst
	}
	if spec.RestartPolicy == "" {
		spec.RestartPolicy = corev1.RestartPolicyAlways
	}
	if spec.SecurityContext == nil {
		spec.SecurityContext = &corev1.PodSecurityContext{}
	}
	if spec.TerminationGracePeriodSeconds == nil {
		period := int64(corev1.DefaultTerminationGracePeriodSeconds)
		spec.TerminationGracePeriodSeconds = &period
	}
	if spec.SchedulerName == "" {
		spec.SchedulerName = corev1.DefaultSchedulerName
	}
	for i := range spec.InitContainers {
		defaultContainer(&spec.InitContainers[i])
	}
	for i := range spec.Containers {
		defaultContainer(&spec.Containers[i])
	}
}

func defaultContainer(c *corev1.Container) {
	if c.ImagePullPolicy == "" {
		c.ImagePullPolicy = corev1.PullIfNotPresent
		if latestTag(c.Image) {
			c.ImagePullPolicy = corev1.PullAlways
		}
	}
	if c.TerminationMessagePath == "" {
		c.TerminationMessagePath = corev1.TerminationMessagePathDefault
	}
	if c.TerminationMessagePolicy == "" {
		c.TerminationMessagePolicy = corev1.TerminationMessageReadFile
	}
	for i := range c.Ports {
		if c.Ports[i].Protocol == "" {
			c.Ports[i].Protocol = corev1.ProtocolTCP
		}
	}
	for i := range c.Env {
		if vf := c.Env[i].ValueFrom; vf != nil && vf.FieldRef != nil && vf.FieldRef.APIVersion == "" {
			vf.FieldRef.APIVersion = "v1"
		}
	}
}

// latestTag reports whether an image reference has no tag or the tag
// "latest" (and no digest): kube pulls those always.
func latestTag(image string) bool {
	if strings.Contains(image, "@") {
		return false
	}
	name := image
	if i := strings.LastIndex(image, "/"); i >= 0 {
		name = image[i+1:]
	}
	i := strings.LastIndex(name, ":")
	return i < 0 || name[i+1:] == "latest"
}

// validatePodTemplate checks what kube checks of a job's pod template that
// matters here: containers with names and images, and a restart policy a
// job can use.
func validatePodTemplate(t *corev1.PodTemplateSpec, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	errs = append(errs, apivalidation.ValidateAnnotations(t.Annotations, path.Child("metadata", "annotations"))...)
	errs = append(errs, validateLabels(t.Labels, path.Child("metadata", "labels"))...)
	spec := path.Child("spec")
	if len(t.Spec.Containers) == 0 {
		errs = append(errs, field.Required(spec.Child("containers"), ""))
	}
	names := sets.New[string]()
	errs = append(errs, validateContainers(t.Spec.InitContainers, spec.Child("initContainers"), names)...)
	errs = append(errs, validateContainers(t.Spec.Containers, spec.Child("containers"), names)...)
	// kube words any other policy, the defaulted Always included, as a
	// missing one.
	if p := t.Spec.RestartPolicy; p != corev1.RestartPolicyOnFailure && p != corev1.RestartPolicyNever {
		errs = append(errs, field.Required(spec.Child("restartPolicy"), `valid values: "OnFailure", "Never"`))
	}
	switch t.Spec.DNSPolicy {
	case corev1.DNSClusterFirst, corev1.DNSClusterFirstWithHostNet, corev1.DNSDefault, corev1.DNSNone:
	default:
		errs = append(errs, field.NotSupported(spec.Child("dnsPolicy"), t.Spec.DNSPolicy, []string{
			string(corev1.DNSClusterFirstWithHostNet), string(corev1.DNSClusterFirst), string(corev1.DNSDefault), string(corev1.DNSNone)}))
	}
	if g := t.Spec.TerminationGracePeriodSeconds; g != nil && *g < 0 {
		errs = append(errs, field.Invalid(spec.Child("terminationGracePeriodSeconds"), *g, "must be greater than or equal to 0"))
	}
	if d := t.Spec.ActiveDeadlineSeconds; d != nil && *d <= 0 {
		errs = append(errs, field.Invalid(spec.Child("activeDeadlineSeconds"), *d, "must be between 1 and 2147483647, inclusive"))
	}
	return errs
}

func validateLabels(labels map[string]string, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	for k, v := range labels {
		for _, msg := range validation.IsQualifiedName(k) {
			errs = append(errs, field.Invalid(path, k, msg))
		}
		for _, msg := range validation.IsValidLabelValue(v) {
			errs = append(errs, field.Invalid(path.Key(k), v, msg))
		}
	}
	return errs
}

func validateContainers(cs []corev1.Container, path *field.Path, names sets.Set[string]) field.ErrorList {
	var errs field.ErrorList
	for i, c := range cs {
		p := path.Index(i)
		if c.Name == "" {
			errs = append(errs, field.Required(p.Child("name"), ""))
		} else {
			for _, msg := range validation.IsDNS1123Label(c.Name) {
				errs = append(errs, field.Invalid(p.Child("name"), c.Name, msg))
			}
			if names.Has(c.Name) {
				errs = append(errs, field.Duplicate(p.Child("name"), c.Name))
			}
			names.Insert(c.Name)
		}
		if strings.TrimSpace(c.Image) == "" {
			errs = append(errs, field.Required(p.Child("image"), ""))
		} else if c.Image != strings.TrimSpace(c.Image) {
			errs = append(errs, field.Invalid(p.Child("image"), c.Image, "must not have leading or trailing whitespace"))
		}
		switch c.ImagePullPolicy {
		case corev1.PullAlways, corev1.PullIfNotPresent, corev1.PullNever:
		default:
			errs = append(errs, field.NotSupported(p.Child("imagePullPolicy"), c.ImagePullPolicy, []string{string(corev1.PullAlways), string(corev1.PullIfNotPresent), string(corev1.PullNever)}))
		}
		switch c.TerminationMessagePolicy {
		case corev1.TerminationMessageReadFile, corev1.TerminationMessageFallbackToLogsOnError:
		default:
			errs = append(errs, field.NotSupported(p.Child("terminationMessagePolicy"), c.TerminationMessagePolicy, []string{string(corev1.TerminationMessageReadFile), string(corev1.TerminationMessageFallbackToLogsOnError)}))
		}
		for j, port := range c.Ports {
			pp := p.Child("ports").Index(j)
			if port.ContainerPort < 1 || port.ContainerPort > 65535 {
				errs = append(errs, field.Invalid(pp.Child("containerPort"), port.ContainerPort, validation.InclusiveRangeError(1, 65535)))
			}
			switch port.Protocol {
			case corev1.ProtocolTCP, corev1.ProtocolUDP, corev1.ProtocolSCTP:
			default:
				errs = append(errs, field.NotSupported(pp.Child("protocol"), port.Protocol, []string{string(corev1.ProtocolSCTP), string(corev1.ProtocolTCP), string(corev1.ProtocolUDP)}))
			}
		}
		for j, env := range c.Env {
			if env.Name == "" {
				errs = append(errs, field.Required(p.Child("env").Index(j).Child("name"), ""))
			} else {
				for _, msg := range validation.IsEnvVarName(env.Name) {
					errs = append(errs, field.Invalid(p.Child("env").Index(j).Child("name"), env.Name, msg))
				}
			}
		}
	}
	return errs
}

func nonNegative32(v *int32, path *field.Path) field.ErrorList {
	if v != nil && *v < 0 {
		return field.ErrorList{field.Invalid(path, *v, "must be greater than or equal to 0")}
	}
	return nil
}

func nonNegative64(v *int64, path *field.Path) field.ErrorList {
	if v != nil && *v < 0 {
		return field.ErrorList{field.Invalid(path, *v, "must be greater than or equal to 0")}
	}
	return nil
}

// nameWarnings advises against a Job or CronJob name that is not a DNS
// label: the name goes into pod names and hostnames.
func nameWarnings(name string) []string {
	if msgs := validation.IsDNS1123Label(name); len(msgs) > 0 {
		return []string{fmt.Sprintf("metadata.name: this is used in Pod names and hostnames, which can result in surprising behavior; a DNS label is recommended: %v", msgs)}
	}
	return nil
}
