package apiserver_test

import (
	"encoding/json"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

func richCronJob(name string) *batchv1.CronJob {
	cj := cronJob(name)
	cj.Spec.JobTemplate.Spec.Template.Spec.Containers = []corev1.Container{
		{Name: "main", Image: "busybox", Env: []corev1.EnvVar{{Name: "A", Value: "1"}, {Name: "B", Value: "2"}},
			Ports: []corev1.ContainerPort{{ContainerPort: 80}, {ContainerPort: 443}}},
		{Name: "side", Image: "nginx"},
	}
	cj.Finalizers = []string{"example.com/a", "example.com/b"}
	return cj
}

func containerSummary(cj *batchv1.CronJob) string {
	type c struct {
		Name  string
		Image string
		Env   []string
		Ports []int32
	}
	var out []c
	for _, k := range cj.Spec.JobTemplate.Spec.Template.Spec.Containers {
		x := c{Name: k.Name, Image: k.Image}
		for _, e := range k.Env {
			x.Env = append(x.Env, e.Name+"="+e.Value)
		}
		for _, p := range k.Ports {
			x.Ports = append(x.Ports, p.ContainerPort)
		}
		out = append(out, x)
	}
	b, _ := json.Marshal(out)
	return string(b)
}

func TestPatch_TypesOnNestedLists(t *testing.T) {
	const containers = "/spec/jobTemplate/spec/template/spec/containers"
	cases := []struct {
		name  string
		typ   types.PatchType
		patch string
		want  string
		check func(*testing.T, *batchv1.CronJob)
	}{
		{"strategic merges containers by name and env by name", types.StrategicMergePatchType,
			`{"spec":{"jobTemplate":{"spec":{"template":{"spec":{"containers":[{"name":"main","image":"busybox:2","env":[{"name":"B","value":"two"},{"name":"C","value":"3"}]}]}}}}}}`,
			`[{"Name":"main","Image":"busybox:2","Env":["A=1","B=two","C=3"],"Ports":[80,443]},{"Name":"side","Image":"nginx","Env":null,"Ports":null}]`, nil},
		{"strategic $patch delete removes one container", types.StrategicMergePatchType,
			`{"spec":{"jobTemplate":{"spec":{"template":{"spec":{"containers":[{"name":"side","$patch":"delete"}]}}}}}}`,
			`[{"Name":"main","Image":"busybox","Env":["A=1","B=2"],"Ports":[80,443]}]`, nil},
		{"strategic $setElementOrder reorders", types.StrategicMergePatchType,
			`{"spec":{"jobTemplate":{"spec":{"template":{"spec":{"$setElementOrder/containers":[{"name":"side"},{"name":"main"}]}}}}}}`,
			`[{"Name":"side","Image":"nginx","Env":null,"Ports":null},{"Name":"main","Image":"busybox","Env":["A=1","B=2"],"Ports":[80,443]}]`, nil},
		{"strategic $deleteFromPrimitiveList", types.StrategicMergePatchType,
			`{"metadata":{"$deleteFromPrimitiveList/finalizers":["example.com/a"]}}`, "", func(t *testing.T, cj *batchv1.CronJob) {
				if len(cj.Finalizers) != 1 || cj.Finalizers[0] != "example.com/b" {
					t.Fatalf("finalizers %v", cj.Finalizers)
				}
			}},
		{"strategic $retainKeys", types.StrategicMergePatchType,
			`{"spec":{"jobTemplate":{"spec":{"template":{"spec":{"containers":[{"name":"main","ports":[{"containerPort":8080}]}]}}}}}}`,
			`[{"Name":"main","Image":"busybox","Env":["A=1","B=2"],"Ports":[8080,80,443]},{"Name":"side","Image":"nginx","Env":null,"Ports":null}]`, nil},
		{"merge patch replaces lists whole", types.MergePatchType,
			`{"spec":{"jobTemplate":{"spec":{"template":{"spec":{"containers":[{"name":"only","image":"alpine"}]}}}}}}`,
			`[{"Name":"only","Image":"alpine","Env":null,"Ports":null}]`, nil},
		{"json patch edits by index and tests", types.JSONPatchType,
			`[{"op":"test","path":"` + containers + `/0/name","value":"main"},{"op":"add","path":"` + containers + `/0/env/-","value":{"name":"Z","value":"26"}},{"op":"remove","path":"` + containers + `/0/ports/1"}]`,
			`[{"Name":"main","Image":"busybox","Env":["A=1","B=2","Z=26"],"Ports":[80]},{"Name":"side","Image":"nginx","Env":null,"Ports":null}]`, nil},
	}
	ns := namespace(t)
	cj := srv.Client.BatchV1().CronJobs(ns)
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			name := "p" + string(rune('a'+i))
			if _, err := cj.Create(ctx(t), richCronJob(name), metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			out, err := cj.Patch(ctx(t), name, tc.typ, []byte(tc.patch), metav1.PatchOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if tc.want != "" {
				if got := containerSummary(out); got != tc.want {
					t.Fatalf("containers\n got %s\nwant %s", got, tc.want)
				}
			}
			if tc.check != nil {
				tc.check(t, out)
			}
		})
	}
	t.Run("failed json patch test is 422 and changes nothing", func(t *testing.T) {
		if _, err := cj.Create(ctx(t), richCronJob("ptest"), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		_, err := cj.Patch(ctx(t), "ptest", types.JSONPatchType, []byte(`[{"op":"test","path":"/spec/schedule","value":"nope"},{"op":"replace","path":"/spec/schedule","value":"@daily"}]`), metav1.PatchOptions{})
		wantStatus(t, err, 422, metav1.StatusReasonInvalid)
		got, _ := cj.Get(ctx(t), "ptest", metav1.GetOptions{})
		if got.Spec.Schedule != "*/5 * * * *" {
			t.Fatalf("schedule changed to %s", got.Spec.Schedule)
		}
	})
}

// TestPatch_JSONPatchWorkIsBounded sends JSON patches that would cost
// unbounded work: copies that double the document (about 30 of them in a
// 2 KB body would ask for a terabyte) and more operations than kube
// allows. Both are refused, as kube refuses them, within a small memory
// budget.
func TestPatch_JSONPatchWorkIsBounded(t *testing.T) {
	ns := namespace(t)
	if _, err := srv.Client.BatchV1().CronJobs(ns).Create(ctx(t), cronJob("big"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	path := "/apis/batch/v1/namespaces/" + ns + "/cronjobs/big?dryRun=All"
	ops := []map[string]interface{}{{"op": "add", "path": "/metadata/annotations", "value": map[string]string{"a": strings.Repeat("x", 1000)}}}
	for i := 0; i < 30; i++ {
		ops = append(ops, map[string]interface{}{"op": "copy", "from": "/metadata/annotations", "path": fmt.Sprintf("/metadata/annotations/b%d", i)})
	}
	doubling, _ := json.Marshal(ops)

	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	start := time.Now()
	resp, body := raw(t, "PATCH", path, srv.AdminToken, "application/json-patch+json", string(doubling))
	runtime.ReadMemStats(&after)
	if resp.StatusCode != 422 || !strings.Contains(body, `"reason":"Invalid"`) {
		t.Fatalf("doubling patch: %d %s", resp.StatusCode, body)
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 200<<20 {
		t.Fatalf("the doubling patch allocated %d MiB", alloc>>20)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Fatalf("the doubling patch took %v", d)
	}

	many := make([]map[string]interface{}, 10001)
	for i := range many {
		many[i] = map[string]interface{}{"op": "test", "path": "/metadata/name", "value": "big"}
	}
	tooMany, _ := json.Marshal(many)
	resp, body = raw(t, "PATCH", path, srv.AdminToken, "application/json-patch+json", string(tooMany))
	if resp.StatusCode != 413 || !strings.Contains(body, "The allowed maximum operations in a JSON patch is 10000, got 10001") {
		t.Fatalf("10001 operations: %d %s", resp.StatusCode, body)
	}
}
