package podspec

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// TestValidatePod_PodOnlyRules checks the rules kube applies to a Pod's
// own spec and not to templates; the answers are kube-apiserver v1.29's
// to the same Pods (the last one, which the service account admission
// plugin hides there, is kube's code path).
func TestValidatePod_PodOnlyRules(t *testing.T) {
	cases := []struct {
		name string
		yaml string
		want []string
	}{
		{"valid", `{metadata: {name: p1}, spec: {serviceAccountName: default, containers: [{name: c, image: busybox}]}}`, nil},
		{"host port must match on the host network, no blank around images", `{metadata: {name: p1}, spec: {serviceAccountName: default, hostNetwork: true, containers: [{name: c, image: " busybox", ports: [{containerPort: 80, hostPort: 81}]}]}}`, []string{
			"spec.containers[0].ports[0].hostPort: Invalid value: 81: must match `containerPort` when `hostNetwork` is true",
			`spec.containers[0].image: Invalid value: " busybox": must not have leading or trailing whitespace`,
		}},
		{"ephemeral containers and a node before the gates clear", `{metadata: {name: p1}, spec: {serviceAccountName: default, nodeName: n1, schedulingGates: [{name: g}], containers: [{name: c, image: busybox}], ephemeralContainers: [{name: e, image: busybox}]}}`, []string{
			"spec.ephemeralContainers: Forbidden: cannot be set on create",
			"spec.nodeName: Forbidden: cannot be set until all schedulingGates have been cleared",
		}},
		{"a claim an ephemeral volume creates", `{metadata: {name: p1}, spec: {serviceAccountName: default, containers: [{name: c, image: busybox}], volumes: [{name: v, ephemeral: {volumeClaimTemplate: {spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}}}}, {name: w, persistentVolumeClaim: {claimName: p1-v}}]}}`, []string{
			`spec.volumes[1].persistentVolumeClaim.claimName: Invalid value: "p1-v": must not reference a PVC that gets created for an ephemeral volume`,
		}},
		{"token projection without a service account", `{metadata: {name: p1}, spec: {containers: [{name: c, image: busybox}], volumes: [{name: v, projected: {sources: [{serviceAccountToken: {path: t}}]}}]}}`, []string{
			"spec.volumes[0].projected.sources[0].serviceAccountToken: Forbidden: must not be specified when serviceAccountName is not set",
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var pod corev1.Pod
			unmarshal(t, tc.yaml, &pod)
			DefaultPod(&pod)
			got := fieldErrors(ValidatePod(&pod, OptionsFor(nil, nil)))
			if joinLines(got) != joinLines(tc.want) {
				t.Fatalf("errors:\n%s\nwant:\n%s", joinLines(got), joinLines(tc.want))
			}
		})
	}
}

func TestValidateTemplate_HostPortMayBeLeftToThePodsDefaults(t *testing.T) {
	tmpl := parseTemplate(t, `spec: {hostNetwork: true, containers: [{name: c, image: busybox, ports: [{containerPort: 80}]}]}`)
	DefaultTemplate(tmpl)
	if errs := ValidateTemplate(tmpl, field.NewPath("template"), Options{}); len(errs) > 0 {
		t.Fatalf("a template may leave the host port 0: %v", errs)
	}
}

func TestDropDisabledFields_KeepsWhatTheStoredSpecUses(t *testing.T) {
	withSleep := func() *corev1.PodSpec {
		return &corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Lifecycle: &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{Sleep: &corev1.SleepAction{Seconds: 1}}}}}}
	}
	hostUsers := false
	spec := withSleep()
	spec.HostUsers = &hostUsers
	DropDisabledFields(spec, nil)
	if spec.Containers[0].Lifecycle.PreStop.Sleep != nil || spec.HostUsers != nil {
		t.Fatalf("alpha fields kept on create: %+v", spec)
	}
	spec = withSleep()
	DropDisabledFields(spec, withSleep())
	if spec.Containers[0].Lifecycle.PreStop.Sleep == nil {
		t.Fatal("a sleep hook the stored spec has was dropped")
	}
}

func TestOptionsFor_ForgivesWhatTheStoredObjectHas(t *testing.T) {
	old := &corev1.PodSpec{
		HostNetwork:     true,
		SecurityContext: &corev1.PodSecurityContext{Sysctls: []corev1.Sysctl{{Name: "net.core.somaxconn", Value: "1"}}},
		Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{
			Limits: corev1.ResourceList{"hugepages-2Mi": mustQuantity(t, "3Mi")}}}},
		TopologySpreadConstraints: []corev1.TopologySpreadConstraint{{LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"k": "bad value!"}}}},
	}
	oldMeta := &metav1.ObjectMeta{Annotations: map[string]string{deletionCostAnnotation: "+1"}}
	got := OptionsFor(old, oldMeta)
	want := Options{AllowInvalidPodDeletionCost: true, AllowIndivisibleHugePagesValues: true,
		AllowInvalidTopologySpreadConstraintLabelSelector: true, AllowNamespacedSysctlsForHostNetAndHostIPC: true}
	if got != want {
		t.Fatalf("options %+v, want %+v", got, want)
	}
	if (OptionsFor(nil, nil) != Options{}) {
		t.Fatal("a create is forgiven something")
	}
}

// TestPodWarnings_AfterThePodsDefaults: a Pod's negative grace period is
// 1 by the time kube warns, so only the fraction of a byte is left (kube
// v1.29's one warning for kubePodIn).
func TestPodWarnings_AfterThePodsDefaults(t *testing.T) {
	var pod corev1.Pod
	unmarshal(t, kubePodIn, &pod)
	DefaultPod(&pod)
	want := `spec.volumes[3].ephemeral.volumeClaimTemplate.spec.resources.requests[storage]: fractional byte value "2m" is invalid, must be an integer`
	if got := joinLines(PodWarnings(&pod)); got != want {
		t.Fatalf("warnings:\n%s\nwant:\n%s", got, want)
	}
}
