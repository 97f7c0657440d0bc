// Package serviceaccount is the admission plugin that gives a new pod its
// service account, as kube's ServiceAccount plugin does: the account
// "default" unless the pod names one, which must exist (the default one
// is waited for a moment, as the controller creates it), the account's
// image pull secrets unless the pod has its own, and, unless the pod or
// the account turns automounting off, a projected volume with a bound
// token, the cluster's CA and the namespace, mounted read-only in every
// container at the path clients look for them. Mirror pods are left
// alone. It runs in the mutating phase, on pod creates only.
package serviceaccount

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	utilrand "k8s.io/apimachinery/pkg/util/rand"

	"github.com/cronplane/cronplane/pkg/admission"
)

// What the plugin adds, with kube's names and values.
const (
	DefaultName = "default"
	// MountPath is where containers find the token, CA and namespace.
	MountPath = "/var/run/secrets/kubernetes.io/serviceaccount"
	// volumePrefix starts the name of the projected volume.
	volumePrefix = "kube-api-access-"
	// tokenExpirationSeconds is kube's lifetime of an auto-mounted token,
	// a few seconds over an hour so that it can be told apart.
	tokenExpirationSeconds = 3607
	rootCAConfigMap        = "kube-root-ca.crt"
	// defaultAttempts is how many times kube reads a missing default
	// account before refusing the pod.
	defaultAttempts = 10
)

// AccountGetter reads a service account; a missing one is an API NotFound
// error.
type AccountGetter interface {
	// GetServiceAccount reads from the apiserver's cache when live is
	// false, from etcd when true.
	GetServiceAccount(ctx context.Context, namespace, name string, live bool) (*corev1.ServiceAccount, error)
}

// Plugin fills in the service account of new pods.
type Plugin struct {
	accounts AccountGetter
	// suffix returns the random end of the volume's name.
	suffix func() string
	// retryInterval separates reads of a missing default account: 100 to
	// 200 ms, drawn once per plugin, as kube draws it.
	retryInterval time.Duration
}

// New returns the plugin reading accounts through g.
func New(g AccountGetter) *Plugin {
	return &Plugin{
		accounts:      g,
		suffix:        func() string { return utilrand.String(5) },
		retryInterval: time.Duration(100+utilrand.Intn(100)) * time.Millisecond,
	}
}

var _ admission.MutationInterface = (*Plugin)(nil)

func (*Plugin) Handles(op admission.Operation) bool { return op == admission.Create }

func (p *Plugin) Admit(ctx context.Context, a *admission.Attributes) error {
	if a.Resource.Group != "" || a.Resource.Resource != "pods" || a.Subresource != "" {
		return nil
	}
	pod, ok := a.Object.(*corev1.Pod)
	if !ok {
		return nil
	}
	if _, mirror := pod.Annotations[corev1.MirrorPodAnnotationKey]; mirror {
		return nil
	}
	if pod.Spec.ServiceAccountName == "" {
		pod.Spec.ServiceAccountName = DefaultName
	}
	// The deprecated alias follows the name, as kube's round trip has it.
	pod.Spec.DeprecatedServiceAccount = pod.Spec.ServiceAccountName
	sa, err := p.accounts.GetServiceAccount(ctx, a.Namespace, pod.Spec.ServiceAccountName, false)
	if apierrors.IsNotFound(err) {
		sa, err = p.readLive(ctx, a.Namespace, pod.Spec.ServiceAccountName)
	}
	if apierrors.IsNotFound(err) {
		// kube words it as its cache's lister does, in the singular.
		err = apierrors.NewNotFound(corev1.Resource("serviceaccount"), pod.Spec.ServiceAccountName)
	}
	if err != nil {
		return apierrors.NewForbidden(a.Resource.GroupResource(), a.Name,
			fmt.Errorf("error looking up service account %s/%s: %w", a.Namespace, pod.Spec.ServiceAccountName, err))
	}
	if automount(sa, pod) {
		p.mountToken(pod)
	}
	if len(pod.Spec.ImagePullSecrets) == 0 && len(sa.ImagePullSecrets) > 0 {
		pod.Spec.ImagePullSecrets = make([]corev1.LocalObjectReference, len(sa.ImagePullSecrets))
		for i, s := range sa.ImagePullSecrets {
			pod.Spec.ImagePullSecrets[i].Name = s.Name
		}
	}
	return nil
}

// readLive reads an account the cache does not have from etcd: it may have
// been created a moment ago, perhaps through another apiserver. The
// default account is read up to defaultAttempts times, a retryInterval
// apart, as kube does: the service account controller creates it just
// after its namespace, so a pod created at once waits for it instead of
// failing.
func (p *Plugin) readLive(ctx context.Context, namespace, name string) (*corev1.ServiceAccount, error) {
	attempts := 1
	if name == DefaultName {
		attempts = defaultAttempts
	}
	var err error
	for i := 0; i < attempts; i++ {
		if i > 0 {
			select {
			case <-ctx.Done():
				return nil, err
			case <-time.After(p.retryInterval):
			}
		}
		var sa *corev1.ServiceAccount
		if sa, err = p.accounts.GetServiceAccount(ctx, namespace, name, true); !apierrors.IsNotFound(err) {
			return sa, err
		}
	}
	return nil, err
}

// automount: the pod's word, else the account's, else yes.
func automount(sa *corev1.ServiceAccount, pod *corev1.Pod) bool {
	if v := pod.Spec.AutomountServiceAccountToken; v != nil {
		return *v
	}
	if v := sa.AutomountServiceAccountToken; v != nil {
		return *v
	}
	return true
}

// mountToken mounts the token volume (the pod's own kube-api-access-*
// volume if it has one) in every container that has nothing mounted at
// MountPath yet, and adds the volume if any container mounts it.
func (p *Plugin) mountToken(pod *corev1.Pod) {
	name, has := "", false
	for _, v := range pod.Spec.Volumes {
		if strings.HasPrefix(v.Name, volumePrefix) {
			name, has = v.Name, true
			break
		}
	}
	if name == "" {
		name = volumePrefix + p.suffix()
	}
	mount := corev1.VolumeMount{Name: name, ReadOnly: true, MountPath: MountPath}
	needed := false
	for _, cs := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range cs {
			if !mountsAt(&cs[i], MountPath) {
				cs[i].VolumeMounts = append(cs[i].VolumeMounts, mount)
				needed = true
			}
		}
	}
	if needed && !has {
		pod.Spec.Volumes = append(pod.Spec.Volumes, corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{Projected: tokenVolume()}})
	}
}

func mountsAt(c *corev1.Container, path string) bool {
	for _, m := range c.VolumeMounts {
		if m.MountPath == path {
			return true
		}
	}
	return false
}

// tokenVolume projects a bound token, the cluster's CA and the pod's
// namespace, with the file mode spelled out as kube spells it.
func tokenVolume() *corev1.ProjectedVolumeSource {
	mode := corev1.ProjectedVolumeSourceDefaultMode
	expiration := int64(tokenExpirationSeconds)
	return &corev1.ProjectedVolumeSource{
		DefaultMode: &mode,
		Sources: []corev1.VolumeProjection{
			{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token", ExpirationSeconds: &expiration}},
			{ConfigMap: &corev1.ConfigMapProjection{
				LocalObjectReference: corev1.LocalObjectReference{Name: rootCAConfigMap},
				Items:                []corev1.KeyToPath{{Key: "ca.crt", Path: "ca.crt"}},
			}},
			{DownwardAPI: &corev1.DownwardAPIProjection{Items: []corev1.DownwardAPIVolumeFile{{
				Path:     "namespace",
				FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.namespace"},
			}}}},
		},
	}
}
