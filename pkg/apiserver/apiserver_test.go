package apiserver_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/cronplane/cronplane/pkg/apiserver"
	"github.com/cronplane/cronplane/pkg/apiserver/apiservertest"
	"github.com/cronplane/cronplane/pkg/etcdserver/etcdtest"
)

var srv *apiservertest.Server

func TestMain(m *testing.M) {
	etcdtest.Main(m, func() (func(), error) {
		tokenFile, err := writeTestTokens()
		if err != nil {
			return nil, err
		}
		srv, err = apiservertest.New(func(o *apiserver.Options) {
			if err := o.FeatureGates.Set("WatchList=true"); err != nil {
				panic(err)
			}
			o.TokenAuthFile = tokenFile
		})
		if err != nil {
			_ = os.Remove(tokenFile)
			return nil, err
		}
		return func() {
			srv.Stop()
			_ = os.Remove(tokenFile)
		}, nil
	})
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return c
}

// namespace creates a namespace of its own for one test.
func namespace(t *testing.T) string {
	t.Helper()
	name := strings.ToLower(strings.NewReplacer("/", "-", "_", "-").Replace(t.Name()))
	if len(name) > 44 {
		name = name[:44]
	}
	// A random suffix keeps repeated runs (-count) apart.
	name = strings.Trim(name, "-") + "-" + rand.String(5)
	_, err := srv.Client.CoreV1().Namespaces().Create(ctx(t), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating namespace %s: %v", name, err)
	}
	return name
}

func cronJob(name string) *batchv1.CronJob {
	return &batchv1.CronJob{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"app": "hello"}},
		Spec: batchv1.CronJobSpec{
			Schedule: "*/5 * * * *",
			JobTemplate: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
				RestartPolicy: corev1.RestartPolicyOnFailure,
				Containers:    []corev1.Container{{Name: "hello", Image: "busybox", Command: []string{"echo", "hi"}}},
			}}}},
		},
	}
}

// wantStatus fails unless err is a Status error of code and reason, and
// returns the Status.
func wantStatus(t *testing.T, err error, code int32, reason metav1.StatusReason) metav1.Status {
	t.Helper()
	se, ok := err.(*apierrors.StatusError)
	if !ok {
		t.Fatalf("want a Status error %d %s, got %v", code, reason, err)
	}
	s := se.ErrStatus
	if s.Code != code || s.Reason != reason {
		t.Fatalf("want %d %s, got %d %s: %s", code, reason, s.Code, s.Reason, s.Message)
	}
	return s
}

func TestCronJob_CreateGetListUpdateDelete(t *testing.T) {
	ns := namespace(t)
	cj := srv.Client.BatchV1().CronJobs(ns)
	created, err := cj.Create(ctx(t), cronJob("hello"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if created.UID == "" || created.CreationTimestamp.IsZero() || created.Generation != 1 || created.ResourceVersion == "" {
		t.Fatalf("system fields not set: %+v", created.ObjectMeta)
	}
	if created.Spec.ConcurrencyPolicy != batchv1.AllowConcurrent || *created.Spec.SuccessfulJobsHistoryLimit != 3 || *created.Spec.FailedJobsHistoryLimit != 1 {
		t.Fatalf("defaults not applied: %+v", created.Spec)
	}
	got, err := cj.Get(ctx(t), "hello", metav1.GetOptions{})
	if err != nil || got.UID != created.UID || got.ResourceVersion != created.ResourceVersion {
		t.Fatalf("get: %v %+v", err, got)
	}
	list, err := cj.List(ctx(t), metav1.ListOptions{LabelSelector: "app=hello"})
	if err != nil || len(list.Items) != 1 || list.ResourceVersion == "" {
		t.Fatalf("list: %v %+v", err, list)
	}
	if list, _ := cj.List(ctx(t), metav1.ListOptions{LabelSelector: "app=other"}); len(list.Items) != 0 {
		t.Fatalf("label selector not applied: %d items", len(list.Items))
	}
	got.Spec.Schedule = "@hourly"
	updated, err := cj.Update(ctx(t), got, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if updated.Generation != 2 || updated.ResourceVersion == got.ResourceVersion {
		t.Fatalf("spec change: generation %d rv %s", updated.Generation, updated.ResourceVersion)
	}
	if err := cj.Delete(ctx(t), "hello", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	_, err = cj.Get(ctx(t), "hello", metav1.GetOptions{})
	se := wantStatus(t, err, 404, metav1.StatusReasonNotFound)
	if want := `cronjobs.batch "hello" not found`; se.Message != want {
		t.Fatalf("message %q, want %q", se.Message, want)
	}
}

func TestCreate_GenerateNameAddsFiveCharacters(t *testing.T) {
	ns := namespace(t)
	obj := cronJob("")
	obj.GenerateName = "gen-"
	created, err := srv.Client.BatchV1().CronJobs(ns).Create(ctx(t), obj, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(created.Name, "gen-") || len(created.Name) != len("gen-")+5 {
		t.Fatalf("generated name %q", created.Name)
	}
}

func TestCreate_ExistingNameIsAlreadyExists(t *testing.T) {
	ns := namespace(t)
	cj := srv.Client.BatchV1().CronJobs(ns)
	if _, err := cj.Create(ctx(t), cronJob("dup"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	_, err := cj.Create(ctx(t), cronJob("dup"), metav1.CreateOptions{})
	se := wantStatus(t, err, 409, metav1.StatusReasonAlreadyExists)
	if want := `cronjobs.batch "dup" already exists`; se.Message != want {
		t.Fatalf("message %q, want %q", se.Message, want)
	}
}

func TestUpdate_StaleResourceVersionIsConflict(t *testing.T) {
	ns := namespace(t)
	cj := srv.Client.BatchV1().CronJobs(ns)
	created, err := cj.Create(ctx(t), cronJob("stale"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	first := created.DeepCopy()
	first.Spec.Schedule = "@daily"
	if _, err := cj.Update(ctx(t), first, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	created.Spec.Schedule = "@weekly"
	_, err = cj.Update(ctx(t), created, metav1.UpdateOptions{})
	se := wantStatus(t, err, 409, metav1.StatusReasonConflict)
	if !strings.Contains(se.Message, "the object has been modified") {
		t.Fatalf("message %q", se.Message)
	}
	got, _ := cj.Get(ctx(t), "stale", metav1.GetOptions{})
	if got.Spec.Schedule != "@daily" {
		t.Fatalf("stale update changed the object: %s", got.Spec.Schedule)
	}
}

func TestUpdate_MissingObjectIsNotFound(t *testing.T) {
	ns := namespace(t)
	_, err := srv.Client.BatchV1().CronJobs(ns).Update(ctx(t), cronJob("missing"), metav1.UpdateOptions{})
	wantStatus(t, err, 404, metav1.StatusReasonNotFound)
}

func TestUpdate_InvalidScheduleIsInvalidWithCause(t *testing.T) {
	ns := namespace(t)
	obj := cronJob("bad")
	obj.Spec.Schedule = "bogus"
	_, err := srv.Client.BatchV1().CronJobs(ns).Create(ctx(t), obj, metav1.CreateOptions{})
	se := wantStatus(t, err, 422, metav1.StatusReasonInvalid)
	if se.Details == nil || len(se.Details.Causes) == 0 || se.Details.Causes[0].Field != "spec.schedule" {
		t.Fatalf("causes: %+v", se.Details)
	}
	if !strings.Contains(se.Message, `spec.schedule: Invalid value: "bogus"`) {
		t.Fatalf("message %q", se.Message)
	}
}

func TestStatus_MainResourceKeepsStatusAndStatusKeepsSpec(t *testing.T) {
	ns := namespace(t)
	cj := srv.Client.BatchV1().CronJobs(ns)
	created, err := cj.Create(ctx(t), cronJob("st"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	now := metav1.NewTime(time.Now().Truncate(time.Second))
	withStatus := created.DeepCopy()
	withStatus.Status.LastScheduleTime = &now
	withStatus.Spec.Schedule = "@yearly"
	out, err := cj.UpdateStatus(ctx(t), withStatus, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if out.Status.LastScheduleTime == nil || out.Spec.Schedule != created.Spec.Schedule || out.Generation != 1 {
		t.Fatalf("status update: status %+v schedule %s generation %d", out.Status, out.Spec.Schedule, out.Generation)
	}
	out.Status.LastScheduleTime = nil
	out.Spec.Suspend = boolPtr(true)
	out2, err := cj.Update(ctx(t), out, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if out2.Status.LastScheduleTime == nil || !*out2.Spec.Suspend {
		t.Fatalf("main update: status %+v suspend %v", out2.Status, *out2.Spec.Suspend)
	}
	viaStatus, err := cj.Get(ctx(t), "st", metav1.GetOptions{})
	if err != nil || viaStatus.Status.LastScheduleTime == nil {
		t.Fatalf("get: %v", err)
	}
}

func boolPtr(b bool) *bool { return &b }

func TestDelete_WithFinalizersIsTwoPhase(t *testing.T) {
	ns := namespace(t)
	cj := srv.Client.BatchV1().CronJobs(ns)
	obj := cronJob("fin")
	obj.Finalizers = []string{"example.com/hold"}
	if _, err := cj.Create(ctx(t), obj, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := cj.Delete(ctx(t), "fin", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	got, err := cj.Get(ctx(t), "fin", metav1.GetOptions{})
	if err != nil || got.DeletionTimestamp == nil {
		t.Fatalf("want object kept with deletionTimestamp: %v %+v", err, got)
	}
	got.Finalizers = nil
	if _, err := cj.Update(ctx(t), got, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	_, err = cj.Get(ctx(t), "fin", metav1.GetOptions{})
	wantStatus(t, err, 404, metav1.StatusReasonNotFound)
}

func TestDelete_PreconditionMismatchIsConflict(t *testing.T) {
	ns := namespace(t)
	cj := srv.Client.BatchV1().CronJobs(ns)
	if _, err := cj.Create(ctx(t), cronJob("pre"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	uid := types.UID("not-the-uid")
	err := cj.Delete(ctx(t), "pre", metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
	wantStatus(t, err, 409, metav1.StatusReasonConflict)
	rv := "1"
	err = cj.Delete(ctx(t), "pre", metav1.DeleteOptions{Preconditions: &metav1.Preconditions{ResourceVersion: &rv}})
	wantStatus(t, err, 409, metav1.StatusReasonConflict)
	if _, err := cj.Get(ctx(t), "pre", metav1.GetOptions{}); err != nil {
		t.Fatalf("object lost after failed deletes: %v", err)
	}
}

func TestDeleteCollection_DeletesOnlySelected(t *testing.T) {
	ns := namespace(t)
	cj := srv.Client.BatchV1().CronJobs(ns)
	for i, app := range []string{"a", "a", "b"} {
		obj := cronJob(fmt.Sprintf("c%d", i))
		obj.Labels = map[string]string{"app": app}
		if _, err := cj.Create(ctx(t), obj, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if err := cj.DeleteCollection(ctx(t), metav1.DeleteOptions{}, metav1.ListOptions{LabelSelector: "app=a"}); err != nil {
		t.Fatal(err)
	}
	list, err := cj.List(ctx(t), metav1.ListOptions{})
	if err != nil || len(list.Items) != 1 || list.Items[0].Name != "c2" {
		t.Fatalf("left: %v %+v", err, list)
	}
}

func TestList_FieldSelectorOnNameAndUnsupportedField(t *testing.T) {
	ns := namespace(t)
	cj := srv.Client.BatchV1().CronJobs(ns)
	for _, n := range []string{"x1", "x2"} {
		if _, err := cj.Create(ctx(t), cronJob(n), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	list, err := cj.List(ctx(t), metav1.ListOptions{FieldSelector: "metadata.name=x2"})
	if err != nil || len(list.Items) != 1 || list.Items[0].Name != "x2" {
		t.Fatalf("field selector: %v %+v", err, list)
	}
	list, err = srv.Client.BatchV1().CronJobs("").List(ctx(t), metav1.ListOptions{FieldSelector: "metadata.namespace=" + ns})
	if err != nil || len(list.Items) != 2 {
		t.Fatalf("namespace field selector: %v %d", err, len(list.Items))
	}
	_, err = cj.List(ctx(t), metav1.ListOptions{FieldSelector: "spec.schedule=x"})
	wantStatus(t, err, 400, metav1.StatusReasonBadRequest)
}

func TestWatch_FromResourceVersionSeesAddModifyDelete(t *testing.T) {
	ns := namespace(t)
	cj := srv.Client.BatchV1().CronJobs(ns)
	list, err := cj.List(ctx(t), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	w, err := cj.Watch(ctx(t), metav1.ListOptions{ResourceVersion: list.ResourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	created, err := cj.Create(ctx(t), cronJob("w"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	created.Spec.Schedule = "@daily"
	updated, err := cj.Update(ctx(t), created, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := cj.Delete(ctx(t), "w", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	want := []watch.EventType{watch.Added, watch.Modified, watch.Deleted}
	var lastRV string
	for i, typ := range want {
		select {
		case e := <-w.ResultChan():
			obj, ok := e.Object.(*batchv1.CronJob)
			if e.Type != typ || !ok {
				t.Fatalf("event %d: %s %T, want %s", i, e.Type, e.Object, typ)
			}
			if i == 1 && obj.ResourceVersion != updated.ResourceVersion {
				t.Fatalf("MODIFIED rv %s, want %s", obj.ResourceVersion, updated.ResourceVersion)
			}
			if i == 2 && obj.ResourceVersion == lastRV {
				t.Fatalf("DELETED carries the previous rv %s, want the deletion's", obj.ResourceVersion)
			}
			lastRV = obj.ResourceVersion
		case <-time.After(10 * time.Second):
			t.Fatalf("no %s event", typ)
		}
	}
}

func TestNamespaceLifecycle_MissingAndTerminatingNamespaces(t *testing.T) {
	_, err := srv.Client.BatchV1().CronJobs("does-not-exist").Create(ctx(t), cronJob("x"), metav1.CreateOptions{})
	se := wantStatus(t, err, 404, metav1.StatusReasonNotFound)
	if want := `namespaces "does-not-exist" not found`; se.Message != want {
		t.Fatalf("message %q, want %q", se.Message, want)
	}
	ns := namespace(t)
	if err := srv.Client.CoreV1().Namespaces().Delete(ctx(t), ns, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	got, err := srv.Client.CoreV1().Namespaces().Get(ctx(t), ns, metav1.GetOptions{})
	if err != nil || got.Status.Phase != corev1.NamespaceTerminating || got.DeletionTimestamp == nil {
		t.Fatalf("namespace after delete: %v %+v", err, got)
	}
	_, err = srv.Client.BatchV1().CronJobs(ns).Create(ctx(t), cronJob("x"), metav1.CreateOptions{})
	wantStatus(t, err, 403, metav1.StatusReasonForbidden)
}

func TestNamespaces_BuiltInNamespacesExistAndCannotBeDeleted(t *testing.T) {
	for _, name := range []string{"default", "kube-system", "kube-public"} {
		ns, err := srv.Client.CoreV1().Namespaces().Get(ctx(t), name, metav1.GetOptions{})
		if err != nil || ns.Status.Phase != corev1.NamespaceActive {
			t.Fatalf("%s: %v %+v", name, err, ns)
		}
	}
	err := srv.Client.CoreV1().Namespaces().Delete(ctx(t), "default", metav1.DeleteOptions{})
	wantStatus(t, err, 403, metav1.StatusReasonForbidden)
}

func TestEvents_CoreAndEventsGroupShareStorage(t *testing.T) {
	ns := namespace(t)
	now := metav1.NewMicroTime(time.Now().Truncate(time.Microsecond))
	ev := &eventsv1.Event{
		ObjectMeta:          metav1.ObjectMeta{Name: "ev1"},
		EventTime:           now,
		Type:                corev1.EventTypeNormal,
		Reason:              "Tested",
		Action:              "Test",
		Note:                "hello",
		ReportingController: "example.com/tester",
		ReportingInstance:   "tester-1",
		Regarding:           corev1.ObjectReference{Kind: "CronJob", Namespace: ns, Name: "x"},
	}
	if _, err := srv.Client.EventsV1().Events(ns).Create(ctx(t), ev, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	core, err := srv.Client.CoreV1().Events(ns).Get(ctx(t), "ev1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if core.Message != "hello" || core.InvolvedObject.Name != "x" || core.ReportingController != "example.com/tester" {
		t.Fatalf("core view: %+v", core)
	}
	bad := ev.DeepCopy()
	bad.Name, bad.Type = "ev2", "Bogus"
	_, err = srv.Client.EventsV1().Events(ns).Create(ctx(t), bad, metav1.CreateOptions{})
	wantStatus(t, err, 422, metav1.StatusReasonInvalid)
	list, err := srv.Client.CoreV1().Events(ns).List(ctx(t), metav1.ListOptions{FieldSelector: "involvedObject.name=x"})
	if err != nil || len(list.Items) != 1 {
		t.Fatalf("field selector on events: %v %+v", err, list)
	}
}

func TestLeases_CreateAndUpdate(t *testing.T) {
	ns := namespace(t)
	holder := "me"
	lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "l"}, Spec: coordinationv1.LeaseSpec{HolderIdentity: &holder}}
	created, err := srv.Client.CoordinationV1().Leases(ns).Create(ctx(t), lease, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	other := "you"
	created.Spec.HolderIdentity = &other
	if _, err := srv.Client.CoordinationV1().Leases(ns).Update(ctx(t), created, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func TestJobs_SelectorGeneratedFromUID(t *testing.T) {
	ns := namespace(t)
	job := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: "j"},
		Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever,
			Containers:    []corev1.Container{{Name: "c", Image: "busybox"}},
		}}},
	}
	created, err := srv.Client.BatchV1().Jobs(ns).Create(ctx(t), job, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if created.Spec.Selector == nil || created.Spec.Selector.MatchLabels["batch.kubernetes.io/controller-uid"] != string(created.UID) {
		t.Fatalf("selector: %+v", created.Spec.Selector)
	}
	if *created.Spec.BackoffLimit != 6 || *created.Spec.Parallelism != 1 || *created.Spec.Completions != 1 {
		t.Fatalf("job defaults: %+v", created.Spec)
	}
}

func TestDiscovery_ListsServedResources(t *testing.T) {
	_, lists, err := srv.Client.Discovery().ServerGroupsAndResources()
	if err != nil {
		t.Fatal(err)
	}
	found := map[string]metav1.APIResource{}
	for _, l := range lists {
		for _, r := range l.APIResources {
			found[l.GroupVersion+"/"+r.Name] = r
		}
	}
	cj, ok := found["batch/v1/cronjobs"]
	if !ok || len(cj.ShortNames) != 1 || cj.ShortNames[0] != "cj" || !cj.Namespaced || cj.Kind != "CronJob" || cj.SingularName != "cronjob" {
		t.Fatalf("cronjobs: %+v", cj)
	}
	for _, want := range []string{"v1/namespaces", "v1/namespaces/status", "v1/events", "batch/v1/jobs", "batch/v1/cronjobs/status", "events.k8s.io/v1/events", "coordination.k8s.io/v1/leases"} {
		if _, ok := found[want]; !ok {
			t.Errorf("discovery lacks %s", want)
		}
	}
	v, err := srv.Client.Discovery().ServerVersion()
	if err != nil || v.Major != "1" || v.Minor != "29" {
		t.Fatalf("version: %v %+v", err, v)
	}
}

// raw sends a request with the admin token (or the given one).
func raw(t *testing.T, method, path, token, contentType, body string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(method, srv.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := srv.HTTPClient().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return resp, string(data)
}

func TestAuthentication_WrongTokenIs401AndNoneIsAnonymous(t *testing.T) {
	resp, body := raw(t, "GET", "/api/v1/namespaces", "wrong", "", "")
	if resp.StatusCode != 401 || !strings.Contains(body, `"reason":"Unauthorized"`) || !strings.Contains(body, `"kind":"Status"`) {
		t.Fatalf("a wrong token: %d %s", resp.StatusCode, body)
	}
	resp, body = raw(t, "GET", "/api/v1/namespaces", "", "", "")
	if resp.StatusCode != 403 || !strings.Contains(body, `User \"system:anonymous\" cannot list resource \"namespaces\"`) {
		t.Fatalf("no token: %d %s", resp.StatusCode, body)
	}
	for _, path := range []string{"/readyz", "/livez", "/healthz"} {
		resp, body := raw(t, "GET", path, "", "", "")
		if resp.StatusCode != 200 || body != "ok" {
			t.Fatalf("%s without credentials: %d %s", path, resp.StatusCode, body)
		}
	}
	resp, body = raw(t, "GET", "/readyz?verbose", "", "", "")
	if resp.StatusCode != 200 || !strings.Contains(body, "[+]etcd ok") {
		t.Fatalf("verbose readyz: %d %s", resp.StatusCode, body)
	}
}

func TestErrors_RawHTTPStatuses(t *testing.T) {
	ns := namespace(t)
	base := "/apis/batch/v1/namespaces/" + ns + "/cronjobs"
	cases := []struct {
		name, method, path, contentType, body string
		code                                  int
		reason                                string
	}{
		{"wrong JSON type", "POST", base, "application/json", `{"apiVersion":"batch/v1","kind":"CronJob","metadata":{"name":"x"},"spec":{"schedule":5}}`, 400, "BadRequest"},
		{"unsupported body type", "POST", base, "text/plain", `x`, 415, "UnsupportedMediaType"},
		{"unsupported patch type", "PATCH", base + "/x", "application/foo", `{}`, 415, "UnsupportedMediaType"},
		{"unknown resource", "GET", "/apis/batch/v1/namespaces/" + ns + "/nothings", "", "", 404, "NotFound"},
		{"namespace deletecollection not served", "DELETE", "/api/v1/namespaces", "", "", 405, "MethodNotAllowed"},
		{"bad label selector", "GET", base + "?labelSelector=a%20in%20(", "", "", 400, "BadRequest"},
		{"bad dryRun", "POST", base + "?dryRun=Bogus", "application/json", `{}`, 400, "BadRequest"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			resp, body := raw(t, tc.method, tc.path, srv.AdminToken, tc.contentType, tc.body)
			if resp.StatusCode != tc.code || !strings.Contains(body, `"reason":"`+tc.reason+`"`) || !strings.Contains(body, `"kind":"Status"`) {
				t.Fatalf("%d %s", resp.StatusCode, body)
			}
		})
	}
}

func TestNotAcceptable_OnlyUnsupportedTypesIs406(t *testing.T) {
	req, _ := http.NewRequest("GET", srv.URL+"/api/v1/namespaces/default", nil)
	req.Header.Set("Authorization", "Bearer "+srv.AdminToken)
	req.Header.Set("Accept", "application/xml")
	resp, err := srv.HTTPClient().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 406 {
		t.Fatalf("status %d", resp.StatusCode)
	}
}

func TestPatch_MergeAndStrategicAndJSONPatch(t *testing.T) {
	ns := namespace(t)
	cj := srv.Client.BatchV1().CronJobs(ns)
	if _, err := cj.Create(ctx(t), cronJob("p"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cj.Patch(ctx(t), "p", types.MergePatchType, []byte(`{"spec":{"schedule":"@daily"}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cj.Patch(ctx(t), "p", types.StrategicMergePatchType, []byte(`{"metadata":{"labels":{"x":"y"}}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	out, err := cj.Patch(ctx(t), "p", types.JSONPatchType, []byte(`[{"op":"test","path":"/spec/schedule","value":"@daily"},{"op":"replace","path":"/spec/suspend","value":true}]`), metav1.PatchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if out.Spec.Schedule != "@daily" || out.Labels["x"] != "y" || !*out.Spec.Suspend {
		t.Fatalf("patched: %+v", out)
	}
	_, err = cj.Patch(ctx(t), "missing", types.MergePatchType, []byte(`{}`), metav1.PatchOptions{})
	wantStatus(t, err, 404, metav1.StatusReasonNotFound)
}

// Paths answered as kube answers them: /version and the discovery
// documents with a trailing slash, a path starting // as no route, the
// anonymous 403 of a group version's path as a path's (no group),
// "Bearer  <token>" (two spaces) as no token.
func TestPaths_AnsweredAsKube(t *testing.T) {
	for _, tc := range []struct {
		path, token string
		code        int
		body        string
	}{
		{"/version/", srv.AdminToken, 200, `"gitVersion"`},
		{"/apis/", srv.AdminToken, 200, `"kind":"APIGroupList"`},
		{"/api/", srv.AdminToken, 200, `"kind":"APIVersions"`},
		{"/apis/batch/", srv.AdminToken, 200, `"kind":"APIGroup"`},
		{"/apis/batch/v1/", srv.AdminToken, 200, `"groupVersion":"batch/v1"`},
		{"/api/v1/", srv.AdminToken, 200, `"kind":"APIResourceList"`},
		{"//api/v1/namespaces", srv.AdminToken, 404, "404 page not found\n"},
		{"//apis/batch/v1", srv.AdminToken, 404, "404 page not found\n"},
		{"/apis/batch/v1", "", 403, `"message":"forbidden: User \"system:anonymous\" cannot get path \"/apis/batch/v1\"","reason":"Forbidden","details":{},"code":403}`},
		{"/api/v1/namespaces", " " + srv.AdminToken, 403, `User \"system:anonymous\" cannot list resource \"namespaces\"`},
	} {
		resp, body := raw(t, "GET", tc.path, tc.token, "", "")
		if resp.StatusCode != tc.code || !strings.Contains(body, tc.body) {
			t.Errorf("GET %s: %d %.300s, want %d with %s", tc.path, resp.StatusCode, body, tc.code, tc.body)
		}
	}
}
