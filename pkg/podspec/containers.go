package podspec

import (
	"fmt"
	"reflect"
	"strings"
	"unicode"
	"unicode/utf8"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// containerContext is what a container's validation needs of its spec.
type containerContext struct {
	volumes       map[string]corev1.VolumeSource
	claims        sets.Set[string]
	grace         int64
	restartPolicy corev1.RestartPolicy
	opts          Options
}

func (x *containerContext) validateContainers(cs []corev1.Container, path *field.Path) field.ErrorList {
	if len(cs) == 0 {
		return field.ErrorList{field.Required(path, "")}
	}
	var errs field.ErrorList
	names := sets.New[string]()
	for i := range cs {
		c, p := &cs[i], path.Index(i)
		errs = append(errs, x.validateCommon(c, p)...)
		// Clashes with init and ephemeral containers are theirs to report.
		if names.Has(c.Name) {
			errs = append(errs, field.Duplicate(p.Child("name"), c.Name))
		} else {
			names.Insert(c.Name)
		}
		errs = append(errs, x.validateLifecycleAndProbes(c, p)...)
		if c.RestartPolicy != nil {
			errs = append(errs, field.Forbidden(p.Child("restartPolicy"), "may not be set for non-init containers"))
		}
	}
	return append(errs, hostPortConflicts(cs, path)...)
}

func (x *containerContext) validateLifecycleAndProbes(c *corev1.Container, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if c.Lifecycle != nil {
		errs = append(errs, x.validateLifecycle(c.Lifecycle, p.Child("lifecycle"))...)
	}
	if c.LivenessProbe != nil {
		errs = append(errs, x.validateProbe(c.LivenessProbe, p.Child("livenessProbe"))...)
		errs = append(errs, successThresholdOne(c.LivenessProbe, p.Child("livenessProbe"))...)
	}
	if c.ReadinessProbe != nil {
		errs = append(errs, x.validateProbe(c.ReadinessProbe, p.Child("readinessProbe"))...)
		if g := c.ReadinessProbe.TerminationGracePeriodSeconds; g != nil {
			errs = append(errs, field.Invalid(p.Child("readinessProbe", "terminationGracePeriodSeconds"), *g, "must not be set for readinessProbes"))
		}
	}
	if c.StartupProbe != nil {
		errs = append(errs, x.validateProbe(c.StartupProbe, p.Child("startupProbe"))...)
		errs = append(errs, successThresholdOne(c.StartupProbe, p.Child("startupProbe"))...)
	}
	return errs
}

func successThresholdOne(probe *corev1.Probe, path *field.Path) field.ErrorList {
	if probe.SuccessThreshold != 1 {
		return field.ErrorList{field.Invalid(path.Child("successThreshold"), probe.SuccessThreshold, "must be 1")}
	}
	return nil
}

// validateInitContainers: init containers run one by one, so only each
// one's own host ports may not clash; those that restart always
// (sidecars, SidecarContainers being on in v1.29) may have probes and
// lifecycle hooks, the others not.
func (x *containerContext) validateInitContainers(cs, regular []corev1.Container, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	names := sets.New[string]()
	for _, c := range regular {
		names.Insert(c.Name)
	}
	for i := range cs {
		c, p := &cs[i], path.Index(i)
		errs = append(errs, x.validateCommon(c, p)...)
		sidecar := false
		if rp := c.RestartPolicy; rp != nil {
			if *rp != corev1.ContainerRestartPolicyAlways {
				errs = append(errs, field.NotSupported(p.Child("restartPolicy"), *rp, []corev1.ContainerRestartPolicy{corev1.ContainerRestartPolicyAlways}))
			}
			sidecar = *rp == corev1.ContainerRestartPolicyAlways
		}
		if names.Has(c.Name) {
			errs = append(errs, field.Duplicate(p.Child("name"), c.Name))
		} else if c.Name != "" {
			names.Insert(c.Name)
		}
		// Kube words each init container's clashes at index 0.
		errs = append(errs, hostPortConflicts([]corev1.Container{*c}, path)...)
		if sidecar {
			errs = append(errs, x.validateLifecycleAndProbes(c, p)...)
		} else {
			const msg = "may not be set for init containers without restartPolicy=Always"
			if c.Lifecycle != nil {
				errs = append(errs, field.Forbidden(p.Child("lifecycle"), msg))
			}
			if c.LivenessProbe != nil {
				errs = append(errs, field.Forbidden(p.Child("livenessProbe"), msg))
			}
			if c.ReadinessProbe != nil {
				errs = append(errs, field.Forbidden(p.Child("readinessProbe"), msg))
			}
			if c.StartupProbe != nil {
				errs = append(errs, field.Forbidden(p.Child("startupProbe"), msg))
			}
		}
		if len(c.ResizePolicy) > 0 {
			errs = append(errs, field.Invalid(p.Child("resizePolicy"), c.ResizePolicy, "must not be set for init containers"))
		}
	}
	return errs
}

// ephemeralContainerFields are the fields an ephemeral container may set:
// nothing a workload could come to rely on (ports, probes, resources,
// hooks).
var ephemeralContainerFields = map[string]bool{
	"Name": true, "Image": true, "Command": true, "Args": true, "WorkingDir": true,
	"EnvFrom": true, "Env": true, "VolumeMounts": true, "VolumeDevices": true,
	"TerminationMessagePath": true, "TerminationMessagePolicy": true, "ImagePullPolicy": true,
	"SecurityContext": true, "Stdin": true, "StdinOnce": true, "TTY": true,
}

func (x *containerContext) validateEphemeralContainers(ecs []corev1.EphemeralContainer, regular, init []corev1.Container, path *field.Path) field.ErrorList {
	if len(ecs) == 0 {
		return nil
	}
	var errs field.ErrorList
	others, all := sets.New[string](), sets.New[string]()
	for _, c := range append(append([]corev1.Container(nil), regular...), init...) {
		others.Insert(c.Name)
		all.Insert(c.Name)
	}
	for i := range ecs {
		ec, p := &ecs[i], path.Index(i)
		c := (*corev1.Container)(&ec.EphemeralContainerCommon)
		errs = append(errs, x.validateCommon(c, p)...)
		errs = append(errs, validateImageWhitespace(c, p)...)
		if all.Has(ec.Name) {
			errs = append(errs, field.Duplicate(p.Child("name"), ec.Name))
		} else {
			all.Insert(ec.Name)
		}
		if ec.TargetContainerName != "" && !others.Has(ec.TargetContainerName) {
			errs = append(errs, field.NotFound(p.Child("targetContainerName"), ec.TargetContainerName))
		}
		errs = append(errs, onlyFields(ec.EphemeralContainerCommon, ephemeralContainerFields, "cannot be set for an Ephemeral Container", p)...)
		for j, m := range ec.VolumeMounts {
			if m.SubPath != "" {
				errs = append(errs, field.Forbidden(p.Child("volumeMounts").Index(j).Child("subPath"), "cannot be set for an Ephemeral Container"))
			}
			if m.SubPathExpr != "" {
				errs = append(errs, field.Forbidden(p.Child("volumeMounts").Index(j).Child("subPathExpr"), "cannot be set for an Ephemeral Container"))
			}
		}
	}
	return errs
}

// onlyFields forbids each field of the struct value that is set and not
// allowed, named as kube names it: the Go name with a lower-case first
// letter.
func onlyFields(value interface{}, allowed map[string]bool, detail string, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	t, v := reflect.TypeOf(value), reflect.ValueOf(value)
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if allowed[f.Name] || v.Field(i).IsZero() {
			continue
		}
		r, n := utf8.DecodeRuneInString(f.Name)
		errs = append(errs, field.Forbidden(path.Child(string(unicode.ToLower(r))+f.Name[n:]), detail))
	}
	return errs
}

// validateCommon checks what every kind of container must get right.
func (x *containerContext) validateCommon(c *corev1.Container, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if c.Name == "" {
		errs = append(errs, field.Required(path.Child("name"), ""))
	} else {
		errs = append(errs, dnsLabel(c.Name, path.Child("name"))...)
	}
	// Blank images are a template's business (some tools fill them later).
	if c.Image == "" {
		errs = append(errs, field.Required(path.Child("image"), ""))
	}
	switch c.TerminationMessagePolicy {
	case corev1.TerminationMessageReadFile, corev1.TerminationMessageFallbackToLogsOnError:
	case "":
		errs = append(errs, field.Required(path.Child("terminationMessagePolicy"), ""))
	default:
		errs = append(errs, field.NotSupported(path.Child("terminationMessagePolicy"), c.TerminationMessagePolicy,
			[]corev1.TerminationMessagePolicy{corev1.TerminationMessageReadFile, corev1.TerminationMessageFallbackToLogsOnError}))
	}
	errs = append(errs, validatePorts(c.Ports, path.Child("ports"))...)
	errs = append(errs, validateEnv(c.Env, path.Child("env"))...)
	errs = append(errs, validateEnvFrom(c.EnvFrom, path.Child("envFrom"))...)
	errs = append(errs, x.validateVolumeMounts(c, path.Child("volumeMounts"))...)
	errs = append(errs, x.validateVolumeDevices(c, path.Child("volumeDevices"))...)
	switch c.ImagePullPolicy {
	case corev1.PullAlways, corev1.PullIfNotPresent, corev1.PullNever:
	case "":
		errs = append(errs, field.Required(path.Child("imagePullPolicy"), ""))
	default:
		errs = append(errs, field.NotSupported(path.Child("imagePullPolicy"), c.ImagePullPolicy, []corev1.PullPolicy{corev1.PullAlways, corev1.PullIfNotPresent, corev1.PullNever}))
	}
	errs = append(errs, validateResources(&c.Resources, x.claims, path.Child("resources"), x.opts)...)
	errs = append(errs, validateResizePolicy(c.ResizePolicy, path.Child("resizePolicy"), x.restartPolicy)...)
	errs = append(errs, validateSecurityContext(c.SecurityContext, path.Child("securityContext"), x.opts)...)
	return errs
}

func validatePorts(ports []corev1.ContainerPort, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	names := sets.New[string]()
	for i, port := range ports {
		p := path.Index(i)
		if port.Name != "" {
			if msgs := validation.IsValidPortName(port.Name); len(msgs) > 0 {
				for _, msg := range msgs {
					errs = append(errs, field.Invalid(p.Child("name"), port.Name, msg))
				}
			} else if names.Has(port.Name) {
				errs = append(errs, field.Duplicate(p.Child("name"), port.Name))
			} else {
				names.Insert(port.Name)
			}
		}
		if port.ContainerPort == 0 {
			errs = append(errs, field.Required(p.Child("containerPort"), ""))
		} else {
			for _, msg := range validation.IsValidPortNum(int(port.ContainerPort)) {
				errs = append(errs, field.Invalid(p.Child("containerPort"), port.ContainerPort, msg))
			}
		}
		if port.HostPort != 0 {
			for _, msg := range validation.IsValidPortNum(int(port.HostPort)) {
				errs = append(errs, field.Invalid(p.Child("hostPort"), port.HostPort, msg))
			}
		}
		switch port.Protocol {
		case corev1.ProtocolTCP, corev1.ProtocolUDP, corev1.ProtocolSCTP:
		case "":
			errs = append(errs, field.Required(p.Child("protocol"), ""))
		default:
			errs = append(errs, field.NotSupported(p.Child("protocol"), port.Protocol, []corev1.Protocol{corev1.ProtocolSCTP, corev1.ProtocolTCP, corev1.ProtocolUDP}))
		}
	}
	return errs
}

// hostPortConflicts refuses two ports of cs taking the same host port,
// protocol and address.
func hostPortConflicts(cs []corev1.Container, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	seen := sets.New[string]()
	for i, c := range cs {
		for j, port := range c.Ports {
			if port.HostPort == 0 {
				continue
			}
			key := fmt.Sprintf("%s/%s/%d", port.Protocol, port.HostIP, port.HostPort)
			if seen.Has(key) {
				errs = append(errs, field.Duplicate(path.Index(i).Child("ports").Index(j).Child("hostPort"), key))
			} else {
				seen.Insert(key)
			}
		}
	}
	return errs
}

// envFieldPaths are the pod fields an environment variable may take.
var envFieldPaths = sets.New("metadata.name", "metadata.namespace", "metadata.uid", "spec.nodeName",
	"spec.serviceAccountName", "status.hostIP", "status.hostIPs", "status.podIP", "status.podIPs")

// volumeFieldPaths are the pod fields a downward API file may take.
var volumeFieldPaths = sets.New("metadata.name", "metadata.namespace", "metadata.labels", "metadata.annotations", "metadata.uid")

// containerResourcePaths are the resources a resourceFieldRef may take,
// besides any hugepages size.
var containerResourcePaths = sets.New("limits.cpu", "limits.memory", "limits.ephemeral-storage",
	"requests.cpu", "requests.memory", "requests.ephemeral-storage")

func validateEnv(vars []corev1.EnvVar, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, ev := range vars {
		p := path.Index(i)
		if ev.Name == "" {
			errs = append(errs, field.Required(p.Child("name"), ""))
		} else {
			for _, msg := range validation.IsEnvVarName(ev.Name) {
				errs = append(errs, field.Invalid(p.Child("name"), ev.Name, msg))
			}
		}
		errs = append(errs, validateEnvValueFrom(ev, p.Child("valueFrom"))...)
	}
	return errs
}

func validateEnvValueFrom(ev corev1.EnvVar, path *field.Path) field.ErrorList {
	vf := ev.ValueFrom
	if vf == nil {
		return nil
	}
	var errs field.ErrorList
	sources := 0
	if vf.FieldRef != nil {
		sources++
		errs = append(errs, validateFieldRef(vf.FieldRef, envFieldPaths, path.Child("fieldRef"))...)
	}
	if vf.ResourceFieldRef != nil {
		sources++
		errs = append(errs, validateResourceFieldRef(vf.ResourceFieldRef, path.Child("resourceFieldRef"), false)...)
	}
	if vf.ConfigMapKeyRef != nil {
		sources++
		errs = append(errs, validateKeySelector(vf.ConfigMapKeyRef.Name, vf.ConfigMapKeyRef.Key, path.Child("configMapKeyRef"))...)
	}
	if vf.SecretKeyRef != nil {
		sources++
		errs = append(errs, validateKeySelector(vf.SecretKeyRef.Name, vf.SecretKeyRef.Key, path.Child("secretKeyRef"))...)
	}
	switch {
	case sources == 0:
		errs = append(errs, field.Invalid(path, "", "must specify one of: `fieldRef`, `resourceFieldRef`, `configMapKeyRef` or `secretKeyRef`"))
	case ev.Value != "":
		errs = append(errs, field.Invalid(path, "", "may not be specified when `value` is not empty"))
	case sources > 1:
		errs = append(errs, field.Invalid(path, "", "may not have more than one field specified at a time"))
	}
	return errs
}

// validateFieldRef checks a downward API field reference against the
// paths allowed where it is; labels and annotations may be taken one key
// at a time.
func validateFieldRef(fs *corev1.ObjectFieldSelector, allowed sets.Set[string], path *field.Path) field.ErrorList {
	if fs.APIVersion == "" {
		return field.ErrorList{field.Required(path.Child("apiVersion"), "")}
	}
	if fs.FieldPath == "" {
		return field.ErrorList{field.Required(path.Child("fieldPath"), "")}
	}
	internal, err := downwardFieldPath(fs.APIVersion, fs.FieldPath)
	if err != nil {
		return field.ErrorList{field.Invalid(path.Child("fieldPath"), fs.FieldPath, fmt.Sprintf("error converting fieldPath: %v", err))}
	}
	if name, key, ok := splitSubscript(internal); ok {
		switch name {
		case "metadata.annotations":
			return qualifiedName(strings.ToLower(key), path)
		case "metadata.labels":
			return qualifiedName(key, path)
		}
		return field.ErrorList{field.Invalid(path, name, "does not support subscript")}
	}
	if !allowed.Has(internal) {
		return field.ErrorList{field.NotSupported(path.Child("fieldPath"), internal, sets.List(allowed))}
	}
	return nil
}

// downwardFieldPath reads a downward API field path of a v1 pod as kube
// converts it: known fields, spec.host for spec.nodeName, and subscripts
// of labels and annotations.
func downwardFieldPath(version, label string) (string, error) {
	if version != "v1" {
		return "", fmt.Errorf("unsupported pod version: %s", version)
	}
	if name, _, ok := splitSubscript(label); ok {
		if name == "metadata.annotations" || name == "metadata.labels" {
			return label, nil
		}
		return "", fmt.Errorf("field label does not support subscript: %s", label)
	}
	switch label {
	case "metadata.annotations", "metadata.labels", "metadata.name", "metadata.namespace", "metadata.uid",
		"spec.nodeName", "spec.restartPolicy", "spec.serviceAccountName", "spec.schedulerName",
		"status.phase", "status.hostIP", "status.hostIPs", "status.podIP", "status.podIPs":
		return label, nil
	case "spec.host":
		return "spec.nodeName", nil
	}
	return "", fmt.Errorf("field label not supported: %s", label)
}

// splitSubscript splits "metadata.labels['key']" into its path and key.
func splitSubscript(fieldPath string) (string, string, bool) {
	s, ok := strings.CutSuffix(fieldPath, "']")
	if !ok {
		return fieldPath, "", false
	}
	name, key, found := strings.Cut(s, "['")
	if !found || name == "" {
		return fieldPath, "", false
	}
	return name, key, true
}

const hugepagesRequests, hugepagesLimits = "requests.hugepages-", "limits.hugepages-"

// validateResourceFieldRef checks a resourceFieldRef; a volume's must name
// its container.
func validateResourceFieldRef(fs *corev1.ResourceFieldSelector, path *field.Path, volume bool) field.ErrorList {
	var errs field.ErrorList
	switch {
	case volume && fs.ContainerName == "":
		errs = append(errs, field.Required(path.Child("containerName"), ""))
	case fs.Resource == "":
		errs = append(errs, field.Required(path.Child("resource"), ""))
	case !containerResourcePaths.Has(fs.Resource) && !strings.HasPrefix(fs.Resource, hugepagesRequests) && !strings.HasPrefix(fs.Resource, hugepagesLimits):
		errs = append(errs, field.NotSupported(path.Child("resource"), fs.Resource, sets.List(containerResourcePaths)))
	}
	return append(errs, validateDivisor(fs.Resource, fs.Divisor, path)...)
}

var (
	cpuDivisors  = sets.New("1m", "1")
	sizeDivisors = sets.New("1", "1k", "1M", "1G", "1T", "1P", "1E", "1Ki", "1Mi", "1Gi", "1Ti", "1Pi", "1Ei")
)

const sizeDivisorList = "1, 1k, 1M, 1G, 1T, 1P, 1E, 1Ki, 1Mi, 1Gi, 1Ti, 1Pi, 1Ei"

func validateDivisor(resource string, divisor resource.Quantity, path *field.Path) field.ErrorList {
	if divisor.IsZero() {
		return nil
	}
	var errs field.ErrorList
	d := divisor.String()
	switch resource {
	case "limits.cpu", "requests.cpu":
		if !cpuDivisors.Has(d) {
			errs = append(errs, field.Invalid(path.Child("divisor"), resource, "only divisor's values 1m and 1 are supported with the cpu resource"))
		}
	case "limits.memory", "requests.memory":
		if !sizeDivisors.Has(d) {
			errs = append(errs, field.Invalid(path.Child("divisor"), resource, "only divisor's values "+sizeDivisorList+" are supported with the memory resource"))
		}
	case "limits.ephemeral-storage", "requests.ephemeral-storage":
		if !sizeDivisors.Has(d) {
			errs = append(errs, field.Invalid(path.Child("divisor"), resource, "only divisor's values "+sizeDivisorList+" are supported with the local ephemeral storage resource"))
		}
	}
	if (strings.HasPrefix(resource, hugepagesRequests) || strings.HasPrefix(resource, hugepagesLimits)) && !sizeDivisors.Has(d) {
		errs = append(errs, field.Invalid(path.Child("divisor"), resource, "only divisor's values "+sizeDivisorList+" are supported with the hugepages resource"))
	}
	return errs
}

// validateKeySelector checks a configMapKeyRef or secretKeyRef: kube lets
// the name be empty here.
func validateKeySelector(name, key string, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, msg := range apivalidation.NameIsDNSSubdomain(name, false) {
		errs = append(errs, field.Invalid(path.Child("name"), name, msg))
	}
	if key == "" {
		errs = append(errs, field.Required(path.Child("key"), ""))
	} else {
		for _, msg := range validation.IsConfigMapKey(key) {
			errs = append(errs, field.Invalid(path.Child("key"), key, msg))
		}
	}
	return errs
}

func validateEnvFrom(sources []corev1.EnvFromSource, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, ev := range sources {
		p := path.Index(i)
		if ev.Prefix != "" {
			for _, msg := range validation.IsEnvVarName(ev.Prefix) {
				errs = append(errs, field.Invalid(p.Child("prefix"), ev.Prefix, msg))
			}
		}
		n := 0
		if ev.ConfigMapRef != nil {
			n++
			errs = append(errs, validateEnvSourceName(ev.ConfigMapRef.Name, p.Child("configMapRef"))...)
		}
		if ev.SecretRef != nil {
			n++
			errs = append(errs, validateEnvSourceName(ev.SecretRef.Name, p.Child("secretRef"))...)
		}
		// Kube words these at the list, not the item.
		switch {
		case n == 0:
			errs = append(errs, field.Invalid(path, "", "must specify one of: `configMapRef` or `secretRef`"))
		case n > 1:
			errs = append(errs, field.Invalid(path, "", "may not have more than one field specified at a time"))
		}
	}
	return errs
}

// validateEnvSourceName checks the name of an envFrom source; kube checks
// it as a prefix, so a trailing dash passes.
func validateEnvSourceName(name string, path *field.Path) field.ErrorList {
	if name == "" {
		return field.ErrorList{field.Required(path.Child("name"), "")}
	}
	var errs field.ErrorList
	for _, msg := range apivalidation.NameIsDNSSubdomain(name, true) {
		errs = append(errs, field.Invalid(path.Child("name"), name, msg))
	}
	return errs
}

// validateVolumeMounts checks a container's mounts against the spec's
// volumes and its own devices.
func (x *containerContext) validateVolumeMounts(c *corev1.Container, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	devices := map[string]string{}
	for _, d := range c.VolumeDevices {
		devices[d.Name] = d.DevicePath
	}
	mountPaths := sets.New[string]()
	for i, m := range c.VolumeMounts {
		p := path.Index(i)
		if m.Name == "" {
			errs = append(errs, field.Required(p.Child("name"), ""))
		}
		if _, found := x.volumes[m.Name]; !found {
			errs = append(errs, field.NotFound(p.Child("name"), m.Name))
		}
		if m.MountPath == "" {
			errs = append(errs, field.Required(p.Child("mountPath"), ""))
		}
		if mountPaths.Has(m.MountPath) {
			errs = append(errs, field.Invalid(p.Child("mountPath"), m.MountPath, "must be unique"))
		}
		mountPaths.Insert(m.MountPath)
		if _, found := devices[m.Name]; found {
			errs = append(errs, field.Invalid(p.Child("name"), m.Name, "must not already exist in volumeDevices"))
		}
		if hasValue(devices, m.MountPath) {
			errs = append(errs, field.Invalid(p.Child("mountPath"), m.MountPath, "must not already exist as a path in volumeDevices"))
		}
		// Kube words the sub-path rules at the list, not the mount.
		if m.SubPath != "" {
			errs = append(errs, relativePath(m.SubPath, path.Child("subPath"))...)
		}
		if m.SubPathExpr != "" {
			if m.SubPath != "" {
				errs = append(errs, field.Invalid(p.Child("subPathExpr"), m.SubPathExpr, "subPathExpr and subPath are mutually exclusive"))
			}
			errs = append(errs, relativePath(m.SubPathExpr, path.Child("subPathExpr"))...)
		}
		if m.MountPropagation != nil {
			errs = append(errs, validateMountPropagation(*m.MountPropagation, c, path.Child("mountPropagation"))...)
		}
	}
	return errs
}

func hasValue(m map[string]string, v string) bool {
	for _, x := range m {
		if x == v {
			return true
		}
	}
	return false
}

func validateMountPropagation(mode corev1.MountPropagationMode, c *corev1.Container, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	switch mode {
	case corev1.MountPropagationBidirectional, corev1.MountPropagationHostToContainer, corev1.MountPropagationNone:
	default:
		errs = append(errs, field.NotSupported(path, mode, []corev1.MountPropagationMode{corev1.MountPropagationBidirectional, corev1.MountPropagationHostToContainer, corev1.MountPropagationNone}))
	}
	privileged := c.SecurityContext != nil && c.SecurityContext.Privileged != nil && *c.SecurityContext.Privileged
	if mode == corev1.MountPropagationBidirectional && !privileged {
		errs = append(errs, field.Forbidden(path, "Bidirectional mount propagation is available only to privileged containers"))
	}
	return errs
}

// validateVolumeDevices: block devices come only from claims.
func (x *containerContext) validateVolumeDevices(c *corev1.Container, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	mounts := map[string]string{}
	for _, m := range c.VolumeMounts {
		mounts[m.Name] = m.MountPath
	}
	devicePaths, deviceNames := sets.New[string](), sets.New[string]()
	for i, d := range c.VolumeDevices {
		p := path.Index(i)
		source, matched := x.volumes[d.Name]
		if d.Name == "" {
			errs = append(errs, field.Required(p.Child("name"), ""))
		}
		if deviceNames.Has(d.Name) {
			errs = append(errs, field.Invalid(p.Child("name"), d.Name, "must be unique"))
		}
		if matched && source.PersistentVolumeClaim == nil && source.Ephemeral == nil {
			errs = append(errs, field.Invalid(p.Child("name"), d.Name, "can only use volume source type of PersistentVolumeClaim or Ephemeral for block mode"))
		}
		if !matched {
			errs = append(errs, field.NotFound(p.Child("name"), d.Name))
		}
		if d.DevicePath == "" {
			errs = append(errs, field.Required(p.Child("devicePath"), ""))
		}
		if devicePaths.Has(d.DevicePath) {
			errs = append(errs, field.Invalid(p.Child("devicePath"), d.DevicePath, "must be unique"))
		}
		if d.DevicePath != "" && hasBacksteps(d.DevicePath) {
			errs = append(errs, field.Invalid(p.Child("devicePath"), d.DevicePath, "can not contain backsteps ('..')"))
		} else {
			devicePaths.Insert(d.DevicePath)
		}
		if _, found := mounts[d.Name]; found {
			errs = append(errs, field.Invalid(p.Child("name"), d.Name, "must not already exist in volumeMounts"))
		}
		if hasValue(mounts, d.DevicePath) {
			errs = append(errs, field.Invalid(p.Child("devicePath"), d.DevicePath, "must not already exist as a path in volumeMounts"))
		}
		if d.Name != "" {
			deviceNames.Insert(d.Name)
		}
	}
	return errs
}

func (x *containerContext) validateProbe(probe *corev1.Probe, path *field.Path) field.ErrorList {
	h := &probe.ProbeHandler
	errs := x.validateHandler(handler{exec: h.Exec, httpGet: h.HTTPGet, tcpSocket: h.TCPSocket, grpc: h.GRPC}, path)
	errs = append(errs, apivalidation.ValidateNonnegativeField(int64(probe.InitialDelaySeconds), path.Child("initialDelaySeconds"))...)
	errs = append(errs, apivalidation.ValidateNonnegativeField(int64(probe.TimeoutSeconds), path.Child("timeoutSeconds"))...)
	errs = append(errs, apivalidation.ValidateNonnegativeField(int64(probe.PeriodSeconds), path.Child("periodSeconds"))...)
	errs = append(errs, apivalidation.ValidateNonnegativeField(int64(probe.SuccessThreshold), path.Child("successThreshold"))...)
	errs = append(errs, apivalidation.ValidateNonnegativeField(int64(probe.FailureThreshold), path.Child("failureThreshold"))...)
	if g := probe.TerminationGracePeriodSeconds; g != nil && *g <= 0 {
		errs = append(errs, field.Invalid(path.Child("terminationGracePeriodSeconds"), *g, "must be greater than 0"))
	}
	return errs
}

func (x *containerContext) validateLifecycle(l *corev1.Lifecycle, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, hook := range []struct {
		name string
		h    *corev1.LifecycleHandler
	}{{"postStart", l.PostStart}, {"preStop", l.PreStop}} {
		if h := hook.h; h != nil {
			errs = append(errs, x.validateHandler(handler{exec: h.Exec, httpGet: h.HTTPGet, tcpSocket: h.TCPSocket, sleep: h.Sleep}, path.Child(hook.name))...)
		}
	}
	return errs
}

// handler is a probe's or a hook's action: exactly one may be set.
type handler struct {
	exec      *corev1.ExecAction
	httpGet   *corev1.HTTPGetAction
	tcpSocket *corev1.TCPSocketAction
	grpc      *corev1.GRPCAction
	sleep     *corev1.SleepAction
}

func (x *containerContext) validateHandler(h handler, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	n := 0
	one := func(set bool, name string, check func(*field.Path) field.ErrorList) {
		if !set {
			return
		}
		if n > 0 {
			errs = append(errs, field.Forbidden(path.Child(name), "may not specify more than 1 handler type"))
			return
		}
		n++
		errs = append(errs, check(path.Child(name))...)
	}
	one(h.exec != nil, "exec", func(p *field.Path) field.ErrorList {
		if len(h.exec.Command) == 0 {
			return field.ErrorList{field.Required(p.Child("command"), "")}
		}
		return nil
	})
	one(h.httpGet != nil, "httpGet", func(p *field.Path) field.ErrorList { return validateHTTPGet(h.httpGet, p) })
	one(h.tcpSocket != nil, "tcpSocket", func(p *field.Path) field.ErrorList { return portNumOrName(h.tcpSocket.Port, p.Child("port")) })
	one(h.grpc != nil, "grpc", func(p *field.Path) field.ErrorList {
		return portNumOrName(intstr.FromInt32(h.grpc.Port), p.Child("port"))
	})
	one(h.sleep != nil, "sleep", func(p *field.Path) field.ErrorList {
		if s := h.sleep.Seconds; s <= 0 || s > x.grace {
			return field.ErrorList{field.Invalid(p, s, fmt.Sprintf("must be greater than 0 and less than terminationGracePeriodSeconds (%d)", x.grace))}
		}
		return nil
	})
	if n == 0 {
		errs = append(errs, field.Required(path, "must specify a handler type"))
	}
	return errs
}

func validateHTTPGet(h *corev1.HTTPGetAction, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if h.Path == "" {
		errs = append(errs, field.Required(path.Child("path"), ""))
	}
	errs = append(errs, portNumOrName(h.Port, path.Child("port"))...)
	if h.Scheme != corev1.URISchemeHTTP && h.Scheme != corev1.URISchemeHTTPS {
		errs = append(errs, field.NotSupported(path.Child("scheme"), h.Scheme, []corev1.URIScheme{corev1.URISchemeHTTP, corev1.URISchemeHTTPS}))
	}
	for _, header := range h.HTTPHeaders {
		for _, msg := range validation.IsHTTPHeaderName(header.Name) {
			errs = append(errs, field.Invalid(path.Child("httpHeaders"), header.Name, msg))
		}
	}
	return errs
}

func portNumOrName(port intstr.IntOrString, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	switch port.Type {
	case intstr.Int:
		for _, msg := range validation.IsValidPortNum(port.IntValue()) {
			errs = append(errs, field.Invalid(path, port.IntValue(), msg))
		}
	case intstr.String:
		for _, msg := range validation.IsValidPortName(port.StrVal) {
			errs = append(errs, field.Invalid(path, port.StrVal, msg))
		}
	default:
		errs = append(errs, field.InternalError(path, fmt.Errorf("unknown type: %v", port.Type)))
	}
	return errs
}

func validateResizePolicy(policies []corev1.ContainerResizePolicy, path *field.Path, podRestart corev1.RestartPolicy) field.ErrorList {
	var errs field.ErrorList
	seen := map[corev1.ResourceName]bool{}
	for i, p := range policies {
		if seen[p.ResourceName] {
			errs = append(errs, field.Duplicate(path.Index(i), p.ResourceName))
		}
		seen[p.ResourceName] = true
		switch p.ResourceName {
		case corev1.ResourceCPU, corev1.ResourceMemory:
		case "":
			errs = append(errs, field.Required(path, ""))
		default:
			errs = append(errs, field.NotSupported(path, p.ResourceName, []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory}))
		}
		switch p.RestartPolicy {
		case corev1.NotRequired, corev1.RestartContainer:
		case "":
			errs = append(errs, field.Required(path, ""))
		default:
			errs = append(errs, field.NotSupported(path, p.RestartPolicy, []corev1.ResourceResizeRestartPolicy{corev1.NotRequired, corev1.RestartContainer}))
		}
		if podRestart == corev1.RestartPolicyNever && p.RestartPolicy != corev1.NotRequired {
			errs = append(errs, field.Invalid(path, p.RestartPolicy, "must be 'NotRequired' when `restartPolicy` is 'Never'"))
		}
	}
	return errs
}
