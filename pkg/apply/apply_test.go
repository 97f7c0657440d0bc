package apply

import (
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	"sigs.k8s.io/structured-merge-diff/v4/schema"

	cronschema "github.com/cronplane/cronplane/pkg/schema"
)

// listOf resolves the list type of a field path in the CronJob schema.
func listOf(t *testing.T, path ...string) *schema.List {
	t.Helper()
	pt := ParseableType(cronschema.FromGoType(&batchv1.CronJob{}))
	atom, ok := pt.Schema.Resolve(pt.TypeRef)
	for _, p := range path {
		if !ok || atom.Map == nil {
			t.Fatalf("%v: no map at %s", path, p)
		}
		f, found := atom.Map.FindField(p)
		if !found {
			t.Fatalf("%v: no field %s", path, p)
		}
		atom, ok = pt.Schema.Resolve(f.Type)
	}
	if !ok || atom.List == nil {
		t.Fatalf("%v is not a list", path)
	}
	return atom.List
}

func TestSchema_ListTypesFollowPatchTags(t *testing.T) {
	containers := listOf(t, "spec", "jobTemplate", "spec", "template", "spec", "containers")
	if containers.ElementRelationship != schema.Associative || len(containers.Keys) != 1 || containers.Keys[0] != "name" {
		t.Fatalf("containers: %+v", containers)
	}
	finalizers := listOf(t, "metadata", "finalizers")
	if finalizers.ElementRelationship != schema.Associative || len(finalizers.Keys) != 0 {
		t.Fatalf("finalizers should be a set: %+v", finalizers)
	}
	active := listOf(t, "status", "active")
	if active.ElementRelationship != schema.Atomic {
		t.Fatalf("status.active should be atomic: %+v", active)
	}
}
