package podspec

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

func unmarshal(t *testing.T, text string, into interface{}) {
	t.Helper()
	if err := yaml.UnmarshalStrict([]byte(text), into); err != nil {
		t.Fatal(err)
	}
}

func TestDefaultTemplate_MatchesKube(t *testing.T) {
	var tmpl, want corev1.PodTemplateSpec
	unmarshal(t, kubeTemplateIn, &tmpl)
	unmarshal(t, kubeTemplateOut, &want)
	sent := tmpl.DeepCopy()
	DefaultTemplate(&tmpl)
	if !equality.Semantic.DeepEqual(tmpl, want) {
		got, _ := yaml.Marshal(tmpl)
		t.Fatalf("defaulted template:\n%s\nwant:\n%s", got, kubeTemplateOut)
	}
	again := tmpl.DeepCopy()
	DefaultTemplate(again)
	if !equality.Semantic.DeepEqual(&tmpl, again) {
		t.Fatal("defaulting twice changed the template")
	}
	if ref := referenceServer(t); ref != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		obj := &corev1.PodTemplate{ObjectMeta: metav1.ObjectMeta{Name: "podspec-defaults"}, Template: *sent}
		out, err := ref.client.CoreV1().PodTemplates("default").Create(ctx, obj, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if err != nil {
			t.Fatal(err)
		}
		if !equality.Semantic.DeepEqual(out.Template, want) {
			got, _ := yaml.Marshal(out.Template)
			t.Fatalf("kube-apiserver defaults the template to:\n%s\nwant:\n%s", got, kubeTemplateOut)
		}
	}
}

func TestDefaultPod_AddsThePodsOwnDefaults(t *testing.T) {
	var pod, want corev1.Pod
	unmarshal(t, kubePodIn, &pod)
	unmarshal(t, kubePodOut, &want)
	DefaultPod(&pod)
	if !equality.Semantic.DeepEqual(pod, want) {
		got, _ := yaml.Marshal(pod)
		t.Fatalf("defaulted pod:\n%s\nwant:\n%s", got, kubePodOut)
	}
	again := pod.DeepCopy()
	DefaultPod(again)
	if !equality.Semantic.DeepEqual(&pod, again) {
		t.Fatal("defaulting twice changed the pod")
	}
}

func TestDefaultSpec_ServiceAccountNameWinsOverItsAlias(t *testing.T) {
	spec := corev1.PodSpec{ServiceAccountName: "new", DeprecatedServiceAccount: "old"}
	DefaultSpec(&spec)
	if spec.ServiceAccountName != "new" || spec.DeprecatedServiceAccount != "new" {
		t.Fatalf("serviceAccountName %q, serviceAccount %q", spec.ServiceAccountName, spec.DeprecatedServiceAccount)
	}
}

func TestImagePullPolicy_AlwaysOnlyForLatestOrUntagged(t *testing.T) {
	for image, want := range map[string]corev1.PullPolicy{
		"busybox":                        corev1.PullAlways,
		"busybox:latest":                 corev1.PullAlways,
		"busybox:1.36":                   corev1.PullIfNotPresent,
		"registry:5000/busybox":          corev1.PullAlways,
		"registry:5000/busybox:v1":       corev1.PullIfNotPresent,
		"localhost/busybox":              corev1.PullAlways,
		"library/busybox:latest":         corev1.PullAlways,
		"busybox@sha256:" + hex64:        corev1.PullIfNotPresent,
		"busybox:latest@sha256:" + hex64: corev1.PullAlways,
		"Registry.io/x":                  corev1.PullAlways,
		// References that do not parse have no tag.
		"Busybox":              corev1.PullIfNotPresent,
		"busybox@sha256:abc":   corev1.PullIfNotPresent,
		"busybox@md5:" + hex64: corev1.PullIfNotPresent,
		hex64:                  corev1.PullIfNotPresent,
		"":                     corev1.PullIfNotPresent,
		"busy box":             corev1.PullIfNotPresent,
		"a/B":                  corev1.PullIfNotPresent,
	} {
		c := corev1.Container{Image: image}
		DefaultContainer(&c)
		if c.ImagePullPolicy != want {
			t.Errorf("%q: %s, want %s", image, c.ImagePullPolicy, want)
		}
	}
}

const hex64 = "0000000000000000000000000000000000000000000000000000000000000000"

func mustQuantity(t *testing.T, s string) resource.Quantity {
	t.Helper()
	q, err := resource.ParseQuantity(s)
	if err != nil {
		t.Fatal(err)
	}
	return q
}
