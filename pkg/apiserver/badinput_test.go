package apiserver_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	clientv3 "go.etcd.io/etcd/client/v3"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// cronJobBody is a valid CronJob named name, with extra metadata fields
// (a JSON fragment such as `"uid":"x"`).
func cronJobBody(name, extraMeta string) string {
	meta := `"name":"` + name + `"`
	if extraMeta != "" {
		meta += "," + extraMeta
	}
	return `{"apiVersion":"batch/v1","kind":"CronJob","metadata":{` + meta + `},"spec":{"schedule":"*/5 * * * *","jobTemplate":{"spec":{"template":{"spec":{"restartPolicy":"OnFailure","containers":[{"name":"c","image":"busybox"}]}}}}}}`
}

// stored reads what the store holds, outside the keys the apiserver
// writes by itself: any request that stores or deletes changes it.
func stored(t *testing.T) storedState {
	t.Helper()
	resp, err := srv.EtcdClient().Get(context.Background(), "\x00", clientv3.WithFromKey(), clientv3.WithKeysOnly())
	if err != nil {
		t.Fatal(err)
	}
	var s storedState
	for _, kv := range resp.Kvs {
		if strings.HasPrefix(string(kv.Key), masterLeases) {
			continue
		}
		s.keys++
		s.lastChange = max(s.lastChange, kv.ModRevision)
	}
	return s
}

// masterLeases are the keys each apiserver renews by itself (the
// kubernetes Endpoints' lease reconciler), whatever requests it serves.
const masterLeases = "/registry/masterleases/"

// storedState tells whether anything was stored or deleted between two
// reads: the count of keys and the revision of the last one changed,
// outside masterLeases.
type storedState struct {
	keys       int
	lastChange int64
}

// TestBadInput_AnswersAsKubeAndStoresNothing sends malformed and
// misdirected requests (and dry runs) and checks each answer's code,
// reason, message and warning, found by sending the same requests to
// kube-apiserver v1.29.15; a comment gives kube's answer where ours
// differs on purpose: kube answers some bad input with a 500, and
// SPEC.md names 400 for some of kube's 422s. No case may store anything:
// etcd's revision must not move. A message ending in * is matched up to
// the star (the rest quotes the whole object).
func TestBadInput_AnswersAsKubeAndStoresNothing(t *testing.T) {
	ns := namespace(t)
	foo, err := srv.Client.BatchV1().CronJobs(ns).Create(ctx(t), cronJob("foo"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, method, path, contentType, body string
		code                                  int
		reason, message, warning              string
		accept                                string
	}{
		{"post-object-url", "POST", "/apis/batch/v1/namespaces/{ns}/cronjobs/foo", "", cronJobBody("bar", ""), 405, "MethodNotAllowed", "the server does not allow this method on the requested resource", "", ""},
		{"put-collection", "PUT", "/apis/batch/v1/namespaces/{ns}/cronjobs", "", cronJobBody("foo", ""), 405, "MethodNotAllowed", "the server does not allow this method on the requested resource", "", ""},
		{"patch-collection", "PATCH", "/apis/batch/v1/namespaces/{ns}/cronjobs", "application/merge-patch+json", `{}`, 405, "MethodNotAllowed", "the server does not allow this method on the requested resource", "", ""},
		{"head-object", "HEAD", "/apis/batch/v1/namespaces/{ns}/cronjobs/foo", "", "", 405, "", "", "", ""},
		{"head-collection", "HEAD", "/apis/batch/v1/namespaces/{ns}/cronjobs", "", "", 405, "", "", "", ""},
		{"delete-group-version", "DELETE", "/apis/batch/v1", "", "", 405, "MethodNotAllowed", "the server does not allow this method on the requested resource", "", ""},
		{"delete-group", "DELETE", "/apis/batch", "", "", 200, "", "", "", ""},
		{"delete-apis", "DELETE", "/apis", "", "", 200, "", "", "", ""},
		{"post-group-version", "POST", "/apis/batch/v1", "", `{}`, 405, "MethodNotAllowed", "the server does not allow this method on the requested resource", "", ""},
		{"put-api-v1", "PUT", "/api/v1", "", `{}`, 405, "MethodNotAllowed", "the server does not allow this method on the requested resource", "", ""},
		{"options-object", "OPTIONS", "/apis/batch/v1/namespaces/{ns}/cronjobs/foo", "", "", 405, "MethodNotAllowed", "the server does not allow this method on the requested resource", "", ""},
		{"post-status", "POST", "/apis/batch/v1/namespaces/{ns}/cronjobs/foo/status", "", cronJobBody("foo", ""), 405, "MethodNotAllowed", "the server does not allow this method on the requested resource", "", ""},
		{"delete-status", "DELETE", "/apis/batch/v1/namespaces/{ns}/cronjobs/foo/status", "", "", 405, "MethodNotAllowed", "the server does not allow this method on the requested resource", "", ""},
		{"get-bogus-sub", "GET", "/apis/batch/v1/namespaces/{ns}/cronjobs/foo/bogus", "", "", 404, "NotFound", "the server could not find the requested resource", "", ""},
		{"get-too-deep", "GET", "/apis/batch/v1/namespaces/{ns}/cronjobs/foo/status/x", "", "", 404, "NotFound", "the server could not find the requested resource", "", ""},
		{"post-cluster-cronjobs", "POST", "/apis/batch/v1/cronjobs", "", cronJobBody("foo", ""), 405, "MethodNotAllowed", "the server does not allow this method on the requested resource", "", ""},
		{"deletecollection-cluster-cronjobs", "DELETE", "/apis/batch/v1/cronjobs", "", "", 405, "MethodNotAllowed", "the server does not allow this method on the requested resource", "", ""},
		{"post-namespace-obj-url", "POST", "/api/v1/namespaces/{ns}", "", `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"t"}}`, 405, "MethodNotAllowed", "the server does not allow this method on the requested resource", "", ""},
		{"deletecollection-namespaces", "DELETE", "/api/v1/namespaces", "", "", 405, "MethodNotAllowed", "the server does not allow this method on the requested resource", "", ""},
		{"get-unknown-resource", "GET", "/apis/batch/v1/namespaces/{ns}/bogus", "", "", 404, "NotFound", "the server could not find the requested resource", "", ""},
		{"get-unknown-version", "GET", "/apis/batch/v9/namespaces/{ns}/cronjobs", "", "", 404, "NotFound", "the server could not find the requested resource", "", ""},
		{"get-dot", "GET", "/apis/batch/v1/namespaces/{ns}/cronjobs/.", "", "", 400, "BadRequest", "Name parameter invalid: \".\": may not be '.'", "", ""},
		{"get-dotdot", "GET", "/apis/batch/v1/namespaces/{ns}/cronjobs/..", "", "", 400, "BadRequest", "Name parameter invalid: \"..\": may not be '..'", "", ""},
		{"delete-dot", "DELETE", "/apis/batch/v1/namespaces/{ns}/cronjobs/.", "", "", 400, "BadRequest", "Name parameter invalid: \".\": may not be '.'", "", ""},
		{"get-double-slash", "GET", "/apis/batch/v1/namespaces//cronjobs", "", "", 200, "", "", "", ""},
		{"get-pct-dotdot", "GET", "/apis/batch/v1/namespaces/{ns}/cronjobs/%2e%2e", "", "", 400, "BadRequest", "Name parameter invalid: \"..\": may not be '..'", "", ""},
		{"get-trailing-slash", "GET", "/apis/batch/v1/namespaces/{ns}/cronjobs/", "", "", 200, "", "", "", ""},
		{"get-dot-ns", "GET", "/apis/batch/v1/namespaces/./cronjobs", "", "", 400, "BadRequest", "Namespace parameter invalid: \".\": may not be '.'", "", ""}, // kube: 500 invalid key: "/cronjobs/."
		{"get-dot-mid", "GET", "/apis/batch/v1/namespaces/{ns}/./cronjobs", "", "", 404, "NotFound", "the server could not find the requested resource", "", ""},
		{"put-dot", "PUT", "/apis/batch/v1/namespaces/{ns}/cronjobs/.", "", cronJobBody(".", ""), 400, "BadRequest", "Name parameter invalid: \".\": may not be '.'", "", ""},
		{"get-percent-slash", "GET", "/apis/batch/v1/namespaces/{ns}/cronjobs/a%2fb", "", "", 404, "NotFound", "the server could not find the requested resource", "", ""},
		{"create-with-rv", "POST", "/apis/batch/v1/namespaces/{ns}/cronjobs", "", cronJobBody("withrv", `"resourceVersion":"5"`), 400, "BadRequest", "resourceVersion should not be set on objects to be created", "", ""},                                      // kube: 500 resourceVersion should not be set on objects to be created
		{"delete-body-other-kind", "DELETE", "/apis/batch/v1/namespaces/{ns}/cronjobs/nonexist", "", `{"kind":"Pod","apiVersion":"v1"}`, 400, "BadRequest", "no kind \"Pod\" is registered for version \"v1\" in scheme \"pkg/runtime/scheme.go:100\"", "", ""}, // kube: 500, same words
		{"delete-body-bad-apiversion", "DELETE", "/apis/batch/v1/namespaces/{ns}/cronjobs/nonexist", "", `{"kind":"DeleteOptions","apiVersion":"v9"}`, 404, "NotFound", "cronjobs.batch \"nonexist\" not found", "", ""},
		{"delete-body-garbage", "DELETE", "/apis/batch/v1/namespaces/{ns}/cronjobs/nonexist", "", `{garbage`, 400, "BadRequest", "couldn't get version/kind; json parse error: invalid character 'g' looking for beginning of object key string", "", ""}, // kube: 500, same words
		{"apply-no-apiversion-kind", "PATCH", "/apis/batch/v1/namespaces/{ns}/cronjobs/applied?fieldManager=m", "application/apply-patch+yaml", `{"metadata":{"name":"applied"},"spec":{"schedule":"* * * * *"}}`, 400, "BadRequest", "invalid object type: /, Kind=", "", ""},
		{"apply-no-kind", "PATCH", "/apis/batch/v1/namespaces/{ns}/cronjobs/applied?fieldManager=m", "application/apply-patch+yaml", `{"apiVersion":"batch/v1","metadata":{"name":"applied"}}`, 400, "BadRequest", "invalid object type: batch/v1, Kind=", "", ""},
		{"apply-wrong-kind", "PATCH", "/apis/batch/v1/namespaces/{ns}/cronjobs/applied?fieldManager=m", "application/apply-patch+yaml", `{"apiVersion":"batch/v1","kind":"Job","metadata":{"name":"applied"}}`, 400, "BadRequest", "invalid object type: batch/v1, Kind=Job", "", ""},
		{"merge-change-namespace", "PATCH", "/apis/batch/v1/namespaces/{ns}/cronjobs/foo", "application/merge-patch+json", `{"metadata":{"namespace":"other"}}`, 400, "BadRequest", "the namespace of the provided object does not match the namespace sent on the request", "", ""},
		{"json-change-namespace", "PATCH", "/apis/batch/v1/namespaces/{ns}/cronjobs/foo", "application/json-patch+json", `[{"op":"replace","path":"/metadata/namespace","value":"other"}]`, 400, "BadRequest", "the namespace of the provided object does not match the namespace sent on the request", "", ""},
		{"put-wrong-uid", "PUT", "/apis/batch/v1/namespaces/{ns}/cronjobs/foo", "", cronJobBody("foo", `"uid":"00000000-0000-0000-0000-000000000001"`), 409, "Conflict", "Operation cannot be fulfilled on cronjobs.batch \"foo\": Precondition failed: UID in precondition: 00000000-0000-0000-0000-000000000001, UID in object meta: {uid}", "", ""}, // kube: 409 Operation cannot be fulfilled on cronjobs.batch "foo": StorageError: invalid object, Code: 4, Key: /
		{"merge-change-uid", "PATCH", "/apis/batch/v1/namespaces/{ns}/cronjobs/foo", "application/merge-patch+json", `{"metadata":{"uid":"00000000-0000-0000-0000-000000000001"}}`, 422, "Invalid", "CronJob.batch \"foo\" is invalid: metadata.uid: Invalid value: \"00000000-0000-0000-0000-000000000001\": field is immutable", "", ""},
		{"merge-change-name", "PATCH", "/apis/batch/v1/namespaces/{ns}/cronjobs/foo", "application/merge-patch+json", `{"metadata":{"name":"other"}}`, 400, "BadRequest", "the name of the object (other) does not match the name on the URL (foo)", "", ""},
		{"put-wrong-name", "PUT", "/apis/batch/v1/namespaces/{ns}/cronjobs/foo", "", cronJobBody("other", ""), 400, "BadRequest", "the name of the object (other) does not match the name on the URL (foo)", "", ""},
		{"put-no-name", "PUT", "/apis/batch/v1/namespaces/{ns}/cronjobs/foo", "", `{"apiVersion":"batch/v1","kind":"CronJob","metadata":{}}`, 400, "BadRequest", "the name of the object (foo based on URL) was undeterminable: name must be provided", "", ""},
		{"merge-remove-name", "PATCH", "/apis/batch/v1/namespaces/{ns}/cronjobs/foo", "application/merge-patch+json", `{"metadata":{"name":null}}`, 400, "BadRequest", "the name of the object (foo based on URL) was undeterminable: name must be provided", "", ""},
		{"merge-null", "PATCH", "/apis/batch/v1/namespaces/{ns}/cronjobs/foo", "application/merge-patch+json", `null`, 400, "BadRequest", "Invalid JSON Patch", "", ""},
		{"strategic-delete-all", "PATCH", "/apis/batch/v1/namespaces/{ns}/cronjobs/foo", "application/strategic-merge-patch+json", `{"$patch":"delete"}`, 400, "BadRequest", "the name of the object (foo based on URL) was undeterminable: name must be provided", "", ""},
		{"jsonpatch-remove-name", "PATCH", "/apis/batch/v1/namespaces/{ns}/cronjobs/foo", "application/json-patch+json", `[{"op":"remove","path":"/metadata/name"}]`, 400, "BadRequest", "the name of the object (foo based on URL) was undeterminable: name must be provided", "", ""},
		{"put-wrong-namespace", "PUT", "/apis/batch/v1/namespaces/{ns}/cronjobs/foo", "", cronJobBody("foo", `"namespace":"other"`), 400, "BadRequest", "the namespace of the provided object does not match the namespace sent on the request", "", ""},
		{"post-wrong-namespace", "POST", "/apis/batch/v1/namespaces/{ns}/cronjobs", "", cronJobBody("x1", `"namespace":"other"`), 400, "BadRequest", "the namespace of the provided object does not match the namespace sent on the request", "", ""},
		{"jsonpatch-test-fails", "PATCH", "/apis/batch/v1/namespaces/{ns}/cronjobs/foo", "application/json-patch+json", `[{"op":"test","path":"/spec/schedule","value":"nope"}]`, 422, "Invalid", "the server rejected our request due to an error in our request", "", ""},
		{"jsonpatch-bad-path", "PATCH", "/apis/batch/v1/namespaces/{ns}/cronjobs/foo", "application/json-patch+json", `[{"op":"replace","path":"/spec/nope/x","value":1}]`, 422, "Invalid", "the server rejected our request due to an error in our request", "", ""},
		{"jsonpatch-not-json", "PATCH", "/apis/batch/v1/namespaces/{ns}/cronjobs/foo", "application/json-patch+json", `not json`, 400, "BadRequest", "error decoding patch: invalid character 'o' in literal null (expecting 'u')", "", ""},
		{"jsonpatch-object", "PATCH", "/apis/batch/v1/namespaces/{ns}/cronjobs/foo", "application/json-patch+json", `{}`, 400, "BadRequest", "error decoding patch: json: cannot unmarshal object into Go value of type []handlers.jsonPatchOp", "", ""},
		{"merge-not-json", "PATCH", "/apis/batch/v1/namespaces/{ns}/cronjobs/foo", "application/merge-patch+json", `not json`, 400, "BadRequest", "error decoding patch: invalid character 'o' in literal null (expecting 'u')", "", ""},
		{"strategic-not-json", "PATCH", "/apis/batch/v1/namespaces/{ns}/cronjobs/foo", "application/strategic-merge-patch+json", `not json`, 400, "BadRequest", "invalid character 'o' in literal null (expecting 'u')", "", ""},
		{"apply-not-yaml", "PATCH", "/apis/batch/v1/namespaces/{ns}/cronjobs/foo?fieldManager=m", "application/apply-patch+yaml", `{[`, 400, "BadRequest", "error decoding YAML: error converting YAML to JSON: yaml: line 1: did not find expected node content", "", ""},
		{"job-restart-always", "POST", "/apis/batch/v1/namespaces/{ns}/jobs", "", `{"apiVersion":"batch/v1","kind":"Job","metadata":{"name":"ra"},"spec":{"template":{"spec":{"restartPolicy":"Always","containers":[{"name":"c","image":"busybox"}]}}}}`, 422, "Invalid", "Job.batch \"ra\" is invalid: spec.template.spec.restartPolicy: Required value: valid values: \"OnFailure\", \"Never\"", "", ""},
		{"job-no-restart", "POST", "/apis/batch/v1/namespaces/{ns}/jobs", "", `{"apiVersion":"batch/v1","kind":"Job","metadata":{"name":"ra"},"spec":{"template":{"spec":{"containers":[{"name":"c","image":"busybox"}]}}}}`, 422, "Invalid", "Job.batch \"ra\" is invalid: spec.template.spec.restartPolicy: Required value: valid values: \"OnFailure\", \"Never\"", "", ""},
		{"cj-restart-always", "POST", "/apis/batch/v1/namespaces/{ns}/cronjobs", "", `{"apiVersion":"batch/v1","kind":"CronJob","metadata":{"name":"ra"},"spec":{"schedule":"*/5 * * * *","jobTemplate":{"spec":{"template":{"spec":{"restartPolicy":"Always","containers":[{"name":"c","image":"busybox"}]}}}}}}`, 422, "Invalid", "CronJob.batch \"ra\" is invalid: spec.jobTemplate.spec.template.spec.restartPolicy: Required value: valid values: \"OnFailure\", \"Never\"", "", ""},
		{"merge-wrong-type", "PATCH", "/apis/batch/v1/namespaces/{ns}/cronjobs/foo", "application/merge-patch+json", `{"spec":{"schedule":5}}`, 422, "", "", "", ""},
		{"strategic-wrong-type", "PATCH", "/apis/batch/v1/namespaces/{ns}/cronjobs/foo", "application/strategic-merge-patch+json", `{"spec":{"suspend":"yes"}}`, 422, "Invalid", " \"\" is invalid: patch: Invalid value: \"map[spec:map[suspend:yes]]\": unrecognized type: bool", "", ""},
		{"jsonpatch-wrong-type", "PATCH", "/apis/batch/v1/namespaces/{ns}/cronjobs/foo", "application/json-patch+json", `[{"op":"replace","path":"/spec/schedule","value":5}]`, 422, "", "", "", ""},
		{"put-wrong-type", "PUT", "/apis/batch/v1/namespaces/{ns}/cronjobs/foo", "", `{"apiVersion":"batch/v1","kind":"CronJob","metadata":{"name":"foo"},"spec":{"schedule":5,"jobTemplate":{"spec":{"template":{"spec":{"restartPolicy":"OnFailure","containers":[{"name":"c","image":"busybox"}]}}}}}}`, 400, "BadRequest", "CronJob in version \"v1\" cannot be handled as a CronJob: json: cannot unmarshal number into Go struct field CronJobSpec.spec.schedule of type string", "", ""},
		{"post-wrong-type", "POST", "/apis/batch/v1/namespaces/{ns}/cronjobs", "", `{"apiVersion":"batch/v1","kind":"CronJob","metadata":{"name":"foo"},"spec":{"schedule":5,"jobTemplate":{"spec":{"template":{"spec":{"restartPolicy":"OnFailure","containers":[{"name":"c","image":"busybox"}]}}}}}}`, 400, "BadRequest", "CronJob in version \"v1\" cannot be handled as a CronJob: json: cannot unmarshal number into Go struct field CronJobSpec.spec.schedule of type string", "", ""},
		{"watch-0", "GET", "/apis/batch/v1/namespaces/{ns}/cronjobs?watch=0&limit=1", "", "", 200, "", "", "", ""},
		{"watch-false", "GET", "/apis/batch/v1/namespaces/{ns}/cronjobs?watch=false&limit=1", "", "", 200, "", "", "", ""},
		{"timeout-abc", "GET", "/apis/batch/v1/namespaces/{ns}/cronjobs?timeout=abc", "", "", 400, "BadRequest", "invalid timeout specified in the request URL - time: invalid duration \"abc\"", "", ""},
		{"timeout-1s", "GET", "/apis/batch/v1/namespaces/{ns}/cronjobs?timeout=1s", "", "", 200, "", "", "", ""},
		{"timeoutSeconds-abc", "GET", "/apis/batch/v1/namespaces/{ns}/cronjobs?watch=1&timeoutSeconds=abc", "", "", 400, "BadRequest", "strconv.ParseInt: parsing \"abc\": invalid syntax", "", ""},
		{"limit-abc", "GET", "/apis/batch/v1/namespaces/{ns}/cronjobs?limit=abc", "", "", 400, "BadRequest", "strconv.ParseInt: parsing \"abc\": invalid syntax", "", ""},
		{"limit-neg", "GET", "/apis/batch/v1/namespaces/{ns}/cronjobs?limit=-1", "", "", 200, "", "", "", ""},
		{"grace-neg", "DELETE", "/apis/batch/v1/namespaces/{ns}/cronjobs/nonexist?gracePeriodSeconds=-5", "", "", 404, "NotFound", "cronjobs.batch \"nonexist\" not found", "", ""},
		{"grace-neg-existing", "DELETE", "/apis/batch/v1/namespaces/{ns}/cronjobs/foo?gracePeriodSeconds=-5&dryRun=All", "", "", 200, "", "", "", ""},
		{"grace-abc", "DELETE", "/apis/batch/v1/namespaces/{ns}/cronjobs/foo?gracePeriodSeconds=abc", "", "", 400, "BadRequest", "strconv.ParseInt: parsing \"abc\": invalid syntax", "", ""},
		{"list-bad-continue", "GET", "/apis/batch/v1/namespaces/{ns}/cronjobs?continue=abc", "", "", 400, "BadRequest", "invalid continue token: continue key is not valid: invalid character 'i' looking for beginning of value", "", ""},
		{"sie-list", "GET", "/apis/batch/v1/namespaces/{ns}/cronjobs?sendInitialEvents=true", "", "", 422, "Invalid", "ListOptions.meta.k8s.io \"\" is invalid: sendInitialEvents: Forbidden: sendInitialEvents is forbidden for list", "", ""},
		{"dotted-name", "POST", "/apis/batch/v1/namespaces/{ns}/cronjobs?dryRun=All", "", cronJobBody("a.b", ""), 201, "", "", "299 - \"metadata.name: this is used in Pod names and hostnames, which can result in surprising behavior; a DNS label is recommended: [must not contain dots]\"", ""},
		{"apply-empty", "PATCH", "/apis/batch/v1/namespaces/{ns}/cronjobs/foo?fieldManager=m", "application/apply-patch+yaml", "", 400, "BadRequest", "invalid object type: /, Kind=", "", ""},
		{"apply-null", "PATCH", "/apis/batch/v1/namespaces/{ns}/cronjobs/foo?fieldManager=m", "application/apply-patch+yaml", `null`, 400, "BadRequest", "invalid object type: /, Kind=", "", ""},
		{"apply-list", "PATCH", "/apis/batch/v1/namespaces/{ns}/cronjobs/foo?fieldManager=m", "application/apply-patch+yaml", `[]`, 400, "BadRequest", "error decoding YAML: error unmarshaling JSON: while decoding JSON: json: cannot unmarshal array into Go value of type map[string]interface {}", "", ""},
		{"dryrun-bogus", "POST", "/apis/batch/v1/namespaces/{ns}/cronjobs?dryRun=Bogus", "", cronJobBody("x2", ""), 400, "BadRequest", "Invalid dryRun value: \"Bogus\", valid values are: All", "", ""},                                                               // SPEC.md names 400; kube: 422 CreateOptions.meta.k8s.io "" is invalid: dryRun: Unsupported value: []string{"Bogus"}: supported val
		{"fieldvalidation-bogus", "POST", "/apis/batch/v1/namespaces/{ns}/cronjobs?fieldValidation=Bogus", "", cronJobBody("x3", ""), 400, "BadRequest", "fieldValidation must be one of \"Ignore\", \"Warn\", or \"Strict\", got \"Bogus\"", "", ""},                  // SPEC.md names 400; kube: 422 CreateOptions.meta.k8s.io "" is invalid: fieldValidation: Unsupported value: "Bogus": supported valu
		{"rvmatch-no-rv", "GET", "/apis/batch/v1/namespaces/{ns}/cronjobs?resourceVersionMatch=Exact", "", "", 400, "BadRequest", "resourceVersionMatch is forbidden unless resourceVersion is provided", "", ""},                                                      // SPEC.md names 400; kube: 422 ListOptions.meta.k8s.io "" is invalid: resourceVersionMatch: Forbidden: resourceVersionMatch is forb
		{"rvmatch-bogus", "GET", "/apis/batch/v1/namespaces/{ns}/cronjobs?resourceVersion=1&resourceVersionMatch=Bogus", "", "", 400, "BadRequest", "resourceVersionMatch: Unsupported value: \"Bogus\": supported values: \"Exact\", \"NotOlderThan\", \"\"", "", ""}, // SPEC.md names 400; kube: 422 ListOptions.meta.k8s.io "" is invalid: resourceVersionMatch: Unsupported value: "Bogus": supported v
		{"rv-abc", "GET", "/apis/batch/v1/namespaces/{ns}/cronjobs?resourceVersion=abc", "", "", 400, "BadRequest", "invalid resource version \"abc\"", "", ""},                                                                                                        // kube: 500 resourceVersion: Invalid value: "abc": strconv.ParseUint: parsing "abc": invalid syntax
		{"rv-neg", "GET", "/apis/batch/v1/namespaces/{ns}/cronjobs/foo?resourceVersion=-1", "", "", 400, "BadRequest", "invalid resource version \"-1\"", "", ""},                                                                                                      // kube: 500 resourceVersion: Invalid value: "-1": strconv.ParseUint: parsing "-1": invalid syntax
		{"bad-label-selector", "GET", "/apis/batch/v1/namespaces/{ns}/cronjobs?labelSelector=a%3D%3D%3Db", "", "", 400, "BadRequest", "unable to parse requirement: found '=', expected: identifier", "", ""},
		{"bad-field-selector", "GET", "/apis/batch/v1/namespaces/{ns}/cronjobs?fieldSelector=spec.x%3D1", "", "", 400, "BadRequest", "\"spec.x\" is not a known field selector: only \"metadata.name\", \"metadata.namespace\"", "", ""},
		{"bad-field-selector-syntax", "GET", "/apis/batch/v1/namespaces/{ns}/cronjobs?fieldSelector=%3D%3D", "", "", 200, "", "", "", ""},
		{"propagation-bogus", "DELETE", "/apis/batch/v1/namespaces/{ns}/cronjobs/foo?propagationPolicy=Bogus&dryRun=All", "", "", 422, "Invalid", "DeleteOptions.meta.k8s.io \"\" is invalid: propagationPolicy: Unsupported value: \"Bogus\": supported values: \"Foreground\", \"Background\", \"Orphan\", \"nil\"", "", ""},
		{"orphan-abc", "DELETE", "/apis/batch/v1/namespaces/{ns}/cronjobs/foo?orphanDependents=abc&dryRun=All", "", "", 200, "", "", "", ""},
		{"force-non-apply", "PATCH", "/apis/batch/v1/namespaces/{ns}/cronjobs/foo?force=true", "application/merge-patch+json", `{}`, 422, "Invalid", "PatchOptions.meta.k8s.io \"\" is invalid: force: Forbidden: may not be specified for non-apply patch", "", ""},
		{"force-abc", "PATCH", "/apis/batch/v1/namespaces/{ns}/cronjobs/foo?force=abc&fieldManager=m&dryRun=All", "application/apply-patch+yaml", `{"apiVersion":"batch/v1","kind":"CronJob"}`, 200, "", "", "", ""},
		{"apply-no-manager", "PATCH", "/apis/batch/v1/namespaces/{ns}/cronjobs/foo", "application/apply-patch+yaml", `{"apiVersion":"batch/v1","kind":"CronJob"}`, 400, "BadRequest", "PATCH requests with apply content type must specify fieldManager", "", ""}, // SPEC.md names 400; kube: 422 PatchOptions.meta.k8s.io "" is invalid: fieldManager: Required value: is required for apply patch
		{"patch-no-ct", "PATCH", "/apis/batch/v1/namespaces/{ns}/cronjobs/foo", "", `{}`, 415, "UnsupportedMediaType", "415: Unsupported Media Type", "", ""},
		{"patch-bad-ct", "PATCH", "/apis/batch/v1/namespaces/{ns}/cronjobs/foo", "text/plain", `{}`, 415, "UnsupportedMediaType", "415: Unsupported Media Type", "", ""},
		{"post-bad-ct", "POST", "/apis/batch/v1/namespaces/{ns}/cronjobs", "text/plain", cronJobBody("x4", ""), 415, "UnsupportedMediaType", "the body of the request was in an unknown format - accepted media types include: application/json, application/yaml, application/vnd.kubernetes.protobuf", "", ""},
		{"post-empty", "POST", "/apis/batch/v1/namespaces/{ns}/cronjobs", "", "", 400, "BadRequest", "the object provided is unrecognized (must be of type CronJob): couldn't get version/kind; json parse error: unexpected end of JSON input (<empty>)", "", ""},
		{"post-null", "POST", "/apis/batch/v1/namespaces/{ns}/cronjobs", "", `null`, 422, "Invalid", "CronJob.batch \"\" is invalid: [metadata.name: Required value: name or generateName is required, spec.schedule: Required value, spec.jobTemplate.spec.template.spec.containers: Required value, spec.jobTemplate.spec.template.spec.restartPolicy: Required value: valid values: \"OnFailure\", \"Never\"]", "", ""},
		{"post-array", "POST", "/apis/batch/v1/namespaces/{ns}/cronjobs", "", `[]`, 400, "BadRequest", "the object provided is unrecognized (must be of type CronJob): couldn't get version/kind; json parse error: json: cannot unmarshal array into Go value of type struct { APIVersion string \"json:\\\"apiVersion,omitempty\\\"\"; Kind string \"json:\\\"kind,omitempty\\\"\" } (5b5d)", "", ""},
		{"post-yaml-syntax", "POST", "/apis/batch/v1/namespaces/{ns}/cronjobs", "application/yaml", "a: [", 400, "BadRequest", "the object provided is unrecognized (must be of type CronJob): yaml: line 1: did not find expected node content (613a205b)", "", ""},
		{"post-yaml-flow-syntax", "POST", "/apis/batch/v1/namespaces/{ns}/cronjobs", "application/yaml", "{[", 400, "BadRequest", "the object provided is unrecognized (must be of type CronJob): yaml: line 1: did not find expected node content ({[)", "", ""},
		{"post-yaml-list", "POST", "/apis/batch/v1/namespaces/{ns}/cronjobs", "application/yaml", "- a\n- b", 400, "BadRequest", "the object provided is unrecognized (must be of type CronJob): couldn't get version/kind; json parse error: json: cannot unmarshal array into Go value of type struct { APIVersion string \"json:\\\"apiVersion,omitempty\\\"\"; Kind string \"json:\\\"kind,omitempty\\\"\" } (2d20610a2d2062)", "", ""},
		{"put-yaml-syntax", "PUT", "/apis/batch/v1/namespaces/{ns}/cronjobs/foo", "application/yaml", "a: [", 400, "BadRequest", "the object provided is unrecognized (must be of type CronJob): yaml: line 1: did not find expected node content (613a205b)", "", ""},
		{"post-bad-json", "POST", "/apis/batch/v1/namespaces/{ns}/cronjobs", "", `{`, 400, "BadRequest", "the object provided is unrecognized (must be of type CronJob): couldn't get version/kind; json parse error: unexpected end of JSON input ({)", "", ""},
		{"post-unknown-field-strict", "POST", "/apis/batch/v1/namespaces/{ns}/cronjobs?fieldValidation=Strict", "", `{"apiVersion":"batch/v1","kind":"CronJob","metadata":{"name":"x5"},"spec":{"schedule":"*/5 * * * *","jobTemplate":{"spec":{"template":{"spec":{"restartPolicy":"OnFailure","containers":[{"name":"c","image":"busybox"}]}}}}},"bogus":1}`, 400, "BadRequest", "CronJob in version \"v1\" cannot be handled as a CronJob: strict decoding error: unknown field \"bogus\"", "", ""},
		{"post-dup-field-strict", "POST", "/apis/batch/v1/namespaces/{ns}/cronjobs?fieldValidation=Strict", "", `{"apiVersion":"batch/v1","kind":"CronJob","metadata":{"name":"x6","name":"x6"}}`, 400, "BadRequest", "CronJob in version \"v1\" cannot be handled as a CronJob: strict decoding error: duplicate field \"metadata.name\"", "", ""},
		{"post-wrong-kind", "POST", "/apis/batch/v1/namespaces/{ns}/cronjobs", "", `{"apiVersion":"batch/v1","kind":"Job","metadata":{"name":"x7"}}`, 400, "BadRequest", "Job in version \"v1\" cannot be handled as a CronJob: converting (v1.Job) to (batch.CronJob): unknown conversion", "", ""},
		{"post-wrong-apiversion", "POST", "/apis/batch/v1/namespaces/{ns}/cronjobs", "", `{"apiVersion":"batch/v2","kind":"CronJob","metadata":{"name":"x7"}}`, 400, "BadRequest", "CronJob in version \"v2\" cannot be handled as a CronJob: no kind \"CronJob\" is registered for version \"batch/v2\" in scheme \"pkg/runtime/scheme.go:100\"", "", ""},
		{"post-no-name", "POST", "/apis/batch/v1/namespaces/{ns}/cronjobs", "", `{"apiVersion":"batch/v1","kind":"CronJob","metadata":{}}`, 422, "Invalid", "CronJob.batch \"\" is invalid: [metadata.name: Required value: name or generateName is required, spec.schedule: Required value, spec.jobTemplate.spec.template.spec.containers: Required value, spec.jobTemplate.spec.template.spec.restartPolicy: Required value: valid values: \"OnFailure\", \"Never\"]", "", ""},
		{"post-bad-name", "POST", "/apis/batch/v1/namespaces/{ns}/cronjobs", "", cronJobBody("Bad_Name", ""), 422, "Invalid", "CronJob.batch \"Bad_Name\" is invalid: metadata.name: Invalid value*", "", ""},
		{"post-long-name", "POST", "/apis/batch/v1/namespaces/{ns}/cronjobs", "", cronJobBody("aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", ""), 422, "Invalid", "CronJob.batch \"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\" is invalid: metadata.name: Invalid value*", "", ""},
		{"accept-bogus", "GET", "/apis/batch/v1/namespaces/{ns}/cronjobs", "", "", 406, "NotAcceptable", "406: Not Acceptable\n\nAvailable representations: application/json, application/yaml, application/vnd.kubernetes.protobuf, application/json;stream=watch, application/vnd.kubernetes.protobuf;stream=watch", "", "application/bogus"},
		{"fieldmanager-long", "POST", "/apis/batch/v1/namespaces/{ns}/cronjobs?fieldManager=mmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmm", "", cronJobBody("x8", ""), 422, "Invalid", "CreateOptions.meta.k8s.io \"\" is invalid: fieldManager: Too long: must have at most 128 bytes", "", ""},
		{"pretty-bogus", "GET", "/apis/batch/v1/namespaces/{ns}/cronjobs?pretty=bogus", "", "", 200, "", "", "", ""},
		{"includeObject-bogus", "GET", "/apis/batch/v1/namespaces/{ns}/cronjobs", "", "", 200, "", "", "", "application/json;as=Table;v=v1;g=meta.k8s.io"},
		{"watch-False", "GET", "/apis/batch/v1/namespaces/{ns}/cronjobs?watch=False&limit=1", "", "", 200, "", "", "", ""},
		{"get-obj-accept-bogus", "GET", "/apis/batch/v1/namespaces/{ns}/cronjobs/foo", "", "", 406, "NotAcceptable", "406: Not Acceptable\n\nAvailable representations: application/json, application/yaml, application/vnd.kubernetes.protobuf", "", "application/bogus"},
		{"post-text-plain", "POST", "/apis/batch/v1/namespaces/{ns}/cronjobs", "text/plain", cronJobBody("x4", ""), 415, "UnsupportedMediaType", "the body of the request was in an unknown format - accepted media types include: application/json, application/yaml, application/vnd.kubernetes.protobuf", "", ""},
		{"post-bad-mime", "POST", "/apis/batch/v1/namespaces/{ns}/cronjobs", "bogus;;", cronJobBody("x4", ""), 415, "UnsupportedMediaType", "the body of the request was in an unknown format - accepted media types include: application/json, application/yaml, application/vnd.kubernetes.protobuf", "", ""},
		{"put-text-plain", "PUT", "/apis/batch/v1/namespaces/{ns}/cronjobs/foo", "text/plain", cronJobBody("foo", ""), 415, "UnsupportedMediaType", "the body of the request was in an unknown format - accepted media types include: application/json, application/yaml, application/vnd.kubernetes.protobuf", "", ""},
		{"head-version", "HEAD", "/version", "", "", 405, "", "", "", ""},
		{"get-api-405body", "DELETE", "/api", "", "", 405, "MethodNotAllowed", "the server does not allow this method on the requested resource", "", ""},
		{"jobs-dotted", "POST", "/apis/batch/v1/namespaces/{ns}/jobs?dryRun=All", "", `{"apiVersion":"batch/v1","kind":"Job","metadata":{"name":"a.b"},"spec":{"template":{"spec":{"restartPolicy":"Never","containers":[{"name":"c","image":"busybox"}]}}}}`, 201, "", "", "299 - \"metadata.name: this is used in Pod names and hostnames, which can result in surprising behavior; a DNS label is recommended: [must not contain dots]\"", ""},
		{"leases-dotted", "POST", "/apis/coordination.k8s.io/v1/namespaces/{ns}/leases?dryRun=All", "", `{"apiVersion":"coordination.k8s.io/v1","kind":"Lease","metadata":{"name":"a.b"}}`, 201, "", "", "", ""},
		{"ns-dotted", "POST", "/api/v1/namespaces?dryRun=All", "", `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"a.b"}}`, 422, "Invalid", "Namespace \"a.b\" is invalid: metadata.name: Invalid value: \"a.b\": must not contain dots", "", ""},
		{"jsonpatch-neg-index", "PATCH", "/apis/batch/v1/namespaces/{ns}/cronjobs/foo?dryRun=All", "application/json-patch+json", `[{"op":"add","path":"/spec/jobTemplate/spec/template/spec/containers/-1","value":{"name":"x","image":"y"}}]`, 200, "", "", "", ""},
		{"grace-neg-ns", "DELETE", "/api/v1/namespaces/{ns}?gracePeriodSeconds=-5&dryRun=All", "", "", 200, "", "", "", ""},
		{"delete-body-deleteoptions-batch", "DELETE", "/apis/batch/v1/namespaces/{ns}/cronjobs/nonexist", "", `{"kind":"DeleteOptions","apiVersion":"batch/v1"}`, 404, "NotFound", "cronjobs.batch \"nonexist\" not found", "", ""},
		{"delete-body-list", "DELETE", "/apis/batch/v1/namespaces/{ns}/cronjobs/nonexist", "", `[]`, 400, "BadRequest", "couldn't get version/kind; json parse error: json: cannot unmarshal array into Go value of type struct { APIVersion string \"json:\\\"apiVersion,omitempty\\\"\"; Kind string \"json:\\\"kind,omitempty\\\"\" }", "", ""}, // kube: 500, same words
		{"delete-body-wrong-type", "DELETE", "/apis/batch/v1/namespaces/{ns}/cronjobs/nonexist", "", `{"gracePeriodSeconds":"x"}`, 400, "BadRequest", "json: cannot unmarshal string into Go struct field DeleteOptions.gracePeriodSeconds of type int64", "", ""},                                                                                 // kube: 500, same words
		{"delete-body-unknown-field", "DELETE", "/apis/batch/v1/namespaces/{ns}/cronjobs/nonexist", "", `{"bogus":1}`, 404, "NotFound", "cronjobs.batch \"nonexist\" not found", "", ""},
		{"put-create-missing", "PUT", "/apis/batch/v1/namespaces/{ns}/cronjobs/missing1", "", cronJobBody("missing1", ""), 404, "NotFound", "cronjobs.batch \"missing1\" not found", "", ""},
		{"put-rv-missing", "PUT", "/apis/batch/v1/namespaces/{ns}/cronjobs/missing2", "", cronJobBody("missing2", `"resourceVersion":"5"`), 404, "NotFound", "cronjobs.batch \"missing2\" not found", "", ""},
		{"apply-create-with-rv", "PATCH", "/apis/batch/v1/namespaces/{ns}/cronjobs/applied2?fieldManager=m&dryRun=All", "application/apply-patch+yaml", cronJobBody("applied2", `"resourceVersion":"5"`), 201, "", "", "", ""},
		{"apply-managedfields", "PATCH", "/apis/batch/v1/namespaces/{ns}/cronjobs/foo?fieldManager=m", "application/apply-patch+yaml", cronJobBody("foo", `"managedFields":[{"manager":"x"}]`), 400, "BadRequest", "metadata.managedFields must be nil", "", ""},
		{"apply-name-mismatch", "PATCH", "/apis/batch/v1/namespaces/{ns}/cronjobs/foo?fieldManager=m", "application/apply-patch+yaml", cronJobBody("other", ""), 400, "BadRequest", "the name of the object (other) does not match the name on the URL (foo)", "", ""},
		{"apply-ns-mismatch", "PATCH", "/apis/batch/v1/namespaces/{ns}/cronjobs/foo?fieldManager=m", "application/apply-patch+yaml", cronJobBody("foo", `"namespace":"other"`), 400, "BadRequest", "the namespace of the provided object does not match the namespace sent on the request", "", ""},
		{"apply-wrong-type", "PATCH", "/apis/batch/v1/namespaces/{ns}/cronjobs/foo?fieldManager=m", "application/apply-patch+yaml", `{"apiVersion":"batch/v1","kind":"CronJob","metadata":{"name":"foo"},"spec":{"schedule":5,"jobTemplate":{"spec":{"template":{"spec":{"restartPolicy":"OnFailure","containers":[{"name":"c","image":"busybox"}]}}}}}}`, 400, "BadRequest", "CronJob in version \"v1\" cannot be handled as a CronJob: json: cannot unmarshal number into Go struct field CronJobSpec.spec.schedule of type string", "", ""},                      // SPEC.md: wrong types 400, unknown fields per fieldValidation; kube: 500 failed to create typed patch object (/foo; batch/v1, Kind=CronJob): .spec.schedule: expected string,
		{"apply-unknown-field", "PATCH", "/apis/batch/v1/namespaces/{ns}/cronjobs/foo?fieldManager=m&dryRun=All", "application/apply-patch+yaml", `{"apiVersion":"batch/v1","kind":"CronJob","metadata":{"name":"foo"},"spec":{"schedule":"*/5 * * * *","jobTemplate":{"spec":{"template":{"spec":{"restartPolicy":"OnFailure","containers":[{"name":"c","image":"busybox"}]}}}}},"bogus":1}`, 200, "", "", "299 - \"unknown field \\\"bogus\\\"\"", ""},                                                                                                            // SPEC.md: wrong types 400, unknown fields per fieldValidation; kube: 500 failed to create typed patch object (/foo; batch/v1, Kind=CronJob): .bogus: field not declared in sc
		{"apply-unknown-field-strict", "PATCH", "/apis/batch/v1/namespaces/{ns}/cronjobs/foo?fieldManager=m&dryRun=All&fieldValidation=Strict", "application/apply-patch+yaml", `{"apiVersion":"batch/v1","kind":"CronJob","metadata":{"name":"foo"},"spec":{"schedule":"*/5 * * * *","jobTemplate":{"spec":{"template":{"spec":{"restartPolicy":"OnFailure","containers":[{"name":"c","image":"busybox"}]}}}}},"bogus":1}`, 400, "BadRequest", "failed to create typed patch object (/foo; batch/v1, Kind=CronJob): .bogus: field not declared in schema", "", ""}, // SPEC.md: Strict is a 400; kube: 500 with the same message
		{"merge-unknown-field-strict", "PATCH", "/apis/batch/v1/namespaces/{ns}/cronjobs/foo?dryRun=All&fieldValidation=Strict", "application/merge-patch+json", `{"bogus":1}`, 400, "BadRequest", "CronJob in version \"v1\" cannot be handled as a CronJob: strict decoding error: unknown field \"bogus\"", "", ""},                                                                                                                                                                                                                                              // SPEC.md: Strict is a 400; kube: 422
		{"merge-unknown-field", "PATCH", "/apis/batch/v1/namespaces/{ns}/cronjobs/foo?dryRun=All", "application/merge-patch+json", `{"bogus":1}`, 200, "", "", "299 - \"unknown field \\\"bogus\\\"\"", ""},
		{"jsonpatch-unknown-field", "PATCH", "/apis/batch/v1/namespaces/{ns}/cronjobs/foo?dryRun=All", "application/json-patch+json", `[{"op":"add","path":"/bogus","value":1}]`, 200, "", "", "299 - \"unknown field \\\"bogus\\\"\"", ""},
		{"jsonpatch-unknown-field-strict", "PATCH", "/apis/batch/v1/namespaces/{ns}/cronjobs/foo?dryRun=All&fieldValidation=Strict", "application/json-patch+json", `[{"op":"add","path":"/bogus","value":1}]`, 400, "BadRequest", "CronJob in version \"v1\" cannot be handled as a CronJob: strict decoding error: unknown field \"bogus\"", "", ""}, // SPEC.md: Strict is a 400; kube: 422
		{"jsonpatch-unknown-opfield", "PATCH", "/apis/batch/v1/namespaces/{ns}/cronjobs/foo?dryRun=All", "application/json-patch+json", `[{"op":"add","path":"/metadata/labels","value":{},"bogus":1}]`, 200, "", "", "299 - \"json patch unknown field \\\"[0].bogus\\\"\"", ""},
		{"strategic-unknown-field", "PATCH", "/apis/batch/v1/namespaces/{ns}/cronjobs/foo?dryRun=All", "application/strategic-merge-patch+json", `{"bogus":1}`, 200, "", "", "299 - \"unknown field \\\"bogus\\\"\"", ""},
		{"strategic-unknown-field-strict", "PATCH", "/apis/batch/v1/namespaces/{ns}/cronjobs/foo?dryRun=All&fieldValidation=Strict", "application/strategic-merge-patch+json", `{"bogus":1}`, 400, "BadRequest", "CronJob in version \"v1\" cannot be handled as a CronJob: strict decoding error: unknown field \"bogus\"", "", ""}, // SPEC.md: Strict is a 400; kube: 422  "" is invalid: patch: Invalid value: "map[bogus:1]": strict decoding error: unknown field "bogus"
		{"status-patch-spec", "PATCH", "/apis/batch/v1/namespaces/{ns}/cronjobs/foo/status?dryRun=All", "application/merge-patch+json", `{"spec":{"schedule":"bad"}}`, 200, "", "", "", ""},
		{"patch-missing", "PATCH", "/apis/batch/v1/namespaces/{ns}/cronjobs/missing3", "application/merge-patch+json", `{}`, 404, "NotFound", "cronjobs.batch \"missing3\" not found", "", ""},
		{"patch-missing-jsonpatch", "PATCH", "/apis/batch/v1/namespaces/{ns}/cronjobs/missing3", "application/json-patch+json", `[]`, 404, "NotFound", "cronjobs.batch \"missing3\" not found", "", ""},
		{"ns-delete-default", "DELETE", "/api/v1/namespaces/default?dryRun=All", "", "", 403, "Forbidden", "namespaces \"default\" is forbidden: this namespace may not be deleted", "", ""},
		{"invalid-create-in-missing-ns", "POST", "/apis/batch/v1/namespaces/missingns/cronjobs", "", `{"apiVersion":"batch/v1","kind":"CronJob","metadata":{"name":"x"},"spec":{}}`, 404, "NotFound", "namespaces \"missingns\" not found", "", ""},
		{"ns-create-in-missing", "POST", "/apis/batch/v1/namespaces/missingns/cronjobs", "", cronJobBody("x9", ""), 404, "NotFound", "namespaces \"missingns\" not found", "", ""},
		{"list-missing-ns", "GET", "/apis/batch/v1/namespaces/missingns/cronjobs", "", "", 200, "", "", "", ""},
		{"event-create-missingns", "POST", "/api/v1/namespaces/missingns/events", "", `{"apiVersion":"v1","kind":"Event","metadata":{"name":"e"},"involvedObject":{"namespace":"missingns"}}`, 404, "NotFound", "namespaces \"missingns\" not found", "", ""},
		{"rv-continue", "GET", "/apis/batch/v1/namespaces/{ns}/cronjobs?continue=abc&resourceVersion=5", "", "", 400, "BadRequest", "invalid continue token: continue key is not valid: invalid character 'i' looking for beginning of value", "", ""},
		{"limit-zero", "GET", "/apis/batch/v1/namespaces/{ns}/cronjobs?limit=0", "", "", 200, "", "", "", ""},
	}
	expand := func(s string) string {
		return strings.NewReplacer("{ns}", ns, "{uid}", string(foo.UID)).Replace(s)
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := stored(t)
			req, err := http.NewRequest(tc.method, srv.URL+expand(tc.path), strings.NewReader(expand(tc.body)))
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Authorization", "Bearer "+srv.AdminToken)
			if tc.accept != "" {
				req.Header.Set("Accept", tc.accept)
			}
			if tc.contentType != "" {
				req.Header.Set("Content-Type", tc.contentType)
			} else if tc.body != "" {
				req.Header.Set("Content-Type", "application/json")
			}
			client := srv.HTTPClient()
			client.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
			resp, err := client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			data, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tc.code {
				t.Fatalf("code %d, want %d: %s", resp.StatusCode, tc.code, data)
			}
			if tc.reason != "" || tc.message != "" {
				status := decodeStatus(t, data)
				want := expand(tc.message)
				got := status.Message
				if strings.HasSuffix(want, "*") && len(got) >= len(want)-1 {
					want, got = want[:len(want)-1], got[:len(want)-1]
				}
				if string(status.Reason) != tc.reason || got != want {
					t.Fatalf("got %s %q\nwant %s %q", status.Reason, status.Message, tc.reason, expand(tc.message))
				}
			}
			if w := resp.Header.Get("Warning"); w != tc.warning {
				t.Fatalf("warning %q, want %q", w, tc.warning)
			}
			if after := stored(t); after != before {
				t.Fatalf("etcd changed from %+v to %+v: something was stored", before, after)
			}
		})
	}
}

func decodeStatus(t *testing.T, data []byte) metav1.Status {
	t.Helper()
	var s metav1.Status
	if err := json.Unmarshal(data, &s); err != nil || s.Kind != "Status" {
		t.Fatalf("not a Status (%v): %s", err, data)
	}
	return s
}
