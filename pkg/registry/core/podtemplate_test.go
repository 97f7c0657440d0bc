package core

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func validPodTemplate() *corev1.PodTemplate {
	pt := &corev1.PodTemplate{
		ObjectMeta: metav1.ObjectMeta{Name: "pt", Namespace: "default", ResourceVersion: "5"},
		Template: corev1.PodTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"a": "b", "c": "d"}},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c1", Image: "busybox"}, {Name: "c2", Image: "nginx:1"}}},
		},
	}
	PodTemplateResource().Default(pt)
	return pt
}

// The messages are those kube-apiserver v1.29 answered for the same
// objects.
func TestPodTemplateValidate_ChecksTheTemplateAtItsPath(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(*corev1.PodTemplate)
		want   []string
	}{
		{"valid", func(*corev1.PodTemplate) {}, nil},
		{"bad container", func(pt *corev1.PodTemplate) {
			pt.Template.Spec.Containers = []corev1.Container{{Name: "Bad", TerminationMessagePolicy: "File", ImagePullPolicy: "Always"}}
		}, []string{
			`template.spec.containers[0].name: Invalid value: "Bad": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')`,
			`template.spec.containers[0].image: Required value`,
		}},
		{"bad template label", func(pt *corev1.PodTemplate) { pt.Template.Labels = map[string]string{"a": "-"} }, []string{
			`template.labels: Invalid value: "-": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')`,
		}},
		{"ephemeral containers", func(pt *corev1.PodTemplate) {
			pt.Template.Spec.EphemeralContainers = []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: "e", Image: "x", TerminationMessagePolicy: "File", ImagePullPolicy: "Always"}}}
		}, []string{`template.spec.ephemeralContainers: Forbidden: ephemeral containers not allowed in pod template`}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pt := validPodTemplate()
			tc.mutate(pt)
			checkErrs(t, podTemplateStrategy{}.Validate(pt), tc.want)
		})
	}
}

func TestPodTemplateUpdate_GenerationCountsTemplateChanges(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(*corev1.PodTemplate)
		want   int64
	}{
		{"labels of the object", func(pt *corev1.PodTemplate) { pt.Labels = map[string]string{"x": "y"} }, 1},
		{"image", func(pt *corev1.PodTemplate) { pt.Template.Spec.Containers[0].Image = "busybox:2" }, 2},
		{"template labels", func(pt *corev1.PodTemplate) { pt.Template.Labels = nil }, 2},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			old := validPodTemplate()
			podTemplateStrategy{}.PrepareForCreate(old)
			pt := old.DeepCopy()
			tc.mutate(pt)
			podTemplateStrategy{}.PrepareForUpdate(pt, old)
			if pt.Generation != tc.want {
				t.Fatalf("generation %d, want %d", pt.Generation, tc.want)
			}
			checkErrs(t, podTemplateStrategy{}.ValidateUpdate(pt, old), nil)
		})
	}
}

func TestPodTemplateTable_ShowsContainersImagesAndPodLabels(t *testing.T) {
	pt := validPodTemplate()
	got := podTemplateTable.Cells(pt, time.Now())
	want := []interface{}{"pt", "c1,c2", "busybox,nginx:1", "a=b,c=d"}
	if len(got) != len(want) {
		t.Fatalf("cells %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("cells %v, want %v", got, want)
		}
	}
	pt.Template.Labels = nil
	if got := podTemplateTable.Cells(pt, time.Now())[3]; got != "<none>" {
		t.Fatalf("labels cell %q, want <none>", got)
	}
}
