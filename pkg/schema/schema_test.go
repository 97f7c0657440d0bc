package schema

import (
	"reflect"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
)

// TestFromGoType_SharesTheDefinitionsOfAGoType: the pod spec's
// definitions are built once for every resource that holds one, and each
// schema names exactly the definitions its root reaches.
func TestFromGoType_SharesTheDefinitionsOfAGoType(t *testing.T) {
	cronJob, job, pod := FromGoType(&batchv1.CronJob{}), FromGoType(&batchv1.Job{}), FromGoType(&corev1.Pod{})
	podSpec := DefinitionName(reflect.TypeOf(corev1.PodSpec{}))
	if cronJob.Definitions[podSpec] == nil || cronJob.Definitions[podSpec] != job.Definitions[podSpec] || job.Definitions[podSpec] != pod.Definitions[podSpec] {
		t.Errorf("the pod spec's definition is not one shared schema: %p %p %p",
			cronJob.Definitions[podSpec], job.Definitions[podSpec], pod.Definitions[podSpec])
	}
	if _, ok := pod.Definitions[DefinitionName(reflect.TypeOf(batchv1.CronJob{}))]; ok {
		t.Error("a Pod's schema names the CronJob's definition, which its root does not reach")
	}
	for _, st := range []*Structural{cronJob, job, pod} {
		reached := Definitions{}
		st.Definitions.collect(st.RootName(), reached)
		if len(reached) != len(st.Definitions) {
			t.Errorf("%s: %d definitions, its root reaches %d", st.RootName(), len(st.Definitions), len(reached))
		}
		for name, d := range st.Definitions {
			if d == nil {
				t.Errorf("%s: definition %s is nil", st.RootName(), name)
			}
		}
	}
}
