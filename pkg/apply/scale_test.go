package apply

import (
	"encoding/json"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// entry is a managedFields entry; at, when not zero, its time in seconds.
func entry(manager string, op metav1.ManagedFieldsOperationType, apiVersion, subresource, fields string, at int64) metav1.ManagedFieldsEntry {
	e := metav1.ManagedFieldsEntry{Manager: manager, Operation: op, APIVersion: apiVersion, Subresource: subresource,
		FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(fields)}}
	if at != 0 {
		t := metav1.NewTime(time.Unix(at, 0).UTC())
		e.Time = &t
	}
	return e
}

func entriesJSON(t *testing.T, entries []metav1.ManagedFieldsEntry) string {
	t.Helper()
	b, err := json.Marshal(entries)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

const (
	update = metav1.ManagedFieldsOperationUpdate
	apply  = metav1.ManagedFieldsOperationApply
	// fields of the object: replicas at .spec.count in v1, .spec.replicas
	// in v2; v3 has no scale subresource.
	v1Count    = `{"f:spec":{"f:count":{}}}`
	v1CountAnd = `{"f:spec":{"f:count":{},"f:size":{}}}`
	v1Size     = `{"f:spec":{"f:size":{}}}`
	v2Replicas = `{"f:spec":{"f:replicas":{}}}`
	v3Replicas = `{"f:spec":{"f:replicas":{}}}`
	inScale    = `{"f:spec":{"f:replicas":{}}}`
)

func scaleFieldsOfV1(t *testing.T) *ScaleFields {
	t.Helper()
	return NewScaleFields("g/v1", map[string]string{"g/v1": ".spec.count", "g/v2": ".spec.replicas", "g/v3": ""})
}

// TestScaleFields_ToScaleKeepsTheOwnersOfReplicas: the Scale's owners of
// spec.replicas are the object's owners of its version's replicas field,
// their kind of write and their time kept.
func TestScaleFields_ToScaleKeepsTheOwnersOfReplicas(t *testing.T) {
	s := scaleFieldsOfV1(t)
	got, err := s.ToScale([]metav1.ManagedFieldsEntry{
		entry("applier", apply, "g/v1", "", v1CountAnd, 100),
		entry("sizer", update, "g/v1", "", v1Size, 200),
		entry("v2-writer", update, "g/v2", "", v2Replicas, 300),
		entry("v3-writer", update, "g/v3", "", v3Replicas, 400),
		entry("gone", update, "g/v0", "", v1Count, 500),
	})
	if err != nil {
		t.Fatal(err)
	}
	want := entriesJSON(t, []metav1.ManagedFieldsEntry{
		entry("applier", apply, "autoscaling/v1", "", inScale, 100),
		entry("v2-writer", update, "autoscaling/v1", "", inScale, 300),
	})
	if g := entriesJSON(t, got); g != want {
		t.Errorf("got  %s\nwant %s", g, want)
	}
}

// TestScaleFields_FromScaleMovesReplicasAsKube merges the Scale's owners
// back into the object's entries as kube does.
func TestScaleFields_FromScaleMovesReplicasAsKube(t *testing.T) {
	s := scaleFieldsOfV1(t)
	for _, tc := range []struct {
		name          string
		parent, scale []metav1.ManagedFieldsEntry
		want          []metav1.ManagedFieldsEntry
	}{{
		name:   "a scaler takes replicas from the object's owner, in an entry of the served version without a time",
		parent: []metav1.ManagedFieldsEntry{entry("creator", update, "g/v1", "", v1CountAnd, 100)},
		scale:  []metav1.ManagedFieldsEntry{entry("scaler", update, "autoscaling/v1", "scale", inScale, 900)},
		want: []metav1.ManagedFieldsEntry{
			entry("scaler", update, "g/v1", "scale", v1Count, 0),
			entry("creator", update, "g/v1", "", v1Size, 100),
		},
	}, {
		name:   "an owner left with nothing goes",
		parent: []metav1.ManagedFieldsEntry{entry("creator", update, "g/v1", "", v1Count, 100)},
		scale:  nil,
		want:   nil,
	}, {
		name:   "an applier that still owns the Scale's replicas keeps its entry",
		parent: []metav1.ManagedFieldsEntry{entry("applier", apply, "g/v1", "", v1CountAnd, 100)},
		scale:  []metav1.ManagedFieldsEntry{entry("applier", apply, "autoscaling/v1", "", inScale, 100)},
		want:   []metav1.ManagedFieldsEntry{entry("applier", apply, "g/v1", "", v1CountAnd, 100)},
	}, {
		// An updater is told apart by its version too: seen through the
		// Scale it is another owner, whose replicas come back apart.
		name:   "an updater that still owns the Scale's replicas gets them back in an entry of its own",
		parent: []metav1.ManagedFieldsEntry{entry("creator", update, "g/v1", "", v1CountAnd, 100)},
		scale:  []metav1.ManagedFieldsEntry{entry("creator", update, "autoscaling/v1", "", inScale, 100)},
		want: []metav1.ManagedFieldsEntry{
			entry("creator", update, "g/v1", "", v1Count, 0),
			entry("creator", update, "g/v1", "", v1Size, 100),
		},
	}, {
		name: "entries of versions without a scale stay; of unknown versions go",
		parent: []metav1.ManagedFieldsEntry{
			entry("v3-writer", update, "g/v3", "", v3Replicas, 100),
			entry("gone", update, "g/v0", "", v1Count, 200),
		},
		scale: nil,
		want:  []metav1.ManagedFieldsEntry{entry("v3-writer", update, "g/v3", "", v3Replicas, 100)},
	}, {
		name:   "a Scale's owner of other fields only is not the object's",
		parent: []metav1.ManagedFieldsEntry{entry("sizer", update, "g/v1", "", v1Size, 100)},
		scale:  []metav1.ManagedFieldsEntry{entry("putter", update, "autoscaling/v1", "scale", `{"f:status":{"f:replicas":{}}}`, 900)},
		want:   []metav1.ManagedFieldsEntry{entry("sizer", update, "g/v1", "", v1Size, 100)},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := s.FromScale(tc.parent, tc.scale)
			if err != nil {
				t.Fatal(err)
			}
			if g, w := entriesJSON(t, got), entriesJSON(t, tc.want); g != w {
				t.Errorf("got  %s\nwant %s", g, w)
			}
		})
	}
}
