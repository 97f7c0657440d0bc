package apiserver_test

import (
	"encoding/json"
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

func applyBody(name, schedule string, extra string) string {
	return `{"apiVersion":"batch/v1","kind":"CronJob","metadata":{"name":"` + name + `"` + extra + `},"spec":{"schedule":"` + schedule + `","jobTemplate":{"spec":{"template":{"spec":{"restartPolicy":"Never","containers":[{"name":"c","image":"busybox"}]}}}}}}`
}

func apply(t *testing.T, ns, name, manager, body string, force bool) (*batchv1.CronJob, error) {
	t.Helper()
	return srv.Client.BatchV1().CronJobs(ns).Patch(ctx(t), name, types.ApplyPatchType, []byte(body), metav1.PatchOptions{FieldManager: manager, Force: &force})
}

// owners returns the managers whose entries own path (like "f:spec/f:schedule").
func owners(cj *batchv1.CronJob, path ...string) []string {
	var out []string
	for _, e := range cj.ManagedFields {
		var m map[string]interface{}
		if e.FieldsV1 == nil || json.Unmarshal(e.FieldsV1.Raw, &m) != nil {
			continue
		}
		cur := m
		found := true
		for _, p := range path {
			next, ok := cur[p].(map[string]interface{})
			if !ok {
				found = false
				break
			}
			cur = next
		}
		if found {
			out = append(out, e.Manager+"/"+string(e.Operation))
		}
	}
	return out
}

func TestApply_FieldOwnershipTable(t *testing.T) {
	ns := namespace(t)
	created, err := apply(t, ns, "ssa", "mgr-a", applyBody("ssa", "@hourly", ""), false)
	if err != nil {
		t.Fatal(err)
	}
	if got := owners(created, "f:spec", "f:schedule"); strings.Join(got, ",") != "mgr-a/Apply" {
		t.Fatalf("after create: owners %v", got)
	}

	// Another manager, another value, no force: conflict, nothing changes.
	_, err = apply(t, ns, "ssa", "mgr-b", applyBody("ssa", "@daily", ""), false)
	se := wantStatus(t, err, 409, metav1.StatusReasonConflict)
	if want := `Apply failed with 1 conflict: conflict with "mgr-a": .spec.schedule`; se.Message != want {
		t.Fatalf("message %q, want %q", se.Message, want)
	}
	if c := se.Details.Causes; len(c) != 1 || c[0].Field != ".spec.schedule" || c[0].Type != metav1.CauseTypeFieldManagerConflict {
		t.Fatalf("causes %+v", c)
	}

	// The same value: shared ownership.
	shared, err := apply(t, ns, "ssa", "mgr-b", applyBody("ssa", "@hourly", ""), false)
	if err != nil {
		t.Fatal(err)
	}
	if got := owners(shared, "f:spec", "f:schedule"); len(got) != 2 {
		t.Fatalf("shared: owners %v", got)
	}
	// A shared field changed by one of its owners conflicts with the other.
	if _, err := apply(t, ns, "ssa", "mgr-a", applyBody("ssa", "@weekly", ""), false); err == nil {
		t.Fatal("change of a shared field did not conflict")
	}

	// Force: the value changes and ownership moves.
	forced, err := apply(t, ns, "ssa", "mgr-b", applyBody("ssa", "@daily", ""), true)
	if err != nil {
		t.Fatal(err)
	}
	if forced.Spec.Schedule != "@daily" || strings.Join(owners(forced, "f:spec", "f:schedule"), ",") != "mgr-b/Apply" {
		t.Fatalf("forced: schedule %s owners %v", forced.Spec.Schedule, owners(forced, "f:spec", "f:schedule"))
	}

	// A non-apply write never conflicts and takes ownership as Update.
	updated, err := srv.Client.BatchV1().CronJobs(ns).Patch(ctx(t), "ssa", types.MergePatchType, []byte(`{"spec":{"schedule":"@yearly"}}`), metav1.PatchOptions{FieldManager: "editor"})
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(owners(updated, "f:spec", "f:schedule"), ","); got != "editor/Update" {
		t.Fatalf("after merge patch: owners %s", got)
	}
}

func TestApply_OmittedFieldIsRemovedWhenNobodyElseOwnsIt(t *testing.T) {
	ns := namespace(t)
	if _, err := apply(t, ns, "om", "mgr-a", applyBody("om", "@hourly", `,"labels":{"keep":"1","drop":"1"}`), false); err != nil {
		t.Fatal(err)
	}
	suspended := strings.Replace(applyBody("om", "@hourly", `,"labels":{"keep":"1","drop":"1"}`), `"schedule"`, `"suspend":true,"schedule"`, 1)
	if _, err := apply(t, ns, "om", "mgr-a", suspended, false); err != nil {
		t.Fatal(err)
	}
	out, err := apply(t, ns, "om", "mgr-a", applyBody("om", "@hourly", `,"labels":{"keep":"1"}`), false)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := out.Labels["drop"]; ok || out.Labels["keep"] != "1" {
		t.Fatalf("labels %v", out.Labels)
	}
	if out.Spec.Suspend == nil || *out.Spec.Suspend {
		t.Fatalf("suspend %v, want reset to its default false", out.Spec.Suspend)
	}
}

func TestApply_BadRequests(t *testing.T) {
	ns := namespace(t)
	path := "/apis/batch/v1/namespaces/" + ns + "/cronjobs/x"
	cases := []struct {
		name, url, body string
		code            int
	}{
		{"no fieldManager", path, applyBody("x", "@hourly", ""), 400},
		{"managedFields in the body", path + "?fieldManager=m", applyBody("x", "@hourly", `,"managedFields":[{"manager":"m"}]`), 400},
		{"force on a merge patch", path + "?fieldManager=m&force=true", "", 422},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ct := "application/apply-patch+yaml"
			if tc.body == "" {
				ct, tc.body = "application/merge-patch+json", "{}"
			}
			resp, body := raw(t, "PATCH", tc.url, srv.AdminToken, ct, tc.body)
			if resp.StatusCode != tc.code {
				t.Fatalf("%d %s", resp.StatusCode, body)
			}
		})
	}
}

func TestManagedFields_WritesRecordUpdatesAndResetOnlyWithOneEmptyEntry(t *testing.T) {
	ns := namespace(t)
	cj := srv.Client.BatchV1().CronJobs(ns)
	created, err := cj.Create(ctx(t), cronJob("mf"), metav1.CreateOptions{FieldManager: "creator"})
	if err != nil {
		t.Fatal(err)
	}
	if len(created.ManagedFields) != 1 || created.ManagedFields[0].Manager != "creator" || created.ManagedFields[0].Operation != metav1.ManagedFieldsOperationUpdate ||
		created.ManagedFields[0].APIVersion != "batch/v1" || created.ManagedFields[0].FieldsType != "FieldsV1" || created.ManagedFields[0].Time == nil {
		t.Fatalf("managedFields %+v", created.ManagedFields)
	}
	created.ManagedFields = []metav1.ManagedFieldsEntry{}
	kept, err := cj.Update(ctx(t), created, metav1.UpdateOptions{FieldManager: "creator"})
	if err != nil || len(kept.ManagedFields) == 0 {
		t.Fatalf("an empty list reset managedFields: %v %+v", err, kept.ManagedFields)
	}
	kept.ManagedFields = []metav1.ManagedFieldsEntry{{}}
	reset, err := cj.Update(ctx(t), kept, metav1.UpdateOptions{FieldManager: "creator"})
	if err != nil || len(reset.ManagedFields) != 0 {
		t.Fatalf("[{}] did not reset managedFields: %v %+v", err, reset.ManagedFields)
	}
}
