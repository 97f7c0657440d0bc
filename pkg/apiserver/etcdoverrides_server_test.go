package apiserver_test

import (
	"context"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/cronplane/cronplane/pkg/apiserver"
	"github.com/cronplane/cronplane/pkg/apiserver/apiservertest"
	"github.com/cronplane/cronplane/pkg/etcdserver"
)

// TestEtcdServersOverrides_EventsLiveOnTheirOwnEtcd runs the server on its
// embedded etcd with a second etcd for /events: both Event APIs store
// there, and only there, with that cluster's revisions as their
// resourceVersions; everything else stays on the first; /readyz checks
// the second apart and fails without it, while other writes go on.
func TestEtcdServersOverrides_EventsLiveOnTheirOwnEtcd(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	events, stopEvents, err := etcdserver.StartTemp(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer stopEvents()
	files := events.ClientTLS()
	s := apiservertest.Start(t, func(o *apiserver.Options) {
		o.EtcdServersOverrides = []string{"/events#" + events.ClientURL()}
		// The TLS files apply to the override's servers, as in kube.
		o.EtcdTLS = apiserver.EtcdTLSOptions{CAFile: files.CAFile, CertFile: files.CertFile, KeyFile: files.KeyFile}
		o.Serving.EtcdHealthcheckTimeout = 300 * time.Millisecond
		o.Serving.EtcdReadycheckTimeout = 300 * time.Millisecond
	})
	main := s.EtcdClient()
	c := s.Client

	w, err := c.CoreV1().Events("default").Watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	core, err := c.CoreV1().Events("default").Create(ctx, &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{Name: "core"},
		InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: "default", Name: "p"},
		Reason:         "Tested", Message: "core API", Type: corev1.EventTypeNormal,
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.EventsV1().Events("default").Create(ctx, &eventsv1.Event{
		ObjectMeta: metav1.ObjectMeta{Name: "new"},
		EventTime:  metav1.NewMicroTime(time.Now()), ReportingController: "test/controller", ReportingInstance: "i",
		Action: "Test", Reason: "Tested", Note: "events.k8s.io API", Type: corev1.EventTypeNormal,
		Regarding: corev1.ObjectReference{Kind: "Pod", Namespace: "default", Name: "p"},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "stays"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	for _, tc := range []struct {
		key        string
		inOverride bool
	}{
		{"/registry/events/default/core", true},
		{"/registry/events/default/new", true},
		{"/registry/configmaps/default/stays", false},
		{"/registry/namespaces/default", false},
	} {
		inMain, err := main.Get(ctx, tc.key)
		if err != nil {
			t.Fatal(err)
		}
		inEvents, err := events.Client().Get(ctx, tc.key)
		if err != nil {
			t.Fatal(err)
		}
		if (len(inEvents.Kvs) == 1) != tc.inOverride || (len(inMain.Kvs) == 1) == tc.inOverride {
			t.Errorf("%s: %d in the events etcd, %d in the main one; want it in the events etcd: %v", tc.key, len(inEvents.Kvs), len(inMain.Kvs), tc.inOverride)
		}
		if tc.key == "/registry/events/default/core" && len(inEvents.Kvs) == 1 {
			if rv := strconv.FormatInt(inEvents.Kvs[0].ModRevision, 10); rv != core.ResourceVersion {
				t.Errorf("the core Event's resourceVersion %s, want the events etcd's revision %s", core.ResourceVersion, rv)
			}
		}
	}

	got, err := c.CoreV1().Events("default").Get(ctx, "new", metav1.GetOptions{})
	if err != nil || got.Message != "events.k8s.io API" {
		t.Fatalf("get through the core API of the events.k8s.io Event: %v, %v", got, err)
	}
	list, err := c.EventsV1().Events("default").List(ctx, metav1.ListOptions{})
	if err != nil || len(list.Items) != 2 {
		t.Fatalf("list: %v, %v", list, err)
	}
	seen := map[string]bool{}
	for len(seen) < 2 {
		select {
		case ev := <-w.ResultChan():
			if ev.Type != watch.Added {
				t.Fatalf("watch: %v %v", ev.Type, ev.Object)
			}
			seen[ev.Object.(*corev1.Event).Name] = true
		case <-ctx.Done():
			t.Fatalf("watch saw %v only", seen)
		}
	}

	httpClient := s.HTTPClient()
	readyz := func(path string) (int, string) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.URL+path+"?verbose", nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+s.AdminToken)
		resp, err := httpClient.Do(req)
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	for path, want := range map[string][]string{
		"/readyz":  {"[+]etcd ok", "[+]etcd-readiness ok", "[+]etcd-override-0 ok", "[+]etcd-override-readiness-0 ok"},
		"/healthz": {"[+]etcd ok", "[+]etcd-override-0 ok"},
	} {
		code, body := readyz(path)
		for _, w := range want {
			if code != 200 || !strings.Contains(body, w) {
				t.Fatalf("%s: %d %q, want %q", path, code, body, w)
			}
		}
	}

	stopEvents()
	deadline := time.Now().Add(30 * time.Second)
	for {
		code, body := readyz("/readyz")
		if code == 500 && strings.Contains(body, "[-]etcd-override-0 failed") && strings.Contains(body, "[-]etcd-override-readiness-0 failed") &&
			strings.Contains(body, "[+]etcd ok") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("/readyz with the events etcd stopped: %d %q", code, body)
		}
		time.Sleep(100 * time.Millisecond)
	}
	writeCtx, cancelWrite := context.WithTimeout(ctx, 10*time.Second)
	defer cancelWrite()
	if _, err := c.CoreV1().ConfigMaps("default").Create(writeCtx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "goes-on"}}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("a ConfigMap write with the events etcd stopped: %v", err)
	}
}
