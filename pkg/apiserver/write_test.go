package apiserver_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
)

func TestFieldValidation_StrictWarnIgnore(t *testing.T) {
	ns := namespace(t)
	body := func(name string) string {
		return `{"apiVersion":"batch/v1","kind":"CronJob","metadata":{"name":"` + name + `"},"spec":{"bogus":1,"schedule":"@hourly","schedule":"@daily","jobTemplate":{"spec":{"template":{"spec":{"restartPolicy":"Never","containers":[{"name":"c","image":"busybox"}]}}}}}}`
	}
	base := "/apis/batch/v1/namespaces/" + ns + "/cronjobs"
	resp, out := raw(t, "POST", base+"?fieldValidation=Strict", srv.AdminToken, "application/json", body("strict"))
	if resp.StatusCode != 400 || !strings.Contains(out, `unknown field \"spec.bogus\"`) || !strings.Contains(out, `duplicate field \"spec.schedule\"`) {
		t.Fatalf("strict: %d %s", resp.StatusCode, out)
	}
	resp, _ = raw(t, "POST", base+"?fieldValidation=Warn", srv.AdminToken, "application/json", body("warn"))
	warnings := resp.Header.Values("Warning")
	if resp.StatusCode != 201 || len(warnings) != 2 || warnings[0] != `299 - "unknown field \"spec.bogus\""` {
		t.Fatalf("warn: %d %q", resp.StatusCode, warnings)
	}
	resp, _ = raw(t, "POST", base, srv.AdminToken, "application/json", body("default"))
	if resp.StatusCode != 201 || len(resp.Header.Values("Warning")) != 2 {
		t.Fatalf("default (Warn): %d %q", resp.StatusCode, resp.Header.Values("Warning"))
	}
	resp, _ = raw(t, "POST", base+"?fieldValidation=Ignore", srv.AdminToken, "application/json", body("ignore"))
	if resp.StatusCode != 201 || len(resp.Header.Values("Warning")) != 0 {
		t.Fatalf("ignore: %d %q", resp.StatusCode, resp.Header.Values("Warning"))
	}
	resp, out = raw(t, "POST", base+"?fieldValidation=Strict", srv.AdminToken, "application/json", strings.Replace(body("typed"), `"schedule":"@daily"`, `"schedule":5`, 1))
	if resp.StatusCode != 400 || strings.Contains(out, "bogus") {
		t.Fatalf("a wrong type must be reported alone: %d %s", resp.StatusCode, out)
	}
	resp, _ = raw(t, "PATCH", base+"/warn?fieldValidation=Strict", srv.AdminToken, "application/merge-patch+json", `{"spec":{"nope":true}}`)
	if resp.StatusCode != 400 {
		t.Fatalf("strict merge patch with an unknown field: %d", resp.StatusCode)
	}
}

func TestDryRun_StoresNothingAndFiresNoEvent(t *testing.T) {
	ns := namespace(t)
	cj := srv.Client.BatchV1().CronJobs(ns)
	existing, err := cj.Create(ctx(t), cronJob("exists"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	w, err := cj.Watch(ctx(t), metav1.ListOptions{ResourceVersion: existing.ResourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	before, err := srv.EtcdClient().Get(ctx(t), "/registry/cronjobs/"+ns+"/exists")
	if err != nil {
		t.Fatal(err)
	}
	dry := []string{metav1.DryRunAll}
	created, err := cj.Create(ctx(t), cronJob("dry"), metav1.CreateOptions{DryRun: dry})
	if err != nil || created.Name != "dry" {
		t.Fatalf("dry-run create: %v", err)
	}
	changed := existing.DeepCopy()
	changed.Spec.Schedule = "@daily"
	if out, err := cj.Update(ctx(t), changed, metav1.UpdateOptions{DryRun: dry}); err != nil || out.Spec.Schedule != "@daily" {
		t.Fatalf("dry-run update: %v", err)
	}
	if out, err := cj.Patch(ctx(t), "exists", types.MergePatchType, []byte(`{"spec":{"suspend":true}}`), metav1.PatchOptions{DryRun: dry}); err != nil || !*out.Spec.Suspend {
		t.Fatalf("dry-run patch: %v", err)
	}
	if _, err := cj.Patch(ctx(t), "exists", types.ApplyPatchType, []byte(applyBody("exists", "@weekly", "")), metav1.PatchOptions{DryRun: dry, FieldManager: "m", Force: boolPtr(true)}); err != nil {
		t.Fatalf("dry-run apply: %v", err)
	}
	if err := cj.Delete(ctx(t), "exists", metav1.DeleteOptions{DryRun: dry}); err != nil {
		t.Fatalf("dry-run delete: %v", err)
	}
	if err := cj.DeleteCollection(ctx(t), metav1.DeleteOptions{DryRun: dry}, metav1.ListOptions{}); err != nil {
		t.Fatalf("dry-run deletecollection: %v", err)
	}
	after, err := srv.EtcdClient().Get(ctx(t), "/registry/cronjobs/"+ns+"/exists")
	if err != nil || len(after.Kvs) != 1 || after.Kvs[0].ModRevision != before.Kvs[0].ModRevision {
		t.Fatalf("etcd changed by dry runs: %v", err)
	}
	if missing, _ := srv.EtcdClient().Get(ctx(t), "/registry/cronjobs/"+ns+"/dry"); len(missing.Kvs) != 0 {
		t.Fatal("dry-run create stored the object")
	}
	if _, err := cj.Create(ctx(t), cronJob("real"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	select {
	case e := <-w.ResultChan():
		if e.Type != watch.Added || e.Object.(interface{ GetName() string }).GetName() != "real" {
			t.Fatalf("first event after dry runs: %s %v", e.Type, e.Object)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no event for the real create")
	}
	resp, _ := raw(t, "DELETE", "/apis/batch/v1/namespaces/"+ns+"/cronjobs/real?dryRun=Bogus", srv.AdminToken, "", "")
	if resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("dryRun=Bogus on delete: %d", resp.StatusCode)
	}
}

func TestFieldValidation_DuplicateKeysInYAMLBodies(t *testing.T) {
	ns := namespace(t)
	body := "apiVersion: batch/v1\nkind: CronJob\nmetadata:\n  name: dupyaml\nspec:\n  schedule: \"@hourly\"\n  schedule: \"@daily\"\n  jobTemplate:\n    spec:\n      template:\n        spec:\n          restartPolicy: Never\n          containers:\n          - name: c\n            image: b\n"
	base := "/apis/batch/v1/namespaces/" + ns + "/cronjobs"
	resp, out := raw(t, "POST", base+"?fieldValidation=Strict", srv.AdminToken, "application/yaml", body)
	if resp.StatusCode != 400 || !strings.Contains(out, `already set in map`) {
		t.Fatalf("strict YAML duplicate: %d %s", resp.StatusCode, out)
	}
	resp, _ = raw(t, "POST", base, srv.AdminToken, "application/yaml", body)
	if w := resp.Header.Values("Warning"); resp.StatusCode != 201 || len(w) != 1 || !strings.Contains(w[0], "already set in map") {
		t.Fatalf("warn YAML duplicate: %d %q", resp.StatusCode, w)
	}
	resp, out = raw(t, "PATCH", base+"/dupyaml?fieldManager=m&fieldValidation=Strict", srv.AdminToken, "application/apply-patch+yaml", body)
	if resp.StatusCode != 400 || !strings.Contains(out, `already set in map`) {
		t.Fatalf("strict apply with a YAML duplicate: %d %s", resp.StatusCode, out)
	}
}

// TestUpdate_CreatesMissingObjectsAsKube: a PUT of a missing object
// creates it for the kinds whose kube strategy allows it (events of both
// APIs, leases, RBAC objects) and is a 404 for the others; a PUT or an
// apply that creates ignores a resourceVersion in the body, as kube's
// does (there is no version to compare it with). Answers checked against
// kube-apiserver v1.29.15.
func TestUpdate_CreatesMissingObjectsAsKube(t *testing.T) {
	ns := namespace(t)
	cases := []struct {
		name, method, path, contentType, body string
		code                                  int
	}{
		{"put lease", "PUT", "/apis/coordination.k8s.io/v1/namespaces/{ns}/leases/l1", "application/json",
			`{"apiVersion":"coordination.k8s.io/v1","kind":"Lease","metadata":{"name":"l1"}}`, 201},
		{"put lease with a resourceVersion", "PUT", "/apis/coordination.k8s.io/v1/namespaces/{ns}/leases/l2", "application/json",
			`{"apiVersion":"coordination.k8s.io/v1","kind":"Lease","metadata":{"name":"l2","resourceVersion":"5"}}`, 201},
		{"put core event", "PUT", "/api/v1/namespaces/{ns}/events/e1", "application/json",
			`{"apiVersion":"v1","kind":"Event","metadata":{"name":"e1"},"involvedObject":{"namespace":"{ns}"}}`, 201},
		{"put events.k8s.io event", "PUT", "/apis/events.k8s.io/v1/namespaces/{ns}/events/e2", "application/json",
			`{"apiVersion":"events.k8s.io/v1","kind":"Event","metadata":{"name":"e2"},"eventTime":"2026-01-01T00:00:00.000000Z","reportingController":"a/b","reportingInstance":"x","action":"A","reason":"R","type":"Normal","regarding":{"namespace":"{ns}"}}`, 201},
		{"put role", "PUT", "/apis/rbac.authorization.k8s.io/v1/namespaces/{ns}/roles/r1", "application/json",
			`{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"Role","metadata":{"name":"r1"}}`, 201},
		{"put configmap", "PUT", "/api/v1/namespaces/{ns}/configmaps/c1", "application/json",
			`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c1"}}`, 404},
		{"put cronjob with a resourceVersion", "PUT", "/apis/batch/v1/namespaces/{ns}/cronjobs/cj1", "application/json",
			cronJobBody("cj1", `"resourceVersion":"5"`), 404},
		{"apply cronjob with a resourceVersion", "PATCH", "/apis/batch/v1/namespaces/{ns}/cronjobs/cj2?fieldManager=m", "application/apply-patch+yaml",
			cronJobBody("cj2", `"resourceVersion":"5"`), 201},
		{"apply lease with a resourceVersion", "PATCH", "/apis/coordination.k8s.io/v1/namespaces/{ns}/leases/l3?fieldManager=m", "application/apply-patch+yaml",
			`{"apiVersion":"coordination.k8s.io/v1","kind":"Lease","metadata":{"name":"l3","resourceVersion":"5"}}`, 201},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			path := strings.ReplaceAll(tc.path, "{ns}", ns)
			resp, out := raw(t, tc.method, path, srv.AdminToken, tc.contentType, strings.ReplaceAll(tc.body, "{ns}", ns))
			if resp.StatusCode != tc.code {
				t.Fatalf("%d, want %d: %s", resp.StatusCode, tc.code, out)
			}
			resp, out = raw(t, "GET", strings.Split(path, "?")[0], srv.AdminToken, "", "")
			if stored := resp.StatusCode == 200; stored != (tc.code == 201) {
				t.Fatalf("after a %d the object reads %d: %s", tc.code, resp.StatusCode, out)
			}
		})
	}
}
