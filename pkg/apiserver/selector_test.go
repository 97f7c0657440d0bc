package apiserver_test

import (
	"net/url"
	"strconv"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestList_SelectorsWithLimitAndResourceVersion crosses label and field
// selectors with limits and resourceVersions on several resources. Paged
// and exact reads go to etcd, where objects already decoded by the watch
// cache are shared: the selectors must see through them.
func TestList_SelectorsWithLimitAndResourceVersion(t *testing.T) {
	ns := namespace(t)
	for _, name := range []string{"a", "b", "c"} {
		obj := cronJob(name)
		obj.Labels = map[string]string{"app": name}
		if _, err := srv.Client.BatchV1().CronJobs(ns).Create(ctx(t), obj, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for i, typ := range []string{"Normal", "Warning", "Warning"} {
		ev := &corev1.Event{
			ObjectMeta:     metav1.ObjectMeta{Name: "e" + strconv.Itoa(i)},
			InvolvedObject: corev1.ObjectReference{Kind: "CronJob", Namespace: ns, Name: "a"},
			Type:           typ, Reason: "Test", Message: "m",
		}
		if _, err := srv.Client.CoreV1().Events(ns).Create(ctx(t), ev, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// A consistent list without a limit is served by the cache once it has
	// caught up; afterwards every object is shared.
	code, current, _ := getList(t, "/apis/batch/v1/namespaces/"+ns+"/cronjobs", nil)
	if code != 200 {
		t.Fatalf("list: %d", code)
	}
	// Events were created before that revision, so an exact read at it
	// sees them too.
	getList(t, "/api/v1/namespaces/"+ns+"/events", nil)

	type query struct{ path, label, field, want string }
	queries := []query{
		{"/apis/batch/v1/namespaces/" + ns + "/cronjobs", "app=b", "", "b"},
		{"/apis/batch/v1/namespaces/" + ns + "/cronjobs", "app in (a,c)", "", "a,c"},
		{"/apis/batch/v1/namespaces/" + ns + "/cronjobs", "", "metadata.name=c", "c"},
		{"/apis/batch/v1/namespaces/" + ns + "/cronjobs", "app!=a", "metadata.name!=c", "b"},
		{"/api/v1/namespaces/" + ns + "/events", "", "type=Warning", "e1,e2"},
		{"/api/v1/namespaces/" + ns + "/events", "", "involvedObject.name=a,type=Normal", "e0"},
		{"/apis/events.k8s.io/v1/namespaces/" + ns + "/events", "", "type=Warning", "e1,e2"},
		{"/api/v1/namespaces", "", "metadata.name=" + ns + ",status.phase=Active", ns},
	}
	type read struct{ limit, rv, match string }
	reads := []read{
		{"", "", ""}, {"500", "", ""}, {"1", "", ""},
		{"", "0", ""}, {"500", "0", ""},
		{"500", current.Metadata.ResourceVersion, ""},
		{"500", current.Metadata.ResourceVersion, "Exact"},
		{"500", current.Metadata.ResourceVersion, "NotOlderThan"},
		{"", current.Metadata.ResourceVersion, "NotOlderThan"},
	}
	for _, q := range queries {
		for _, r := range reads {
			v := url.Values{}
			for k, val := range map[string]string{"labelSelector": q.label, "fieldSelector": q.field, "limit": r.limit, "resourceVersion": r.rv, "resourceVersionMatch": r.match} {
				if val != "" {
					v.Set(k, val)
				}
			}
			if got := collect(t, q.path, v); got != q.want {
				t.Errorf("%s ?%s: items %q, want %q", q.path, v.Encode(), got, q.want)
			}
		}
	}
}

// collect follows continue tokens and returns every item's name.
func collect(t *testing.T, path string, q url.Values) string {
	t.Helper()
	var names string
	for page := 0; page < 20; page++ {
		code, b, _ := getList(t, path, q)
		if code != 200 {
			t.Fatalf("%s ?%s: %d %s: %s", path, q.Encode(), code, b.Reason, b.Message)
		}
		if n := itemNames(b); n != "" {
			if names != "" {
				names += ","
			}
			names += n
		}
		if b.Metadata.Continue == "" {
			return names
		}
		q = url.Values{"continue": {b.Metadata.Continue}, "limit": q["limit"], "labelSelector": q["labelSelector"], "fieldSelector": q["fieldSelector"]}
	}
	t.Fatalf("%s: more than 20 pages", path)
	return ""
}
