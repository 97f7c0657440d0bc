package serviceaccount

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/cronplane/cronplane/pkg/admission"
)

type accounts map[string]*corev1.ServiceAccount

func (a accounts) GetServiceAccount(_ context.Context, _, name string, _ bool) (*corev1.ServiceAccount, error) {
	if sa, ok := a[name]; ok {
		return sa, nil
	}
	return nil, apierrors.NewNotFound(corev1.Resource("serviceaccounts"), name)
}

func TestAdmit_GivesNewPodsTheirServiceAccount(t *testing.T) {
	no := false
	cases := []struct {
		name       string
		pod        func(*corev1.Pod)
		wantErr    string
		wantSA     string
		wantMounts int
		wantPull   int
	}{
		{"default account, token mounted in every container", func(*corev1.Pod) {}, "", "default", 2, 1},
		{"named account that turns automounting off", func(p *corev1.Pod) { p.Spec.ServiceAccountName = "quiet" }, "", "quiet", 0, 0},
		{"pod turns automounting off", func(p *corev1.Pod) { p.Spec.AutomountServiceAccountToken = &no }, "", "default", 0, 1},
		{"a container mounts the path itself", func(p *corev1.Pod) {
			p.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "own", MountPath: MountPath}}
		}, "", "default", 1, 1},
		{"missing account", func(p *corev1.Pod) { p.Spec.ServiceAccountName = "nope" },
			`pods "p" is forbidden: error looking up service account ns/nope: serviceaccount "nope" not found`, "", 0, 0},
		{"mirror pod left alone", func(p *corev1.Pod) { p.Annotations = map[string]string{corev1.MirrorPodAnnotationKey: "x"} }, "", "", 0, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			plugin := New(accounts{
				"default": {ObjectMeta: metav1.ObjectMeta{Name: "default"}, ImagePullSecrets: []corev1.LocalObjectReference{{Name: "pull"}}},
				"quiet":   {ObjectMeta: metav1.ObjectMeta{Name: "quiet"}, AutomountServiceAccountToken: &no},
			})
			plugin.suffix = func() string { return "abcde" }
			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns"}, Spec: corev1.PodSpec{
				InitContainers: []corev1.Container{{Name: "init"}},
				Containers:     []corev1.Container{{Name: "main"}},
			}}
			tc.pod(pod)
			err := plugin.Admit(context.Background(), &admission.Attributes{
				Operation: admission.Create, Resource: schema.GroupVersionResource{Version: "v1", Resource: "pods"},
				Namespace: "ns", Name: "p", Object: pod,
			})
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr || !apierrors.IsForbidden(err) {
					t.Fatalf("error %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			mounts := 0
			for _, c := range append(pod.Spec.InitContainers, pod.Spec.Containers...) {
				for _, m := range c.VolumeMounts {
					if m.Name == "kube-api-access-abcde" && m.ReadOnly && m.MountPath == MountPath {
						mounts++
					}
				}
			}
			if pod.Spec.ServiceAccountName != tc.wantSA || mounts != tc.wantMounts || len(pod.Spec.ImagePullSecrets) != tc.wantPull {
				t.Fatalf("account %q, %d mounts, pull secrets %v", pod.Spec.ServiceAccountName, mounts, pod.Spec.ImagePullSecrets)
			}
			if hasVolume := len(pod.Spec.Volumes) == 1 && pod.Spec.Volumes[0].Name == "kube-api-access-abcde"; hasVolume != (tc.wantMounts > 0) {
				t.Fatalf("volumes %+v", pod.Spec.Volumes)
			}
			if tc.wantMounts > 0 {
				src := pod.Spec.Volumes[0].Projected.Sources
				if len(src) != 3 || *src[0].ServiceAccountToken.ExpirationSeconds != 3607 || src[1].ConfigMap.Name != "kube-root-ca.crt" ||
					src[2].DownwardAPI.Items[0].FieldRef.FieldPath != "metadata.namespace" || *pod.Spec.Volumes[0].Projected.DefaultMode != 0o644 {
					t.Fatalf("projected volume %+v", pod.Spec.Volumes[0].Projected)
				}
			}
		})
	}
}

// lateAccounts has every account, but live reads find it only from the
// foundAt-th on, and the cache never does, as just after the service
// account controller created it.
type lateAccounts struct {
	foundAt   int
	liveReads int
}

func (l *lateAccounts) GetServiceAccount(_ context.Context, _, name string, live bool) (*corev1.ServiceAccount, error) {
	if live {
		l.liveReads++
		if l.liveReads >= l.foundAt {
			return &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, nil
		}
	}
	return nil, apierrors.NewNotFound(corev1.Resource("serviceaccounts"), name)
}

func TestAdmit_WaitsForTheDefaultAccountOnly(t *testing.T) {
	for _, tc := range []struct {
		name          string
		account       string
		foundAt       int
		wantErr       bool
		wantLiveReads int
	}{
		{"default account created during the retries", "default", 4, false, 4},
		{"default account found at the last attempt", "default", 10, false, 10},
		{"default account never created", "default", 11, true, 10},
		{"named account is read once", "named", 2, true, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			getter := &lateAccounts{foundAt: tc.foundAt}
			plugin := New(getter)
			plugin.retryInterval = time.Millisecond
			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns"}, Spec: corev1.PodSpec{
				ServiceAccountName: tc.account, Containers: []corev1.Container{{Name: "main"}},
			}}
			err := plugin.Admit(context.Background(), &admission.Attributes{
				Operation: admission.Create, Resource: schema.GroupVersionResource{Version: "v1", Resource: "pods"},
				Namespace: "ns", Name: "p", Object: pod,
			})
			if (err != nil) != tc.wantErr || (err != nil && !apierrors.IsForbidden(err)) {
				t.Fatalf("error %v, want error %v", err, tc.wantErr)
			}
			if getter.liveReads != tc.wantLiveReads {
				t.Fatalf("%d live reads, want %d", getter.liveReads, tc.wantLiveReads)
			}
		})
	}
}
