package podspec

import (
	corev1 "k8s.io/api/core/v1"
)

// DefaultTemplate applies kube's v1 defaults to the spec of a pod
// template (a Job's, a CronJob's job template's, a PodTemplate's): those
// of the spec and everything in it, but none of the Pod's own.
func DefaultTemplate(t *corev1.PodTemplateSpec) {
	DefaultSpec(&t.Spec)
}

// DefaultSpec applies kube's v1 defaults to a PodSpec and what it holds,
// and the one rewrite kube's round trip through its internal version
// makes of every spec: serviceAccount mirrors serviceAccountName (which
// takes serviceAccount's value when it has none).
func DefaultSpec(spec *corev1.PodSpec) {
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
	if spec.ServiceAccountName == "" {
		spec.ServiceAccountName = spec.DeprecatedServiceAccount
	}
	spec.DeprecatedServiceAccount = spec.ServiceAccountName
	for i := range spec.Volumes {
		defaultVolume(&spec.Volumes[i])
	}
	for i := range spec.InitContainers {
		DefaultContainer(&spec.InitContainers[i])
	}
	for i := range spec.Containers {
		DefaultContainer(&spec.Containers[i])
	}
	for i := range spec.EphemeralContainers {
		DefaultContainer((*corev1.Container)(&spec.EphemeralContainers[i].EphemeralContainerCommon))
	}
	roundUpResources(spec.Overhead)
}

// DefaultPod applies kube's v1 defaults to a Pod: the spec's, then those
// only a Pod gets (requests taken from limits, enableServiceLinks, host
// ports on the host network), and the rewrites of kube's round trip: a
// negative terminationGracePeriodSeconds becomes 1, and the annotations
// of the long-gone init-container betas are dropped.
func DefaultPod(pod *corev1.Pod) {
	spec := &pod.Spec
	DefaultSpec(spec)
	for _, cs := range [][]corev1.Container{spec.Containers, spec.InitContainers} {
		for i := range cs {
			requestsFromLimits(&cs[i].Resources)
		}
	}
	if spec.EnableServiceLinks == nil {
		enabled := corev1.DefaultEnableServiceLinks
		spec.EnableServiceLinks = &enabled
	}
	if spec.HostNetwork {
		for _, cs := range [][]corev1.Container{spec.Containers, spec.InitContainers} {
			for i := range cs {
				for j := range cs[i].Ports {
					if p := &cs[i].Ports[j]; p.HostPort == 0 {
						p.HostPort = p.ContainerPort
					}
				}
			}
		}
	}
	if g := spec.TerminationGracePeriodSeconds; g != nil && *g < 0 {
		one := int64(1)
		spec.TerminationGracePeriodSeconds = &one
	}
	for k := range pod.Annotations {
		if initContainerAnnotations[k] {
			delete(pod.Annotations, k)
		}
	}
	for _, statuses := range [][]corev1.ContainerStatus{pod.Status.InitContainerStatuses, pod.Status.ContainerStatuses, pod.Status.EphemeralContainerStatuses} {
		for i := range statuses {
			roundUpResources(statuses[i].AllocatedResources)
			if r := statuses[i].Resources; r != nil {
				roundUpResources(r.Limits)
				roundUpResources(r.Requests)
			}
		}
	}
}

// initContainerAnnotations held init containers before the field did.
var initContainerAnnotations = map[string]bool{
	"pod.beta.kubernetes.io/init-containers":          true,
	"pod.alpha.kubernetes.io/init-containers":         true,
	"pod.beta.kubernetes.io/init-container-statuses":  true,
	"pod.alpha.kubernetes.io/init-container-statuses": true,
}

func requestsFromLimits(r *corev1.ResourceRequirements) {
	if r.Limits == nil {
		return
	}
	if r.Requests == nil {
		r.Requests = corev1.ResourceList{}
	}
	for name, limit := range r.Limits {
		if _, set := r.Requests[name]; !set {
			r.Requests[name] = limit.DeepCopy()
		}
	}
}

// DefaultContainer applies kube's v1 defaults to a container: the pull
// policy by the image's tag, the termination message, port protocols,
// field references' API version, quantities rounded up to milli-units,
// probes and handlers.
func DefaultContainer(c *corev1.Container) {
	if c.ImagePullPolicy == "" {
		c.ImagePullPolicy = corev1.PullIfNotPresent
		if tag, _, _ := imageTagAndDigest(c.Image); tag == "latest" {
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
		if vf := c.Env[i].ValueFrom; vf != nil {
			defaultFieldRef(vf.FieldRef)
		}
	}
	roundUpResources(c.Resources.Limits)
	roundUpResources(c.Resources.Requests)
	for _, p := range []*corev1.Probe{c.LivenessProbe, c.ReadinessProbe, c.StartupProbe} {
		defaultProbe(p)
	}
	if l := c.Lifecycle; l != nil {
		for _, h := range []*corev1.LifecycleHandler{l.PostStart, l.PreStop} {
			if h != nil {
				defaultHTTPGet(h.HTTPGet)
			}
		}
	}
}

func defaultProbe(p *corev1.Probe) {
	if p == nil {
		return
	}
	if p.TimeoutSeconds == 0 {
		p.TimeoutSeconds = 1
	}
	if p.PeriodSeconds == 0 {
		p.PeriodSeconds = 10
	}
	if p.SuccessThreshold == 0 {
		p.SuccessThreshold = 1
	}
	if p.FailureThreshold == 0 {
		p.FailureThreshold = 3
	}
	defaultHTTPGet(p.HTTPGet)
	if g := p.GRPC; g != nil && g.Service == nil {
		g.Service = new(string)
	}
}

func defaultHTTPGet(h *corev1.HTTPGetAction) {
	if h == nil {
		return
	}
	if h.Path == "" {
		h.Path = "/"
	}
	if h.Scheme == "" {
		h.Scheme = corev1.URISchemeHTTP
	}
}

func defaultFieldRef(f *corev1.ObjectFieldSelector) {
	if f != nil && f.APIVersion == "" {
		f.APIVersion = "v1"
	}
}

// roundUpResources rounds each quantity up to milli-units, as kube does
// rather than refuse finer ones.
func roundUpResources(list corev1.ResourceList) {
	for name, q := range list {
		q.RoundUp(-3)
		list[name] = q
	}
}

func mode(m int32) *int32 { return &m }

// defaultVolume gives a volume with no source an emptyDir, and each
// source its defaults.
func defaultVolume(v *corev1.Volume) {
	s := &v.VolumeSource
	if *s == (corev1.VolumeSource{}) {
		s.EmptyDir = &corev1.EmptyDirVolumeSource{}
	}
	if h := s.HostPath; h != nil && h.Type == nil {
		unset := corev1.HostPathUnset
		h.Type = &unset
	}
	if sec := s.Secret; sec != nil && sec.DefaultMode == nil {
		sec.DefaultMode = mode(corev1.SecretVolumeSourceDefaultMode)
	}
	if i := s.ISCSI; i != nil && i.ISCSIInterface == "" {
		i.ISCSIInterface = "default"
	}
	if r := s.RBD; r != nil {
		if r.RBDPool == "" {
			r.RBDPool = "rbd"
		}
		if r.RadosUser == "" {
			r.RadosUser = "admin"
		}
		if r.Keyring == "" {
			r.Keyring = "/etc/ceph/keyring"
		}
	}
	if d := s.DownwardAPI; d != nil {
		if d.DefaultMode == nil {
			d.DefaultMode = mode(corev1.DownwardAPIVolumeSourceDefaultMode)
		}
		for i := range d.Items {
			defaultFieldRef(d.Items[i].FieldRef)
		}
	}
	if c := s.ConfigMap; c != nil && c.DefaultMode == nil {
		c.DefaultMode = mode(corev1.ConfigMapVolumeSourceDefaultMode)
	}
	if a := s.AzureDisk; a != nil {
		if a.CachingMode == nil {
			m := corev1.AzureDataDiskCachingReadWrite
			a.CachingMode = &m
		}
		if a.Kind == nil {
			k := corev1.AzureSharedBlobDisk
			a.Kind = &k
		}
		if a.FSType == nil {
			fs := "ext4"
			a.FSType = &fs
		}
		if a.ReadOnly == nil {
			a.ReadOnly = new(bool)
		}
	}
	if p := s.Projected; p != nil {
		if p.DefaultMode == nil {
			p.DefaultMode = mode(corev1.ProjectedVolumeSourceDefaultMode)
		}
		for i := range p.Sources {
			if d := p.Sources[i].DownwardAPI; d != nil {
				for j := range d.Items {
					defaultFieldRef(d.Items[j].FieldRef)
				}
			}
			if t := p.Sources[i].ServiceAccountToken; t != nil && t.ExpirationSeconds == nil {
				hour := int64(3600)
				t.ExpirationSeconds = &hour
			}
		}
	}
	if sio := s.ScaleIO; sio != nil {
		if sio.StorageMode == "" {
			sio.StorageMode = "ThinProvisioned"
		}
		if sio.FSType == "" {
			sio.FSType = "xfs"
		}
	}
	if e := s.Ephemeral; e != nil && e.VolumeClaimTemplate != nil {
		spec := &e.VolumeClaimTemplate.Spec
		if spec.VolumeMode == nil {
			fs := corev1.PersistentVolumeFilesystem
			spec.VolumeMode = &fs
		}
		roundUpResources(spec.Resources.Limits)
		roundUpResources(spec.Resources.Requests)
	}
}
