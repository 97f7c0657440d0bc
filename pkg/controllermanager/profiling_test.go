package controllermanager

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"
)

// reviewer answers TokenReviews (token "admin" is alice in
// system:masters, "bob" is bob) and SubjectAccessReviews (system:masters
// may get anything) as an apiserver would, and records what it was asked.
func reviewer(t *testing.T) (*fake.Clientset, *[]string) {
	t.Helper()
	client := fake.NewSimpleClientset()
	var asked []string
	client.PrependReactor("create", "tokenreviews", func(a k8stesting.Action) (bool, runtime.Object, error) {
		tr := a.(k8stesting.CreateAction).GetObject().(*authenticationv1.TokenReview)
		asked = append(asked, "token "+tr.Spec.Token)
		switch tr.Spec.Token {
		case "admin":
			tr.Status = authenticationv1.TokenReviewStatus{Authenticated: true, User: authenticationv1.UserInfo{Username: "alice", Groups: []string{"system:masters"}}}
		case "bob":
			tr.Status = authenticationv1.TokenReviewStatus{Authenticated: true, User: authenticationv1.UserInfo{Username: "bob"}}
		}
		return true, tr, nil
	})
	client.PrependReactor("create", "subjectaccessreviews", func(a k8stesting.Action) (bool, runtime.Object, error) {
		sar := a.(k8stesting.CreateAction).GetObject().(*authorizationv1.SubjectAccessReview)
		nr := sar.Spec.NonResourceAttributes
		asked = append(asked, "access "+sar.Spec.User+" "+nr.Verb+" "+nr.Path)
		for _, g := range sar.Spec.Groups {
			sar.Status.Allowed = sar.Status.Allowed || g == "system:masters"
		}
		return true, sar, nil
	})
	return client, &asked
}

func TestProfiling_ServedToThoseTheApiserverAllows(t *testing.T) {
	client, asked := reviewer(t)
	h := endpoints(client, &checks{}, http.NotFoundHandler(), profilingHandler())
	for _, tc := range []struct {
		token, path string
		code        int
		body        string
	}{
		{"", "/debug/pprof/", http.StatusForbidden, `forbidden: User \"system:anonymous\" cannot get path \"/debug/pprof/\"`},
		{"nobody", "/debug/pprof/", http.StatusUnauthorized, `"message":"Unauthorized"`},
		{"bob", "/debug/pprof/heap", http.StatusForbidden, `forbidden: User \"bob\" cannot get path \"/debug/pprof/heap\"`},
		{"admin", "/debug/pprof/", http.StatusOK, "goroutine"},
		{"admin", "/debug/pprof/heap?debug=1", http.StatusOK, "heap profile"},
		{"admin", "/debug/pprof/cmdline", http.StatusNotFound, "Unknown profile\n"},
	} {
		r := httptest.NewRequest("GET", tc.path, nil)
		if tc.token != "" {
			r.Header.Set("Authorization", "Bearer "+tc.token)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code != tc.code || !strings.Contains(w.Body.String(), tc.body) {
			t.Errorf("%s with token %q: %d %.100q, want %d containing %q", tc.path, tc.token, w.Code, w.Body.String(), tc.code, tc.body)
		}
	}
	if got := strings.Join(*asked, "; "); !strings.Contains(got, "token bob; access bob get /debug/pprof/heap") {
		t.Errorf("reviews asked: %s", got)
	}
}

// /metrics, like the profiles, is served to those the apiserver allows to
// get it, as kube's delegated authentication and authorization decide:
// without a token as system:anonymous, a token the apiserver does not
// know is a 401, a user it does not allow a 403, both as kube's Status.
func TestDelegatedAuth_AnswersAsKube(t *testing.T) {
	client, asked := reviewer(t)
	h := delegatedAuth(client, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte("metrics")) }))
	for _, tc := range []struct {
		token string
		code  int
		body  string
	}{
		{"", http.StatusForbidden, `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"forbidden: User \"system:anonymous\" cannot get path \"/metrics\"","reason":"Forbidden","details":{},"code":403}` + "\n"},
		{"nobody", http.StatusUnauthorized, `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"Unauthorized","reason":"Unauthorized","code":401}` + "\n"},
		{"bob", http.StatusForbidden, `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"forbidden: User \"bob\" cannot get path \"/metrics\"","reason":"Forbidden","details":{},"code":403}` + "\n"},
		{"admin", http.StatusOK, "metrics"},
	} {
		r := httptest.NewRequest("GET", "/metrics", nil)
		if tc.token != "" {
			r.Header.Set("Authorization", "Bearer "+tc.token)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code != tc.code || w.Body.String() != tc.body {
			t.Errorf("token %q: %d %q, want %d %q", tc.token, w.Code, w.Body.String(), tc.code, tc.body)
		}
		if ct := w.Header().Get("Content-Type"); tc.code != http.StatusOK && ct != "application/json" {
			t.Errorf("token %q: Content-Type %q", tc.token, ct)
		}
	}
	if got := strings.Join(*asked, "; "); !strings.Contains(got, "access system:anonymous get /metrics; token nobody; token bob; access bob get /metrics") {
		t.Errorf("reviews asked: %s", got)
	}
}

// Only managedFields are dropped: the Job controller reads a Job's spec
// and labels and its pods' spec and status, the TTL-after-finished
// controller a Job's ttlSecondsAfterFinished, the CronJob controller writes
// a CronJob's status with the whole object, whose metadata the status
// subresource stores.
func TestTrimCached_DropsOnlyManagedFields(t *testing.T) {
	yes := true
	mf := []metav1.ManagedFieldsEntry{{Manager: "kube-controller-manager"}}
	for _, obj := range []metav1.Object{
		&batchv1.Job{
			ObjectMeta: metav1.ObjectMeta{Name: "j", Namespace: "ns", UID: "j-uid", ResourceVersion: "7",
				Labels:          map[string]string{"job-name": "j"},
				Annotations:     map[string]string{"batch.kubernetes.io/cronjob-scheduled-timestamp": "2026-11-23T10:01:00Z"},
				OwnerReferences: []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "CronJob", Name: "cj", UID: "cj-uid", Controller: &yes}},
				ManagedFields:   mf},
			Spec: batchv1.JobSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"job-name": "j"}}, TTLSecondsAfterFinished: ptr.To[int32](30),
				Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}},
			Status: batchv1.JobStatus{Conditions: []batchv1.JobCondition{{Type: batchv1.JobComplete, Status: corev1.ConditionTrue}},
				CompletionTime: &metav1.Time{}},
		},
		&batchv1.CronJob{ObjectMeta: metav1.ObjectMeta{Name: "cj", Labels: map[string]string{"a": "b"}, Annotations: map[string]string{"c": "d"},
			ManagedFields: mf},
			Spec: batchv1.CronJobSpec{Schedule: "* * * * *", JobTemplate: batchv1.JobTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"x": "y"}}}}},
		&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Labels: map[string]string{"job-name": "j"}, Finalizers: []string{"batch.kubernetes.io/job-tracking"},
			ManagedFields: mf},
			Spec:   corev1.PodSpec{NodeName: "n", Containers: []corev1.Container{{Name: "c", Image: "busybox"}}},
			Status: corev1.PodStatus{Phase: corev1.PodSucceeded}},
	} {
		want := obj.(runtime.Object).DeepCopyObject().(metav1.Object)
		want.SetManagedFields(nil)
		got, err := trimCached(obj)
		if err != nil || !equality.Semantic.DeepEqual(got, want) {
			t.Errorf("trimmed %T %+v, %v; want %+v", obj, got, err, want)
		}
	}
}

func TestDefaultOptions_ProtobufAndProfilingAsKube(t *testing.T) {
	o := DefaultOptions()
	if o.ContentType != "application/vnd.kubernetes.protobuf" || !o.Profiling || o.ContentionProfiling {
		t.Fatalf("content type %q, profiling %v, contention profiling %v; want kube's protobuf, true, false", o.ContentType, o.Profiling, o.ContentionProfiling)
	}
}

// As kube-controller-manager's defaults: /healthz, /readyz and /livez
// are always allowed (the last two not served); any other path, a
// controller's check among them, is authorized by the apiserver first,
// so that an anonymous caller gets 403 whether it exists or not.
func TestEndpoints_OnlyHealthIsServedToAnyone(t *testing.T) {
	client, _ := reviewer(t)
	health := &checks{}
	health.add("cronjob-controller")
	h := endpoints(client, health, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte("metrics")) }), nil)
	forbidden := func(user, path string) string {
		return `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"forbidden: User \"` + user + `\" cannot get path \"` + path + `\"","reason":"Forbidden","details":{},"code":403}` + "\n"
	}
	for _, tc := range []struct {
		token, path string
		code        int
		body        string
	}{
		{"", "/healthz", http.StatusOK, "ok"},
		{"", "/healthz?verbose", http.StatusOK, "[+]ping ok\n[+]cronjob-controller ok\nhealthz check passed\n"},
		{"", "/readyz", http.StatusNotFound, "404 page not found\n"},
		{"", "/livez", http.StatusNotFound, "404 page not found\n"},
		{"", "/healthz/cronjob-controller", http.StatusForbidden, forbidden("system:anonymous", "/healthz/cronjob-controller")},
		{"", "/healthz/nope", http.StatusForbidden, forbidden("system:anonymous", "/healthz/nope")},
		{"", "/nope", http.StatusForbidden, forbidden("system:anonymous", "/nope")},
		{"bob", "/healthz/cronjob-controller", http.StatusForbidden, forbidden("bob", "/healthz/cronjob-controller")},
		{"admin", "/healthz/cronjob-controller", http.StatusOK, "ok"},
		{"admin", "/healthz/nope", http.StatusNotFound, "404 page not found\n"},
		{"admin", "/nope", http.StatusNotFound, "404 page not found\n"},
		{"admin", "/metrics", http.StatusOK, "metrics"},
		// "Bearer  admin" (two spaces) carries no token, as kube reads it.
		{" admin", "/metrics", http.StatusForbidden, forbidden("system:anonymous", "/metrics")},
	} {
		r := httptest.NewRequest("GET", tc.path, nil)
		if tc.token != "" {
			r.Header.Set("Authorization", "Bearer "+tc.token)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code != tc.code || w.Body.String() != tc.body {
			t.Errorf("%s with token %q: %d %q, want %d %q", tc.path, tc.token, w.Code, w.Body.String(), tc.code, tc.body)
		}
	}
}
