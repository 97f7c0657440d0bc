package podspec

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// deprecatedNodeLabels are node labels with a newer name.
var deprecatedNodeLabels = map[string]string{
	"beta.kubernetes.io/arch":                  `deprecated since v1.14; use "kubernetes.io/arch" instead`,
	"beta.kubernetes.io/os":                    `deprecated since v1.14; use "kubernetes.io/os" instead`,
	"failure-domain.beta.kubernetes.io/region": `deprecated since v1.17; use "topology.kubernetes.io/region" instead`,
	"failure-domain.beta.kubernetes.io/zone":   `deprecated since v1.17; use "topology.kubernetes.io/zone" instead`,
	"beta.kubernetes.io/instance-type":         `deprecated since v1.17; use "node.kubernetes.io/instance-type" instead`,
}

// deprecatedAnnotations are pod annotations that no longer do anything.
var deprecatedAnnotations = []struct{ key, message string }{
	{"scheduler.alpha.kubernetes.io/critical-pod", `non-functional in v1.16+; use the "priorityClassName" field instead`},
	{"security.alpha.kubernetes.io/sysctls", `non-functional in v1.11+; use the "sysctls" field instead`},
	{"security.alpha.kubernetes.io/unsafe-sysctls", `non-functional in v1.11+; use the "sysctls" field instead`},
}

// TemplateWarnings are the warnings kube sends with a write of a pod
// template at path (spec.template in a Job) that succeeds.
func TemplateWarnings(path *field.Path, t *corev1.PodTemplateSpec) []string {
	return Warnings(path, &t.Spec, &t.ObjectMeta)
}

// PodWarnings are the warnings kube sends with a write of a Pod that
// succeeds.
func PodWarnings(pod *corev1.Pod) []string {
	return Warnings(nil, &pod.Spec, &pod.ObjectMeta)
}

// Warnings advises on a spec (and its metadata) at path: deprecated node
// labels, annotations and volume types, duplicates kube tolerates, byte
// quantities with fractions, ambiguous ports, a negative grace period,
// null selectors that match nothing.
func Warnings(path *field.Path, spec *corev1.PodSpec, meta *metav1.ObjectMeta) []string {
	var out []string
	warn := func(p *field.Path, format string, args ...interface{}) {
		out = append(out, fmt.Sprintf("%s: %s", p, fmt.Sprintf(format, args...)))
	}
	specPath := path.Child("spec")
	for _, k := range sortedKeys(spec.NodeSelector) {
		if msg, deprecated := deprecatedNodeLabels[k]; deprecated {
			warn(specPath.Child("nodeSelector").Key(k), "%s", msg)
		}
	}
	if a := spec.Affinity; a != nil && a.NodeAffinity != nil {
		na, p := a.NodeAffinity, specPath.Child("affinity", "nodeAffinity")
		if r := na.RequiredDuringSchedulingIgnoredDuringExecution; r != nil {
			for i, term := range r.NodeSelectorTerms {
				out = append(out, nodeSelectorTermWarnings(term, p.Child("requiredDuringSchedulingIgnoredDuringExecution", "nodeSelectorTerms").Index(i))...)
			}
		}
		for i, term := range na.PreferredDuringSchedulingIgnoredDuringExecution {
			out = append(out, nodeSelectorTermWarnings(term.Preference, p.Child("preferredDuringSchedulingIgnoredDuringExecution").Index(i).Child("preference"))...)
		}
	}
	for i, c := range spec.TopologySpreadConstraints {
		p := specPath.Child("topologySpreadConstraints").Index(i)
		if msg, deprecated := deprecatedNodeLabels[c.TopologyKey]; deprecated {
			warn(p.Child("topologyKey"), "%s is %s", c.TopologyKey, msg)
		}
		if c.LabelSelector == nil {
			warn(p.Child("labelSelector"), "a null labelSelector results in matching no pod")
		}
	}
	annotations := path.Child("metadata", "annotations")
	for _, d := range deprecatedAnnotations {
		if _, set := meta.Annotations[d.key]; set {
			warn(annotations.Key(d.key), "%s", d.message)
		}
	}
	for i := range spec.Volumes {
		out = append(out, volumeWarnings(&spec.Volumes[i].VolumeSource, specPath.Child("volumes").Index(i))...)
	}
	if len(spec.HostAliases) > 1 {
		ips := sets.New[string]()
		for i, a := range spec.HostAliases {
			if ips.Has(a.IP) {
				warn(specPath.Child("hostAliases").Index(i).Child("ip"), "duplicate ip %q", a.IP)
			}
			ips.Insert(a.IP)
		}
	}
	if len(spec.ImagePullSecrets) > 1 {
		names := sets.New[string]()
		for i, s := range spec.ImagePullSecrets {
			if names.Has(s.Name) {
				warn(specPath.Child("imagePullSecrets").Index(i).Child("name"), "duplicate name %q", s.Name)
			}
			names.Insert(s.Name)
		}
	}
	for i, s := range spec.ImagePullSecrets {
		if s.Name == "" {
			warn(specPath.Child("imagePullSecrets").Index(i).Child("name"), "invalid empty name %q", s.Name)
		}
	}
	for _, name := range []corev1.ResourceName{corev1.ResourceMemory, corev1.ResourceEphemeralStorage} {
		if q, set := spec.Overhead[name]; set && q.MilliValue()%1000 != 0 {
			warn(specPath.Child("overhead").Key(string(name)), "fractional byte value %q is invalid, must be an integer", q.String())
		}
	}
	if spec.SecurityContext == nil || spec.SecurityContext.SeccompProfile == nil {
		if _, set := meta.Annotations[seccompPodAnnotation]; set {
			warn(annotations.Key(seccompPodAnnotation), `non-functional in v1.27+; use the "seccompProfile" field instead`)
		}
	}
	visitContainersWithPath(spec, specPath, func(c *corev1.Container, p *field.Path) {
		if c.SecurityContext == nil || c.SecurityContext.SeccompProfile == nil {
			if _, set := meta.Annotations[seccompContainerAnnotation+c.Name]; set {
				warn(annotations.Key(seccompContainerAnnotation+c.Name), `non-functional in v1.27+; use the "seccompProfile" field instead`)
			}
		}
		for _, list := range []struct {
			name string
			rl   corev1.ResourceList
		}{{"limits", c.Resources.Limits}, {"requests", c.Resources.Requests}} {
			if q, set := list.rl[corev1.ResourceMemory]; set && q.MilliValue()%1000 != 0 {
				warn(p.Child("resources", list.name).Key(string(corev1.ResourceMemory)), "fractional byte value %q is invalid, must be an integer", q.String())
			}
		}
		for _, list := range []struct {
			name string
			rl   corev1.ResourceList
		}{{"limits", c.Resources.Limits}, {"requests", c.Resources.Requests}} {
			if q, set := list.rl[corev1.ResourceEphemeralStorage]; set && q.MilliValue()%1000 != 0 {
				warn(p.Child("resources", list.name).Key(string(corev1.ResourceEphemeralStorage)), "fractional byte value %q is invalid, must be an integer", q.String())
			}
		}
		out = append(out, envWarnings(c.Env, p.Child("env"))...)
	})
	out = append(out, portWarnings(spec, specPath)...)
	if g := spec.TerminationGracePeriodSeconds; g != nil && *g < 0 {
		warn(specPath.Child("terminationGracePeriodSeconds"), "must be >= 0; negative values are invalid and will be treated as 1")
	}
	if a := spec.Affinity; a != nil {
		for _, pa := range []struct {
			name      string
			required  []corev1.PodAffinityTerm
			preferred []corev1.WeightedPodAffinityTerm
		}{
			{"podAffinity", podAffinityRequired(a.PodAffinity), podAffinityPreferred(a.PodAffinity)},
			{"podAntiAffinity", podAntiAffinityRequired(a.PodAntiAffinity), podAntiAffinityPreferred(a.PodAntiAffinity)},
		} {
			p := specPath.Child("affinity", pa.name)
			for i, t := range pa.required {
				if t.LabelSelector == nil {
					warn(p.Child("requiredDuringSchedulingIgnoredDuringExecution").Index(i).Child("labelSelector"), "a null labelSelector results in matching no pod")
				}
			}
			for i, t := range pa.preferred {
				if t.PodAffinityTerm.LabelSelector == nil {
					warn(p.Child("preferredDuringSchedulingIgnoredDuringExecution").Index(i).Child("podAffinityTerm", "labelSelector"), "a null labelSelector results in matching no pod")
				}
			}
		}
	}
	return out
}

// volumeWarnings warns of deprecated volume types, and of fractions of a
// byte in an ephemeral volume's claim.
func volumeWarnings(s *corev1.VolumeSource, p *field.Path) []string {
	var out []string
	deprecated := func(set bool, name, msg string) {
		if set {
			out = append(out, fmt.Sprintf("%s: %s", p.Child(name), msg))
		}
	}
	deprecated(s.PhotonPersistentDisk != nil, "photonPersistentDisk", "deprecated in v1.11, non-functional in v1.16+")
	deprecated(s.GitRepo != nil, "gitRepo", "deprecated in v1.11")
	deprecated(s.ScaleIO != nil, "scaleIO", "deprecated in v1.16, non-functional in v1.22+")
	deprecated(s.Flocker != nil, "flocker", "deprecated in v1.22, non-functional in v1.25+")
	deprecated(s.StorageOS != nil, "storageOS", "deprecated in v1.22, non-functional in v1.25+")
	deprecated(s.Quobyte != nil, "quobyte", "deprecated in v1.22, non-functional in v1.25+")
	deprecated(s.Glusterfs != nil, "glusterfs", "deprecated in v1.25, non-functional in v1.26+")
	if e := s.Ephemeral; e != nil && e.VolumeClaimTemplate != nil {
		out = append(out, claimSpecWarnings(&e.VolumeClaimTemplate.Spec, p.Child("ephemeral", "volumeClaimTemplate", "spec"))...)
	}
	deprecated(s.CephFS != nil, "cephfs", "deprecated in v1.28, non-functional in v1.31+")
	deprecated(s.RBD != nil, "rbd", "deprecated in v1.28, non-functional in v1.31+")
	return out
}

func nodeSelectorTermWarnings(term corev1.NodeSelectorTerm, path *field.Path) []string {
	var out []string
	for i, e := range term.MatchExpressions {
		if msg, deprecated := deprecatedNodeLabels[e.Key]; deprecated {
			out = append(out, fmt.Sprintf("%s: %s is %s", path.Child("matchExpressions").Index(i).Child("key"), e.Key, msg))
		}
	}
	return out
}

func claimSpecWarnings(spec *corev1.PersistentVolumeClaimSpec, path *field.Path) []string {
	var out []string
	for _, list := range []struct {
		name string
		rl   corev1.ResourceList
	}{{"requests", spec.Resources.Requests}, {"limits", spec.Resources.Limits}} {
		q := list.rl[corev1.ResourceStorage]
		if q.MilliValue()%1000 != 0 {
			out = append(out, fmt.Sprintf("%s: fractional byte value %q is invalid, must be an integer", path.Child("resources", list.name).Key(string(corev1.ResourceStorage)), q.String()))
		}
	}
	return out
}

// envWarnings: a later variable of the same name hides the earlier one,
// unless it extends it ("$(X)...") with a plain value.
func envWarnings(env []corev1.EnvVar, path *field.Path) []string {
	var out []string
	names := sets.New[string]()
	for i, e := range env {
		if !names.Has(e.Name) {
			names.Insert(e.Name)
			continue
		}
		ref := fmt.Sprintf("$(%s)", e.Name)
		if e.ValueFrom != nil || e.Value == ref || !strings.Contains(e.Value, ref) {
			out = append(out, fmt.Sprintf("%s: hides previous definition of %q", path.Index(i), e.Name))
		}
	}
	return out
}

// portWarnings: host IPs without host ports, and ports two containers
// declare alike or ambiguously.
func portWarnings(spec *corev1.PodSpec, specPath *field.Path) []string {
	type declared struct {
		path *field.Path
		port corev1.ContainerPort
	}
	var out []string
	seen := map[string][]declared{}
	visitContainersWithPath(spec, specPath, func(c *corev1.Container, cp *field.Path) {
		for i, port := range c.Ports {
			p := cp.Child("ports").Index(i)
			if port.HostIP != "" && port.HostPort == 0 {
				out = append(out, fmt.Sprintf("%s: hostIP set without hostPort: %+v", p, port))
			}
			key := fmt.Sprintf("%d/%s", port.ContainerPort, port.Protocol)
			for _, other := range seen[key] {
				switch a, b := port.HostIP == "", other.port.HostIP == ""; {
				case port.HostIP == other.port.HostIP && port.HostPort == other.port.HostPort:
					out = append(out, fmt.Sprintf("%s: duplicate port definition with %s", p, other.path))
				case port.HostPort == 0 || other.port.HostPort == 0:
					out = append(out, fmt.Sprintf("%s: overlapping port definition with %s", p, other.path))
				case port.HostPort == other.port.HostPort && a != b:
					out = append(out, fmt.Sprintf("%s: dangerously ambiguous port definition with %s", p, other.path))
				}
			}
			seen[key] = append(seen[key], declared{p, port})
		}
	})
	return out
}
