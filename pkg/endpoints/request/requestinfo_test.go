package request

import (
	"net/http/httptest"
	"reflect"
	"testing"
)

func TestNewRequestInfo_ParsesPathsAsKube(t *testing.T) {
	cases := []struct {
		method, url string
		want        RequestInfo
	}{
		{"GET", "/api/v1/namespaces", RequestInfo{IsResourceRequest: true, Verb: "list", APIPrefix: "api", APIVersion: "v1", Resource: "namespaces"}},
		{"GET", "/api/v1/namespaces/foo", RequestInfo{IsResourceRequest: true, Verb: "get", APIPrefix: "api", APIVersion: "v1", Namespace: "foo", Resource: "namespaces", Name: "foo"}},
		{"PUT", "/api/v1/namespaces/foo/finalize", RequestInfo{IsResourceRequest: true, Verb: "update", APIPrefix: "api", APIVersion: "v1", Namespace: "foo", Resource: "namespaces", Name: "foo", Subresource: "finalize"}},
		{"GET", "/api/v1/namespaces/foo/namespaces", RequestInfo{IsResourceRequest: true, Verb: "list", APIPrefix: "api", APIVersion: "v1", Namespace: "foo", Resource: "namespaces", InNamespacePath: true}},
		{"GET", "/apis/batch/v1/namespaces/ns/cronjobs", RequestInfo{IsResourceRequest: true, Verb: "list", APIPrefix: "apis", APIGroup: "batch", APIVersion: "v1", Namespace: "ns", Resource: "cronjobs", InNamespacePath: true}},
		{"GET", "/apis/batch/v1/namespaces/ns/cronjobs?watch=true", RequestInfo{IsResourceRequest: true, Verb: "watch", APIPrefix: "apis", APIGroup: "batch", APIVersion: "v1", Namespace: "ns", Resource: "cronjobs", InNamespacePath: true}},
		{"GET", "/apis/batch/v1/namespaces/ns/cronjobs?watch=yes", RequestInfo{IsResourceRequest: true, Verb: "watch", APIPrefix: "apis", APIGroup: "batch", APIVersion: "v1", Namespace: "ns", Resource: "cronjobs", InNamespacePath: true}},
		{"GET", "/apis/batch/v1/namespaces/ns/cronjobs?watch=", RequestInfo{IsResourceRequest: true, Verb: "watch", APIPrefix: "apis", APIGroup: "batch", APIVersion: "v1", Namespace: "ns", Resource: "cronjobs", InNamespacePath: true}},
		{"GET", "/apis/batch/v1/namespaces/ns/cronjobs?watch=False", RequestInfo{IsResourceRequest: true, Verb: "list", APIPrefix: "apis", APIGroup: "batch", APIVersion: "v1", Namespace: "ns", Resource: "cronjobs", InNamespacePath: true}},
		{"GET", "/apis/batch/v1/namespaces/ns/cronjobs?watch=0", RequestInfo{IsResourceRequest: true, Verb: "list", APIPrefix: "apis", APIGroup: "batch", APIVersion: "v1", Namespace: "ns", Resource: "cronjobs", InNamespacePath: true}},
		{"GET", "/apis/batch/v1/watch/namespaces/ns/cronjobs", RequestInfo{IsResourceRequest: true, Verb: "watch", APIPrefix: "apis", APIGroup: "batch", APIVersion: "v1", Namespace: "ns", Resource: "cronjobs", InNamespacePath: true}},
		{"GET", "/apis/batch/v1/namespaces/ns/cronjobs?fieldSelector=metadata.name%3Dx", RequestInfo{IsResourceRequest: true, Verb: "list", APIPrefix: "apis", APIGroup: "batch", APIVersion: "v1", Namespace: "ns", Resource: "cronjobs", Name: "x", InNamespacePath: true}},
		{"PUT", "/apis/batch/v1/namespaces/ns/cronjobs/x/status", RequestInfo{IsResourceRequest: true, Verb: "update", APIPrefix: "apis", APIGroup: "batch", APIVersion: "v1", Namespace: "ns", Resource: "cronjobs", Name: "x", Subresource: "status", InNamespacePath: true}},
		{"DELETE", "/apis/batch/v1/namespaces/ns/cronjobs", RequestInfo{IsResourceRequest: true, Verb: "deletecollection", APIPrefix: "apis", APIGroup: "batch", APIVersion: "v1", Namespace: "ns", Resource: "cronjobs", InNamespacePath: true}},
		{"POST", "/apis/batch/v1/namespaces/ns/cronjobs", RequestInfo{IsResourceRequest: true, Verb: "create", APIPrefix: "apis", APIGroup: "batch", APIVersion: "v1", Namespace: "ns", Resource: "cronjobs", InNamespacePath: true}},
		{"PATCH", "/apis/batch/v1/cronjobs/x", RequestInfo{IsResourceRequest: true, Verb: "patch", APIPrefix: "apis", APIGroup: "batch", APIVersion: "v1", Resource: "cronjobs", Name: "x"}},
		{"GET", "/apis/batch/v1", RequestInfo{Verb: "get", APIPrefix: "apis", APIGroup: "batch", APIVersion: "v1"}},
		{"GET", "/healthz", RequestInfo{Verb: "get"}},
	}
	for _, tc := range cases {
		t.Run(tc.method+" "+tc.url, func(t *testing.T) {
			got := NewRequestInfo(httptest.NewRequest(tc.method, tc.url, nil))
			got.Parts = nil
			tc.want.Path = got.Path
			if !reflect.DeepEqual(*got, tc.want) {
				t.Fatalf("got  %+v\nwant %+v", *got, tc.want)
			}
		})
	}
}
