package apiserver_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2/ktesting"

	"github.com/cronplane/cronplane/pkg/apiserver"
	"github.com/cronplane/cronplane/pkg/apiserver/apiservertest"
)

type listBody struct {
	Metadata struct {
		ResourceVersion    string `json:"resourceVersion"`
		Continue           string `json:"continue"`
		RemainingItemCount *int64 `json:"remainingItemCount"`
	} `json:"metadata"`
	Items []struct {
		Metadata struct {
			Name string `json:"name"`
		} `json:"metadata"`
	} `json:"items"`
	Code    int    `json:"code"`
	Reason  string `json:"reason"`
	Message string `json:"message"`
}

func getList(t *testing.T, path string, q url.Values) (int, listBody, http.Header) {
	t.Helper()
	req, _ := http.NewRequest("GET", srv.URL+path+"?"+q.Encode(), nil)
	req.Header.Set("Authorization", "Bearer "+srv.AdminToken)
	resp, err := srv.HTTPClient().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var b listBody
	if err := json.NewDecoder(resp.Body).Decode(&b); err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, b, resp.Header
}

func itemNames(b listBody) string {
	var n []string
	for _, it := range b.Items {
		n = append(n, it.Metadata.Name)
	}
	return strings.Join(n, ",")
}

func rvOf(t *testing.T, s string) int64 {
	t.Helper()
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		t.Fatalf("resourceVersion %q", s)
	}
	return n
}

// TestList_ResourceVersionTable walks every cell of the list table of the
// API conventions.
func TestList_ResourceVersionTable(t *testing.T) {
	ns := namespace(t)
	cj := srv.Client.BatchV1().CronJobs(ns)
	for _, n := range []string{"a", "b", "c"} {
		if _, err := cj.Create(ctx(t), cronJob(n), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	snapshot, err := cj.List(ctx(t), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	old := snapshot.ResourceVersion
	if _, err := cj.Create(ctx(t), cronJob("d"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	_, first, _ := getList(t, "/apis/batch/v1/namespaces/"+ns+"/cronjobs", url.Values{"limit": {"1"}})
	path := "/apis/batch/v1/namespaces/" + ns + "/cronjobs"

	type want struct {
		code  int
		names string // "" means not checked
		rv    string // "=old", ">=old" or ""
	}
	cases := []struct {
		name string
		q    url.Values
		want want
	}{
		{"unset, no limit: most recent", url.Values{}, want{200, "a,b,c,d", ">=old"}},
		{"0, no limit: any", url.Values{"resourceVersion": {"0"}}, want{200, "", ""}},
		{"N, no limit: not older than", url.Values{"resourceVersion": {old}}, want{200, "a,b,c,d", ">=old"}},
		{"unset, limit: most recent", url.Values{"limit": {"2"}}, want{200, "a,b", ">=old"}},
		{"0, limit: any", url.Values{"resourceVersion": {"0"}, "limit": {"2"}}, want{200, "", ""}},
		{"N, limit: exact", url.Values{"resourceVersion": {old}, "limit": {"10"}}, want{200, "a,b,c", "=old"}},
		{"unset, continue: continue token", url.Values{"limit": {"1"}, "continue": {first.Metadata.Continue}}, want{200, "b", ""}},
		{"0, continue: treated as continue", url.Values{"resourceVersion": {"0"}, "limit": {"1"}, "continue": {first.Metadata.Continue}}, want{200, "b", ""}},
		{"N, continue: 400", url.Values{"resourceVersion": {old}, "limit": {"1"}, "continue": {first.Metadata.Continue}}, want{400, "", ""}},
		{"Exact, unset: 400", url.Values{"resourceVersionMatch": {"Exact"}}, want{400, "", ""}},
		{"Exact, 0: 400", url.Values{"resourceVersionMatch": {"Exact"}, "resourceVersion": {"0"}}, want{400, "", ""}},
		{"Exact, N: exact", url.Values{"resourceVersionMatch": {"Exact"}, "resourceVersion": {old}}, want{200, "a,b,c", "=old"}},
		{"Exact, N, limit: exact", url.Values{"resourceVersionMatch": {"Exact"}, "resourceVersion": {old}, "limit": {"2"}}, want{200, "a,b", "=old"}},
		{"NotOlderThan, unset: 400", url.Values{"resourceVersionMatch": {"NotOlderThan"}}, want{400, "", ""}},
		{"NotOlderThan, 0: any", url.Values{"resourceVersionMatch": {"NotOlderThan"}, "resourceVersion": {"0"}}, want{200, "", ""}},
		{"NotOlderThan, N: not older than", url.Values{"resourceVersionMatch": {"NotOlderThan"}, "resourceVersion": {old}}, want{200, "a,b,c,d", ">=old"}},
		{"NotOlderThan, N, limit: not older than", url.Values{"resourceVersionMatch": {"NotOlderThan"}, "resourceVersion": {old}, "limit": {"10"}}, want{200, "a,b,c,d", ">=old"}},
		{"unknown match: 400", url.Values{"resourceVersionMatch": {"Sometime"}, "resourceVersion": {old}}, want{400, "", ""}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			code, b, _ := getList(t, path, tc.q)
			if code != tc.want.code {
				t.Fatalf("code %d (%s), want %d", code, b.Message, tc.want.code)
			}
			if code != 200 {
				if b.Reason != "BadRequest" || b.Message == "" {
					t.Fatalf("status %s %q", b.Reason, b.Message)
				}
				return
			}
			if tc.want.names != "" && itemNames(b) != tc.want.names {
				t.Fatalf("items %s, want %s", itemNames(b), tc.want.names)
			}
			switch tc.want.rv {
			case "=old":
				if b.Metadata.ResourceVersion != old {
					t.Fatalf("list rv %s, want exactly %s", b.Metadata.ResourceVersion, old)
				}
			case ">=old":
				if rvOf(t, b.Metadata.ResourceVersion) < rvOf(t, old) {
					t.Fatalf("list rv %s older than %s", b.Metadata.ResourceVersion, old)
				}
			}
		})
	}
}

func TestList_PagesShareTheFirstPagesResourceVersion(t *testing.T) {
	ns := namespace(t)
	cj := srv.Client.BatchV1().CronJobs(ns)
	for i := 0; i < 5; i++ {
		if _, err := cj.Create(ctx(t), cronJob(fmt.Sprintf("p%d", i)), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	path := "/apis/batch/v1/namespaces/" + ns + "/cronjobs"
	_, page, _ := getList(t, path, url.Values{"limit": {"2"}})
	if page.Metadata.RemainingItemCount == nil || *page.Metadata.RemainingItemCount != 3 {
		t.Fatalf("remainingItemCount %v", page.Metadata.RemainingItemCount)
	}
	rv := page.Metadata.ResourceVersion
	if _, err := cj.Create(ctx(t), cronJob("p9"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	names := itemNames(page)
	for i := 0; page.Metadata.Continue != "" && i < 10; i++ {
		_, page, _ = getList(t, path, url.Values{"limit": {"2"}, "continue": {page.Metadata.Continue}})
		if page.Metadata.ResourceVersion != rv {
			t.Fatalf("page rv %s, first page %s", page.Metadata.ResourceVersion, rv)
		}
		names += "," + itemNames(page)
	}
	if names != "p0,p1,p2,p3,p4" {
		t.Fatalf("pages %s", names)
	}
	_, withSelector, _ := getList(t, path, url.Values{"limit": {"2"}, "labelSelector": {"app=hello"}})
	if withSelector.Metadata.RemainingItemCount != nil {
		t.Fatal("remainingItemCount set with a label selector")
	}
}

func TestGet_ResourceVersionSemantics(t *testing.T) {
	ns := namespace(t)
	created, err := srv.Client.BatchV1().CronJobs(ns).Create(ctx(t), cronJob("g"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, rv := range []string{"", "0", created.ResourceVersion} {
		got, err := srv.Client.BatchV1().CronJobs(ns).Get(ctx(t), "g", metav1.GetOptions{ResourceVersion: rv})
		if err != nil || got.UID != created.UID {
			t.Fatalf("rv %q: %v", rv, err)
		}
	}
}

func TestGetAndList_TooLargeResourceVersionIs504WithRetryAfter(t *testing.T) {
	ns := namespace(t)
	future := strconv.FormatInt(1<<40, 10)
	start := time.Now()
	code, b, h := getList(t, "/apis/batch/v1/namespaces/"+ns+"/cronjobs", url.Values{"resourceVersion": {future}, "resourceVersionMatch": {"NotOlderThan"}})
	// kube's words: the version asked for and the store's.
	tooLarge := "Timeout: Too large resource version: " + future + ", current: "
	if code != 504 || b.Reason != "Timeout" || !strings.HasPrefix(b.Message, tooLarge) || h.Get("Retry-After") != "1" {
		t.Fatalf("%d %s %q Retry-After %q", code, b.Reason, b.Message, h.Get("Retry-After"))
	}
	if waited := time.Since(start); waited < 2*time.Second {
		t.Fatalf("answered after %s, want a wait of about 3s first", waited)
	}
	code, b, _ = getList(t, "/apis/batch/v1/namespaces/"+ns+"/cronjobs/none", url.Values{"resourceVersion": {future}})
	if code != 504 || !strings.HasPrefix(b.Message, tooLarge) {
		t.Fatalf("get: %d %q", code, b.Message)
	}
	// An exact list from the future (kube answers it with a 500).
	code, b, _ = getList(t, "/apis/batch/v1/namespaces/"+ns+"/cronjobs", url.Values{"resourceVersion": {future}, "resourceVersionMatch": {"Exact"}})
	if current := strings.TrimPrefix(b.Message, tooLarge); code != 504 || current == b.Message || current == "0" || current == future {
		t.Fatalf("exact: %d %q", code, b.Message)
	}
}

// rawWatch opens a watch and returns a function reading its next event.
func rawWatch(t *testing.T, path string, q url.Values) (int, func() (string, map[string]interface{})) {
	t.Helper()
	c, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	q.Set("watch", "1")
	req, _ := http.NewRequestWithContext(c, "GET", srv.URL+path+"?"+q.Encode(), nil)
	req.Header.Set("Authorization", "Bearer "+srv.AdminToken)
	resp, err := srv.HTTPClient().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	if resp.StatusCode != 200 {
		return resp.StatusCode, nil
	}
	if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
		t.Fatalf("content type %q", ct)
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<22)
	events := make(chan []byte)
	go func() {
		defer close(events)
		for sc.Scan() {
			events <- append([]byte(nil), sc.Bytes()...)
		}
	}()
	return 200, func() (string, map[string]interface{}) {
		t.Helper()
		select {
		case line, ok := <-events:
			if !ok {
				t.Fatal("watch ended")
			}
			var e struct {
				Type   string                 `json:"type"`
				Object map[string]interface{} `json:"object"`
			}
			if err := json.Unmarshal(line, &e); err != nil {
				t.Fatalf("event %s: %v", line, err)
			}
			return e.Type, e.Object
		case <-time.After(10 * time.Second):
			t.Fatal("no event within 10s")
		}
		return "", nil
	}
}

func objName(o map[string]interface{}) string {
	m, _ := o["metadata"].(map[string]interface{})
	n, _ := m["name"].(string)
	return n
}

func TestWatch_ResourceVersionTable(t *testing.T) {
	ns := namespace(t)
	cj := srv.Client.BatchV1().CronJobs(ns)
	created, err := cj.Create(ctx(t), cronJob("first"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	path := "/apis/batch/v1/namespaces/" + ns + "/cronjobs"
	for _, rv := range []string{"", "0"} {
		_, next := rawWatch(t, path, url.Values{"resourceVersion": {rv}})
		if typ, obj := next(); typ != "ADDED" || objName(obj) != "first" {
			t.Fatalf("rv %q: first event %s %s, want the synthetic ADDED", rv, typ, objName(obj))
		}
	}
	_, next := rawWatch(t, path, url.Values{"resourceVersion": {created.ResourceVersion}})
	if _, err := cj.Create(ctx(t), cronJob("second"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if typ, obj := next(); typ != "ADDED" || objName(obj) != "second" {
		t.Fatalf("from rv: got %s %s, want only the later ADDED second", typ, objName(obj))
	}
}

func TestWatch_SendInitialEventsEndsWithAnnotatedBookmark(t *testing.T) {
	ns := namespace(t)
	cj := srv.Client.BatchV1().CronJobs(ns)
	for _, n := range []string{"a", "b"} {
		if _, err := cj.Create(ctx(t), cronJob(n), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	path := "/apis/batch/v1/namespaces/" + ns + "/cronjobs"
	_, next := rawWatch(t, path, url.Values{"sendInitialEvents": {"true"}, "resourceVersionMatch": {"NotOlderThan"}, "allowWatchBookmarks": {"true"}})
	for _, want := range []string{"a", "b"} {
		if typ, obj := next(); typ != "ADDED" || objName(obj) != want {
			t.Fatalf("got %s %s, want ADDED %s", typ, objName(obj), want)
		}
	}
	typ, obj := next()
	meta, _ := obj["metadata"].(map[string]interface{})
	ann, _ := meta["annotations"].(map[string]interface{})
	if typ != "BOOKMARK" || ann["k8s.io/initial-events-end"] != "true" || obj["kind"] != "CronJob" || meta["resourceVersion"] == "" {
		t.Fatalf("got %s %v, want the initial-events-end BOOKMARK", typ, obj)
	}
	if _, err := cj.Create(ctx(t), cronJob("c"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if typ, obj := next(); typ != "ADDED" || objName(obj) != "c" {
		t.Fatalf("after the bookmark: %s %s", typ, objName(obj))
	}
	// Misused resourceVersionMatch is a 400 (SPEC.md); as in kube 1.29, a
	// stream of initial events needs no bookmarks, and a watch does not
	// page (422).
	for _, tc := range []struct {
		q    url.Values
		code int
	}{
		{url.Values{"sendInitialEvents": {"true"}, "allowWatchBookmarks": {"true"}}, 400},
		{url.Values{"resourceVersionMatch": {"NotOlderThan"}, "resourceVersion": {"1"}}, 400},
		{url.Values{"sendInitialEvents": {"true"}, "resourceVersionMatch": {"NotOlderThan"}, "timeoutSeconds": {"1"}}, 200},
		{url.Values{"continue": {"abc"}}, 422},
	} {
		if code, _ := rawWatch(t, path, tc.q); code != tc.code {
			t.Fatalf("%v: code %d, want %d", tc.q, code, tc.code)
		}
	}
}

func TestWatch_SendInitialEventsNeedsTheWatchListGate(t *testing.T) {
	plain := apiservertest.Start(t, func(o *apiserver.Options) { o.Logger = ktesting.NewLogger(t, ktesting.DefaultConfig) })
	req, _ := http.NewRequest("GET", plain.URL+"/apis/batch/v1/cronjobs?watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true", nil)
	req.Header.Set("Authorization", "Bearer "+plain.AdminToken)
	resp, err := plain.HTTPClient().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 422 {
		t.Fatalf("code %d, want kube's 422 with WatchList off", resp.StatusCode)
	}
}

func TestCompaction_ExpiredRevisionsAreGone(t *testing.T) {
	ns := namespace(t)
	cj := srv.Client.BatchV1().CronJobs(ns)
	first, err := cj.Create(ctx(t), cronJob("a"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cj.Create(ctx(t), cronJob("b"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	path := "/apis/batch/v1/namespaces/" + ns + "/cronjobs"
	_, page, _ := getList(t, path, url.Values{"limit": {"1"}})
	latest, err := cj.Create(ctx(t), cronJob("c"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := srv.EtcdClient().Compact(ctx(t), rvOf(t, latest.ResourceVersion)); err != nil {
		t.Fatal(err)
	}
	code, b, _ := getList(t, path, url.Values{"limit": {"1"}, "continue": {page.Metadata.Continue}})
	if code != 410 || b.Reason != "Expired" || !strings.HasPrefix(b.Message, "The provided continue parameter is too old to display a consistent list result.") {
		t.Fatalf("continue after compaction: %d %s %s", code, b.Reason, b.Message)
	}
	// As kube's, the answer carries a token for the rest of the list at
	// the latest revision.
	code, rest, _ := getList(t, path, url.Values{"limit": {"5"}, "continue": {b.Metadata.Continue}})
	if code != 200 || itemNames(rest) != "b,c" || rvOf(t, rest.Metadata.ResourceVersion) < rvOf(t, latest.ResourceVersion) {
		t.Fatalf("inconsistent continue: %d %q at %s", code, itemNames(rest), rest.Metadata.ResourceVersion)
	}
	code, b, _ = getList(t, path, url.Values{"resourceVersion": {first.ResourceVersion}, "resourceVersionMatch": {"Exact"}})
	if code != 410 || b.Reason != "Expired" || b.Message != "The resourceVersion for the provided list is too old." {
		t.Fatalf("exact after compaction: %d %s %s", code, b.Reason, b.Message)
	}
	status, next := rawWatch(t, path, url.Values{"resourceVersion": {first.ResourceVersion}})
	if status != 200 {
		t.Fatalf("watch status %d, want 200 carrying an ERROR event", status)
	}
	typ, obj := next()
	if typ != "ERROR" || obj["kind"] != "Status" || obj["code"] != float64(410) || obj["reason"] != "Expired" {
		t.Fatalf("got %s %v", typ, obj)
	}
}

// TestInformer_SeesChangesAndRelistsAfterGone drives a client-go informer
// through adds, updates and deletes, starting it from a stale list whose
// resourceVersion has been compacted so that its first watch gets 410 and
// it must list again.
func TestInformer_SeesChangesAndRelistsAfterGone(t *testing.T) {
	ns := namespace(t)
	cj := srv.Client.BatchV1().CronJobs(ns)
	stale, err := cj.Create(ctx(t), cronJob("before"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	later, err := cj.Create(ctx(t), cronJob("before2"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := srv.EtcdClient().Compact(ctx(t), rvOf(t, later.ResourceVersion)); err != nil {
		t.Fatal(err)
	}
	lists := 0
	lw := &cache.ListWatch{
		ListFunc: func(o metav1.ListOptions) (runtime.Object, error) {
			lists++
			l, err := cj.List(context.Background(), o)
			if err == nil && lists == 1 {
				l.ResourceVersion = stale.ResourceVersion
			}
			return l, err
		},
		WatchFunc: func(o metav1.ListOptions) (watch.Interface, error) { return cj.Watch(context.Background(), o) },
	}
	events := make(chan string, 100)
	inf := cache.NewSharedIndexInformer(lw, &batchv1.CronJob{}, 0, cache.Indexers{})
	_, _ = inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(o interface{}) { events <- "add " + o.(*batchv1.CronJob).Name },
		UpdateFunc: func(_, o interface{}) { events <- "update " + o.(*batchv1.CronJob).Name },
		DeleteFunc: func(o interface{}) {
			if cj, ok := o.(*batchv1.CronJob); ok {
				events <- "delete " + cj.Name
			}
		},
	})
	stop := make(chan struct{})
	defer close(stop)
	go inf.Run(stop)
	if !cache.WaitForCacheSync(ctxDone(t), inf.HasSynced) {
		t.Fatal("informer never synced")
	}
	if _, err := cj.Create(ctx(t), cronJob("x"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitEvent(t, events, "add x")
	if lists < 2 {
		t.Fatalf("informer listed %d times, want a re-list after the 410", lists)
	}
	got, _ := cj.Get(ctx(t), "x", metav1.GetOptions{})
	got.Spec.Schedule = "@daily"
	if _, err := cj.Update(ctx(t), got, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitEvent(t, events, "update x")
	if err := cj.Delete(ctx(t), "x", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitEvent(t, events, "delete x")
	if n := len(inf.GetStore().List()); n != 2 {
		t.Fatalf("informer holds %d objects, want 2", n)
	}
}

func ctxDone(t *testing.T) <-chan struct{} { return ctx(t).Done() }

func waitEvent(t *testing.T, events chan string, want string) {
	t.Helper()
	deadline := time.After(15 * time.Second)
	for {
		select {
		case e := <-events:
			if e == want {
				return
			}
		case <-deadline:
			t.Fatalf("no %q event", want)
		}
	}
}

func TestWatch_TimeoutSecondsEndsTheStream(t *testing.T) {
	ns := namespace(t)
	start := time.Now()
	req, _ := http.NewRequest("GET", srv.URL+"/apis/batch/v1/namespaces/"+ns+"/cronjobs?watch=1&timeoutSeconds=1", nil)
	req.Header.Set("Authorization", "Bearer "+srv.AdminToken)
	resp, err := srv.HTTPClient().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d < time.Second || d > 5*time.Second {
		t.Fatalf("watch lasted %s, want about 1s", d)
	}
}
