package apply

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	cronschema "github.com/cronplane/cronplane/pkg/schema"
)

func cronJobManager(t *testing.T) *Manager {
	t.Helper()
	m, err := NewManager(cronschema.FromGoType(&batchv1.CronJob{}), &batchv1.CronJob{}, "batch/v1", nil)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// applyConfig is a CronJob's apply configuration, as JSON.
func applyConfig(schedule string, suspend bool, annotations string) map[string]interface{} {
	var c map[string]interface{}
	s := `{"apiVersion":"batch/v1","kind":"CronJob","metadata":{"name":"c","namespace":"n"` + annotations + `},
		"spec":{"schedule":"` + schedule + `","suspend":` + map[bool]string{true: "true", false: "false"}[suspend] + `,
		"jobTemplate":{"spec":{"template":{"spec":{"restartPolicy":"OnFailure","containers":[{"name":"c","image":"busybox"}]}}}}}}`
	if err := json.Unmarshal([]byte(s), &c); err != nil {
		panic(err)
	}
	return c
}

// clientSideApplied is a CronJob as kubectl's client-side apply leaves
// it: its fields owned by the client-side applier, the configuration in
// the annotation (recorded: nil for none).
func clientSideApplied(t *testing.T, m *Manager, schedule string, suspend bool, recorded map[string]interface{}) *batchv1.CronJob {
	t.Helper()
	cj := &batchv1.CronJob{
		TypeMeta:   metav1.TypeMeta{APIVersion: "batch/v1", Kind: "CronJob"},
		ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "n", UID: "u1", ResourceVersion: "5"},
	}
	cj.Spec.Schedule, cj.Spec.Suspend = schedule, &suspend
	cj.Spec.JobTemplate.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyOnFailure
	cj.Spec.JobTemplate.Spec.Template.Spec.Containers = []corev1.Container{{Name: "c", Image: "busybox"}}
	if recorded != nil {
		b, err := json.Marshal(recorded)
		if err != nil {
			t.Fatal(err)
		}
		cj.Annotations = map[string]string{LastAppliedAnnotation: string(b) + "\n"}
	}
	if err := m.Update(nil, cj, "kubectl-client-side-apply", "", time.Now()); err != nil {
		t.Fatal(err)
	}
	return cj
}

// TestApply_KubectlTakesOverFromClientSideApply: kubectl's server-side
// apply may change, without force, the fields whose values are those of
// the last-applied configuration; nothing else, and nobody else.
func TestApply_KubectlTakesOverFromClientSideApply(t *testing.T) {
	m := cronJobManager(t)
	csa := applyConfig("@hourly", false, "")
	for _, tc := range []struct {
		name      string
		live      *batchv1.CronJob
		manager   string
		config    map[string]interface{}
		conflicts string // the conflict error's message; "" for none
	}{
		{"kubectl takes over", clientSideApplied(t, m, "@hourly", false, csa), "kubectl", applyConfig("@daily", true, ""), ""},
		{"another manager does not", clientSideApplied(t, m, "@hourly", false, csa), "other", applyConfig("@daily", false, ""),
			`Apply failed with 1 conflict: conflict with "kubectl-client-side-apply" using batch/v1: .spec.schedule`},
		{"not without the annotation", clientSideApplied(t, m, "@hourly", false, nil), "kubectl", applyConfig("@daily", false, ""),
			`Apply failed with 1 conflict: conflict with "kubectl-client-side-apply" using batch/v1: .spec.schedule`},
		{"not a value changed since", clientSideApplied(t, m, "@hourly", true, csa), "kubectl", applyConfig("@daily", false, ""),
			`Apply failed with 1 conflict: conflict with "kubectl-client-side-apply" using batch/v1: .spec.suspend`},
		{"not from an annotation of another version", clientSideApplied(t, m, "@hourly", false, map[string]interface{}{"apiVersion": "batch/v1beta1", "kind": "CronJob", "spec": csa["spec"]}),
			"kubectl", applyConfig("@daily", false, ""),
			`Apply failed with 1 conflict: conflict with "kubectl-client-side-apply" using batch/v1: .spec.schedule`},
		{"not from an annotation that is not an object", clientSideApplied(t, m, "@hourly", false, map[string]interface{}{"apiVersion": "batch/v1", "spec": "x"}),
			"kubectl", applyConfig("@daily", false, ""),
			`Apply failed with 1 conflict: conflict with "kubectl-client-side-apply" using batch/v1: .spec.schedule`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := m.Apply(tc.live, &batchv1.CronJob{}, Configuration{Fields: tc.config, Sent: tc.config}, tc.manager, "", false, time.Now())
			if tc.conflicts != "" {
				if !apierrors.IsConflict(err) || err.Error() != tc.conflicts {
					t.Fatalf("got %v, want the conflict %q", err, tc.conflicts)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := out.(*batchv1.CronJob)
			if got.Spec.Schedule != "@daily" || !*got.Spec.Suspend {
				t.Errorf("spec %+v", got.Spec)
			}
			var owner string
			for _, e := range got.ManagedFields {
				if strings.Contains(string(e.FieldsV1.Raw), `"f:schedule"`) {
					owner += e.Manager + "/" + string(e.Operation)
				}
			}
			if owner != "kubectl/Apply" {
				t.Errorf("schedule owned by %q, want kubectl's apply alone", owner)
			}
		})
	}
}

// TestApply_KubectlRewritesTheLastAppliedAnnotation: kubectl's server-side
// apply of an object that has the annotation records its configuration
// there, as kubectl writes it; other appliers and objects without one
// leave it as it is.
func TestApply_KubectlRewritesTheLastAppliedAnnotation(t *testing.T) {
	m := cronJobManager(t)
	csa := applyConfig("@hourly", false, "")
	stale := func(cj *batchv1.CronJob) string { return cj.Annotations[LastAppliedAnnotation] }
	big := strings.Repeat("x", 200*1024)
	for _, tc := range []struct {
		name    string
		live    *batchv1.CronJob
		manager string
		config  map[string]interface{}
		// force: the configuration sets the annotation, which the
		// client-side applier owns.
		force bool
		want  func(live *batchv1.CronJob) string
	}{
		{"kubectl", clientSideApplied(t, m, "@hourly", false, csa), "kubectl", applyConfig("@daily", false, `,"labels":{"b":"<&>"}`), false,
			func(*batchv1.CronJob) string {
				return `{"apiVersion":"batch/v1","kind":"CronJob","metadata":{"labels":{"b":"\u003c\u0026\u003e"},"name":"c","namespace":"n"},` +
					`"spec":{"jobTemplate":{"spec":{"template":{"spec":{"containers":[{"image":"busybox","name":"c"}],"restartPolicy":"OnFailure"}}}},"schedule":"@daily","suspend":false}}` + "\n"
			}},
		{"kubectl, the configuration's own annotation left out", clientSideApplied(t, m, "@hourly", false, csa), "kubectl",
			applyConfig("@daily", false, `,"annotations":{"`+LastAppliedAnnotation+`":"mine","a":"1"}`), true,
			func(*batchv1.CronJob) string {
				return `{"apiVersion":"batch/v1","kind":"CronJob","metadata":{"annotations":{"a":"1"},"name":"c","namespace":"n"},` +
					`"spec":{"jobTemplate":{"spec":{"template":{"spec":{"containers":[{"image":"busybox","name":"c"}],"restartPolicy":"OnFailure"}}}},"schedule":"@daily","suspend":false}}` + "\n"
			}},
		{"another manager", clientSideApplied(t, m, "@hourly", false, csa), "other", applyConfig("@hourly", false, `,"labels":{"b":"1"}`), false, stale},
		{"no annotation to rewrite", clientSideApplied(t, m, "@hourly", false, nil), "kubectl", applyConfig("@hourly", false, `,"labels":{"b":"1"}`), false, stale},
		{"too large for the annotations", clientSideApplied(t, m, "@hourly", false, csa), "kubectl", applyConfig("@hourly", false, `,"annotations":{"big":"`+big+`"}`), false,
			func(*batchv1.CronJob) string { return "" }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want := tc.want(tc.live)
			out, err := m.Apply(tc.live, &batchv1.CronJob{}, Configuration{Fields: tc.config, Sent: tc.config}, tc.manager, "", tc.force, time.Now())
			if err != nil {
				t.Fatal(err)
			}
			got, ok := out.(*batchv1.CronJob).Annotations[LastAppliedAnnotation]
			if got != want || ok != (want != "") {
				t.Errorf("annotation %q (present %v)\nwant %q", got, ok, want)
			}
		})
	}
}
