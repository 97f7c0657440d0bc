package apiserver_test

import (
	"net/url"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
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

// TestKubectl_SelectorsEventsAndDescribe runs the kubectl commands that
// page with a selector (limit=500 by default) and that a selector once
// broke with a 500: gets by label and field, events of an object, and
// describe's Events section.
func TestKubectl_SelectorsEventsAndDescribe(t *testing.T) {
	ns := namespace(t)
	mustKubectl(t, "-n", ns, "create", "cronjob", "x", "--image=busybox", "--schedule=0 * * * *")
	mustKubectl(t, "-n", ns, "create", "cronjob", "y", "--image=busybox", "--schedule=0 * * * *")
	mustKubectl(t, "-n", ns, "label", "cronjob", "x", "app=x")
	cj, err := srv.Client.BatchV1().CronJobs(ns).Get(ctx(t), "x", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, typ := range []string{"Normal", "Warning"} {
		ev := &corev1.Event{
			ObjectMeta:     metav1.ObjectMeta{Name: "x." + strings.ToLower(typ)},
			InvolvedObject: corev1.ObjectReference{Kind: "CronJob", APIVersion: "batch/v1", Namespace: ns, Name: "x", UID: cj.UID},
			Type:           typ, Reason: typ + "Reason", Message: "about x",
			FirstTimestamp: metav1.Now(), LastTimestamp: metav1.Now(), Count: 1,
		}
		if _, err := srv.Client.CoreV1().Events(ns).Create(ctx(t), ev, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// A Job with an event of its own, for describe job.
	mustKubectl(t, "-n", ns, "create", "job", "j", "--image=busybox")
	job, err := srv.Client.BatchV1().Jobs(ns).Get(ctx(t), "j", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := srv.Client.CoreV1().Events(ns).Create(ctx(t), &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{Name: "j.created"},
		InvolvedObject: corev1.ObjectReference{Kind: "Job", APIVersion: "batch/v1", Namespace: ns, Name: "j", UID: job.UID},
		Type:           "Normal", Reason: "SuccessfulCreate", Message: "about j",
		FirstTimestamp: metav1.Now(), LastTimestamp: metav1.Now(), Count: 1,
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	checks := []struct {
		args []string
		want []string
		not  []string
	}{
		{[]string{"describe", "job", "j"}, []string{"SuccessfulCreate", "about j"}, []string{"Events:  <none>"}},
		{[]string{"get", "cj", "-l", "app=x", "-o", "name"}, []string{"cronjob.batch/x"}, []string{"cronjob.batch/y"}},
		{[]string{"get", "cj", "--field-selector", "metadata.name=y", "-o", "name"}, []string{"cronjob.batch/y"}, []string{"cronjob.batch/x"}},
		{[]string{"get", "all", "-l", "app=x", "-o", "name"}, []string{"cronjob.batch/x"}, []string{"cronjob.batch/y"}},
		{[]string{"get", "events", "--field-selector", "type=Warning", "-o", "name"}, []string{"event/x.warning"}, []string{"event/x.normal"}},
		{[]string{"events", "--for", "cronjob/x"}, []string{"WarningReason", "NormalReason"}, nil},
		{[]string{"describe", "cronjob", "x"}, []string{"WarningReason", "about x"}, []string{"Events:  <none>"}},
	}
	for _, c := range checks {
		out := mustKubectl(t, append([]string{"-n", ns}, c.args...)...)
		for _, w := range c.want {
			if !strings.Contains(out, w) {
				t.Errorf("kubectl %s lacks %q:\n%s", strings.Join(c.args, " "), w, out)
			}
		}
		for _, n := range c.not {
			if strings.Contains(out, n) {
				t.Errorf("kubectl %s shows %q:\n%s", strings.Join(c.args, " "), n, out)
			}
		}
	}
	out := mustKubectl(t, "get", "ns", "--field-selector", "status.phase=Active,metadata.name="+ns, "-o", "name")
	if strings.TrimSpace(out) != "namespace/"+ns {
		t.Errorf("get ns by phase: %q", out)
	}
	// A watch with a selector lists with limit=500 first.
	out, _ = kubectl(t, "-n", ns, "get", "cj", "-l", "app=x", "-w", "--request-timeout=2s")
	if !strings.Contains(out, "x ") || strings.Contains(out, "Error") {
		t.Errorf("get -w -l: %s", out)
	}
}

// TestFieldSelectors_LabelsAsKube: each kind takes the field labels kube
// takes, in the served version's names (events.k8s.io says regarding.name
// and reportingController where the stored core event says
// involvedObject.name and reportingComponent), and refuses the others in
// kube's words, which differ for kinds kube gives a field label conversion
// (answers taken from kube-apiserver v1.29.15).
func TestFieldSelectors_LabelsAsKube(t *testing.T) {
	ns := namespace(t)
	for i, name := range []string{"a", "b"} {
		ev := &corev1.Event{
			ObjectMeta:          metav1.ObjectMeta{Name: "e" + name},
			InvolvedObject:      corev1.ObjectReference{Kind: "CronJob", APIVersion: "batch/v1", Namespace: ns, Name: name, UID: types.UID("uid-" + name)},
			Type:                []string{"Normal", "Warning"}[i],
			Reason:              "R" + name,
			Message:             "m",
			ReportingController: "ctl/" + name,
			ReportingInstance:   "i",
		}
		if _, err := srv.Client.CoreV1().Events(ns).Create(ctx(t), ev, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	events := "/api/v1/namespaces/" + ns + "/events"
	events2 := "/apis/events.k8s.io/v1/namespaces/" + ns + "/events"
	cases := []struct {
		path, selector string
		code           int
		want           string // the items, or the 400's message
	}{
		{events2, "regarding.name=b", 200, "eb"},
		{events2, "regarding.uid=uid-a,regarding.kind=CronJob,regarding.apiVersion=batch/v1,regarding.namespace=" + ns, 200, "ea"},
		{events2, "regarding.name!=b,regarding.resourceVersion=,regarding.fieldPath=", 200, "ea"},
		{events2, "reportingController=ctl/b", 200, "eb"},
		{events2, "type=Warning,reason=Rb,metadata.name=eb,metadata.namespace=" + ns, 200, "eb"},
		{events2, "involvedObject.name=a", 400, "field label not supported: involvedObject.name"},
		{events2, "reportingComponent=ctl/a", 400, "field label not supported: reportingComponent"},
		{events2, "source=ctl/a", 400, "field label not supported: source"},
		{events2, "spec.x=1,note=2", 400, "field label not supported: note"},
		{events, "involvedObject.name=a,reportingComponent=ctl/a,source=ctl/a", 200, "ea"},
		{events, "reportingController=x", 400, "field label not supported: reportingController"},
		{events, "spec.x=1", 400, "field label not supported: spec.x"},
		{"/api/v1/namespaces", "metadata.name=" + ns + ",status.phase=Active", 200, ns},
		{"/api/v1/namespaces", "metadata.namespace=x", 400, "field label not supported: metadata.namespace"},
		{"/api/v1/namespaces/" + ns + "/secrets", "type=Opaque,metadata.namespace=" + ns, 200, ""},
		{"/api/v1/namespaces/" + ns + "/secrets", "spec.x=1", 400, "field label not supported: spec.x"},
		{"/apis/batch/v1/namespaces/" + ns + "/jobs", "status.successful=0,metadata.namespace=" + ns, 200, ""},
		{"/apis/batch/v1/namespaces/" + ns + "/jobs", "spec.x=1", 400, `field label "spec.x" not supported for Job`},
		{"/apis/batch/v1/namespaces/" + ns + "/cronjobs", "spec.x=1", 400, `"spec.x" is not a known field selector: only "metadata.name", "metadata.namespace"`},
		{"/api/v1/namespaces/" + ns + "/configmaps", "data.a=1", 400, `"data.a" is not a known field selector: only "metadata.name", "metadata.namespace"`},
	}
	for _, tc := range cases {
		for _, limit := range []string{"", "1"} {
			q := url.Values{"fieldSelector": {tc.selector}}
			if limit != "" {
				q.Set("limit", limit)
			}
			if tc.code == 200 {
				if got := collect(t, tc.path, q); got != tc.want {
					t.Errorf("%s ?%s: items %q, want %q", tc.path, q.Encode(), got, tc.want)
				}
				continue
			}
			code, b, _ := getList(t, tc.path, q)
			if code != tc.code || b.Message != tc.want {
				t.Errorf("%s ?%s: %d %q, want %d %q", tc.path, q.Encode(), code, b.Message, tc.code, tc.want)
			}
		}
	}
}
