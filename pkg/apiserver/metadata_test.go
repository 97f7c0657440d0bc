package apiserver_test

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
)

var cronJobsGVR = schema.GroupVersionResource{Group: "batch", Version: "v1", Resource: "cronjobs"}

// The metadata client (client-go/metadata) speaks protobuf with
// as=PartialObjectMetadata(List); the garbage collector depends on it.
func TestPartialObjectMetadata_MetadataClientGetListWatchPatchDelete(t *testing.T) {
	for _, contentType := range []string{"application/vnd.kubernetes.protobuf", "application/json"} {
		t.Run(contentType, func(t *testing.T) {
			ns := namespace(t)
			cj := cronJob("meta")
			cj.Labels = map[string]string{"app": "meta"}
			if _, err := srv.Client.BatchV1().CronJobs(ns).Create(ctx(t), cj, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			cfg := rest.CopyConfig(srv.Config)
			cfg.ContentType = contentType
			client := metadata.NewForConfigOrDie(cfg).Resource(cronJobsGVR).Namespace(ns)

			got, err := client.Get(ctx(t), "meta", metav1.GetOptions{})
			if err != nil || got.Name != "meta" || got.Labels["app"] != "meta" || got.UID == "" {
				t.Fatalf("get: %v %+v", err, got)
			}
			list, err := client.List(ctx(t), metav1.ListOptions{})
			if err != nil || len(list.Items) != 1 || list.Items[0].Name != "meta" || list.ResourceVersion == "" {
				t.Fatalf("list: %v %+v", err, list)
			}
			w, err := client.Watch(ctx(t), metav1.ListOptions{ResourceVersion: list.ResourceVersion, AllowWatchBookmarks: true})
			if err != nil {
				t.Fatal(err)
			}
			defer w.Stop()
			patched, err := client.Patch(ctx(t), "meta", types.MergePatchType, []byte(`{"metadata":{"labels":{"app":"patched"}}}`), metav1.PatchOptions{})
			if err != nil || patched.Labels["app"] != "patched" {
				t.Fatalf("patch: %v %+v", err, patched)
			}
			select {
			case e := <-w.ResultChan():
				pm, ok := e.Object.(*metav1.PartialObjectMetadata)
				if e.Type != watch.Modified || !ok || pm.Labels["app"] != "patched" {
					t.Fatalf("watch event %s %T %+v", e.Type, e.Object, e.Object)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("no watch event")
			}
			if err := client.Delete(ctx(t), "meta", metav1.DeleteOptions{}); err != nil {
				t.Fatalf("delete: %v", err)
			}
			if _, err := srv.Client.BatchV1().CronJobs(ns).Get(ctx(t), "meta", metav1.GetOptions{}); err == nil {
				t.Fatal("cronjob still there after delete")
			}
			select {
			case e := <-w.ResultChan():
				pm, ok := e.Object.(*metav1.PartialObjectMetadata)
				if e.Type != watch.Deleted || !ok || pm.Name != "meta" {
					t.Fatalf("watch event %s %T %+v", e.Type, e.Object, e.Object)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("no delete event")
			}
		})
	}
}

func TestPartialObjectMetadata_NegotiationFollowsTheVerb(t *testing.T) {
	ns := namespace(t)
	if _, err := srv.Client.BatchV1().CronJobs(ns).Create(ctx(t), cronJob("neg"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	path := "/apis/batch/v1/namespaces/" + ns + "/cronjobs"
	for _, tc := range []struct {
		path, accept string
		code         int
		kind         string // the 406 message for errors
	}{
		{path + "/neg", "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1", 200, "PartialObjectMetadata"},
		{path + "/neg", "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1beta1", 200, "PartialObjectMetadata"},
		{path, "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1", 200, "PartialObjectMetadataList"},
		{path, "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1beta1", 200, "PartialObjectMetadataList"},
		// A list is not one object and one object is not a list; kube does
		// not fall back to the next type then.
		{path, "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1, application/json", 406,
			"you requested PartialObjectMetadata, but the requested object is a list (*batch.CronJobList)"},
		{path + "/neg", "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1", 406,
			"you requested PartialObjectMetadataList, but the requested object is not a list (*batch.CronJob)"},
		{path + "/neg", "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v2", 406, ""},
		{path + "/neg", "application/json;as=PartialObjectMetadata;g=example.com;v=v1", 406, ""},
		// The fallback of a metadata client picks plain JSON.
		{path + "/neg", "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v9, application/json", 200, "CronJob"},
	} {
		resp, body := get(t, tc.path, map[string]string{"Accept": tc.accept})
		if resp.StatusCode != tc.code {
			t.Errorf("%s %s: %d %s", tc.path, tc.accept, resp.StatusCode, body)
			continue
		}
		if tc.code != http.StatusOK {
			var st metav1.Status
			if err := json.Unmarshal(body, &st); err != nil || (tc.kind != "" && (st.Message != tc.kind || st.Details != nil)) {
				t.Errorf("%s %s: %v %q", tc.path, tc.accept, err, st.Message)
			}
			continue
		}
		var out struct {
			Kind       string `json:"kind"`
			APIVersion string `json:"apiVersion"`
			Spec       *batchv1.CronJobSpec
		}
		if err := json.Unmarshal(body, &out); err != nil || out.Kind != tc.kind {
			t.Errorf("%s %s: kind %q %v", tc.path, tc.accept, out.Kind, err)
		}
		if tc.kind != "CronJob" && out.Spec != nil {
			t.Errorf("%s: metadata answer carries the spec", tc.accept)
		}
	}
}
