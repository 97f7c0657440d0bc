package apply

import (
	"reflect"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	smd "sigs.k8s.io/structured-merge-diff/v4/schema"

	cronschema "github.com/cronplane/cronplane/pkg/schema"
)

// TestParseableType_SharesTheMergeTypesOfGoDefinitions: the merge type of
// a Go type's definition is built once for every resource that holds it,
// but where the schema keeps unknown fields, which changes it.
func TestParseableType_SharesTheMergeTypesOfGoDefinitions(t *testing.T) {
	podSpec := cronschema.DefinitionName(reflect.TypeOf(batchv1.JobSpec{}.Template.Spec))
	named := func(st *cronschema.Structural, name string) *smd.Map {
		def, ok := ParseableType(st).Schema.FindNamedType(name)
		if !ok || def.Map == nil {
			t.Fatalf("%s: no struct type %s", st.RootName(), name)
		}
		return def.Map
	}
	cronJob, job := cronschema.FromGoType(&batchv1.CronJob{}), cronschema.FromGoType(&batchv1.Job{})
	if named(cronJob, podSpec) != named(job, podSpec) {
		t.Error("the pod spec's merge type is built again for each resource")
	}
	meta := cronschema.ObjectMetaDefinition
	keeping := (&cronschema.Structural{Root: &cronschema.Schema{Type: "object"}, KeepUnknownFields: true}).AsResource("com.example.v1.Keep")
	if m := named(keeping, meta); m == named(job, meta) || m.ElementType.NamedType == nil {
		t.Error("ObjectMeta's merge type where unknown fields are kept is the Go type's")
	}
}
