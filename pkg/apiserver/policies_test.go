package apiserver_test

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/cronplane/cronplane/pkg/apiserver"
	"github.com/cronplane/cronplane/pkg/apiserver/apiservertest"
	"github.com/cronplane/cronplane/pkg/audit"
)

const vapPath = "/apis/admissionregistration.k8s.io/v1beta1/"

// startWithPolicies starts a server that serves and enforces policies
// and audits every request at Metadata to the file it returns.
func startWithPolicies(t *testing.T) (*apiservertest.Server, string) {
	t.Helper()
	dir := t.TempDir()
	policy, logPath := filepath.Join(dir, "policy.yaml"), filepath.Join(dir, "audit.log")
	if err := os.WriteFile(policy, []byte("apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: Metadata\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	s := apiservertest.Start(t, func(o *apiserver.Options) {
		if err := o.FeatureGates.Set("ValidatingAdmissionPolicy=true"); err != nil {
			t.Fatal(err)
		}
		o.RuntimeConfig = map[string]string{"admissionregistration.k8s.io/v1beta1": "true"}
		o.Audit = audit.Options{PolicyFile: policy, LogPath: logPath}
	})
	return s, logPath
}

const everyMinutePolicy = `{"apiVersion":"admissionregistration.k8s.io/v1beta1","kind":"ValidatingAdmissionPolicy",
"metadata":{"name":"p2"},"spec":{"paramKind":{"apiVersion":"v1","kind":"ConfigMap"},
"matchConstraints":{"resourceRules":[{"apiGroups":["batch"],"apiVersions":["v1"],"operations":["CREATE","UPDATE"],"resources":["cronjobs"]}]},
"variables":[{"name":"sched","expression":"object.spec.schedule"}],
"validations":[{"expression":"variables.sched != '* * * * *'","message":"no every-minute"},
{"expression":"size(object.metadata.name) <= int(params.data.max)","messageExpression":"'name too long: ' + object.metadata.name","reason":"Forbidden"}],
"auditAnnotations":[{"key":"sched","valueExpression":"'schedule ' + object.spec.schedule"}]}}`

func cronJobJSON(name, schedule string) string {
	return `{"apiVersion":"batch/v1","kind":"CronJob","metadata":{"name":"` + name + `"},"spec":{"schedule":"` + schedule +
		`","jobTemplate":{"spec":{"template":{"spec":{"restartPolicy":"Never","containers":[{"name":"c","image":"busybox"}]}}}}}}`
}

// A binding with Deny refuses a CronJob the policy fails with kube's
// Status (the first failed validation, its reason and code); with Warn
// the write passes with kube's warning and, with Audit, the failure and
// the policy's audit annotations are in the audit event; a missing param under Deny
// fails the binding.
func TestValidatingAdmissionPolicy_DeniesWarnsAuditsAndFailsOnMissingParams(t *testing.T) {
	s, auditLog := startWithPolicies(t)
	tok := s.AdminToken
	must := func(method, path, body string, want int) string {
		t.Helper()
		var resp *http.Response
		var out string
		if method == "PATCH" {
			resp, out = mergePatch(t, s, path, body)
		} else {
			resp, out = request(t, s, method, path, tok, body)
		}
		if resp.StatusCode != want {
			t.Fatalf("%s %s: %d %s, want %d", method, path, resp.StatusCode, out, want)
		}
		return out
	}
	must("POST", "/api/v1/namespaces/default/configmaps", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cm1"},"data":{"max":"3"}}`, 201)
	out := must("POST", vapPath+"validatingadmissionpolicies", everyMinutePolicy, 201)
	var created struct {
		Spec struct {
			FailurePolicy    string
			MatchConstraints map[string]interface{}
		}
	}
	if err := json.Unmarshal([]byte(out), &created); err != nil {
		t.Fatal(err)
	}
	if created.Spec.FailurePolicy != "Fail" || created.Spec.MatchConstraints["matchPolicy"] != "Equivalent" {
		t.Errorf("defaults: %s", out)
	}
	must("POST", vapPath+"validatingadmissionpolicybindings", `{"apiVersion":"admissionregistration.k8s.io/v1beta1","kind":"ValidatingAdmissionPolicyBinding",
"metadata":{"name":"b2"},"spec":{"policyName":"p2","validationActions":["Deny"],"paramRef":{"name":"cm1","namespace":"default","parameterNotFoundAction":"Deny"}}}`, 201)

	cronjobs := "/apis/batch/v1/namespaces/default/cronjobs"
	// The watch cache the plugin reads may lag the writes a moment.
	var resp *http.Response
	for deadline := time.Now().Add(5 * time.Second); ; {
		resp, out = request(t, s, "POST", cronjobs, tok, cronJobJSON("longname", "* * * * *"))
		if resp.StatusCode != 201 || time.Now().After(deadline) {
			break
		}
		request(t, s, "DELETE", cronjobs+"/longname", tok, "")
		time.Sleep(100 * time.Millisecond)
	}
	want := `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"cronjobs.batch \"longname\" is forbidden: ValidatingAdmissionPolicy 'p2' with binding 'b2' denied request: no every-minute","reason":"Invalid","details":{"name":"longname","group":"batch","kind":"cronjobs","causes":[{"message":"ValidatingAdmissionPolicy 'p2' with binding 'b2' denied request: no every-minute"}]},"code":422}`
	if resp.StatusCode != 422 || strings.TrimSpace(out) != want {
		t.Fatalf("every-minute CronJob: %d\n%s\nwant\n%s", resp.StatusCode, out, want)
	}
	resp, out = request(t, s, "POST", cronjobs, tok, cronJobJSON("longname", "*/5 * * * *"))
	if resp.StatusCode != 403 || !strings.Contains(out, `denied request: name too long: longname","reason":"Forbidden"`) {
		t.Fatalf("long name: %d %s", resp.StatusCode, out)
	}
	must("POST", cronjobs, cronJobJSON("ok", "*/5 * * * *"), 201)

	must("PATCH", vapPath+"validatingadmissionpolicybindings/b2", `{"spec":{"validationActions":["Warn","Audit"]}}`, 200)
	waitFor(t, func() bool {
		resp, _ := request(t, s, "POST", cronjobs+"?dryRun=All", tok, cronJobJSON("longname", "*/5 * * * *"))
		return resp.StatusCode == 201 && resp.Header.Get("Warning") == `299 - "Validation failed for ValidatingAdmissionPolicy 'p2' with binding 'b2': name too long: longname"`
	})
	ev := auditLines(t, auditLog, `"stage":"ResponseComplete".*"verb":"create".*validation_failure`)[0]
	annotations, _ := ev["annotations"].(map[string]interface{})
	if got := annotations["validation.policy.admission.k8s.io/validation_failure"]; got != `[{"expressionIndex":1,"message":"name too long: longname","policy":"p2","binding":"b2","validationActions":["Warn","Audit"]}]` {
		t.Errorf("validation failure annotation %v", got)
	}
	if got := annotations["p2/sched"]; got != "schedule */5 * * * *" {
		t.Errorf("policy annotation %v", got)
	}

	must("PATCH", vapPath+"validatingadmissionpolicybindings/b2", `{"spec":{"validationActions":["Deny"],"paramRef":{"name":"nosuch"}}}`, 200)
	waitFor(t, func() bool {
		resp, out := request(t, s, "POST", cronjobs+"?dryRun=All", tok, cronJobJSON("short", "*/5 * * * *"))
		return resp.StatusCode == 422 && strings.Contains(out, "denied request: failed to configure binding: no params found for policy binding with `Deny` parameterNotFoundAction")
	})
}

func mergePatch(t *testing.T, s *apiservertest.Server, path, body string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest("PATCH", s.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+s.AdminToken)
	req.Header.Set("Content-Type", "application/merge-patch+json")
	resp, err := s.HTTPClient().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return resp, string(data)
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); !cond(); time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 5s")
		}
	}
}

// Policies and bindings are refused with kube's messages, and a policy's
// status reports the expressions that do not type-check against the
// kinds it matches.
func TestValidatingAdmissionPolicy_ValidatesAndTypeChecks(t *testing.T) {
	s, _ := startWithPolicies(t)
	resp, out := request(t, s, "POST", vapPath+"validatingadmissionpolicybindings", s.AdminToken,
		`{"apiVersion":"admissionregistration.k8s.io/v1beta1","kind":"ValidatingAdmissionPolicyBinding","metadata":{"name":"e6"},"spec":{"policyName":"Bad_Name","validationActions":["Deny","Warn"],"paramRef":{"parameterNotFoundAction":"Allow"}}}`)
	for _, want := range []string{
		`spec.policyName: Invalid value: \"Bad_Name\": a lowercase RFC 1123 subdomain must consist of`,
		`spec.paramRef: Required value: one of name or selector must be specified`,
		`spec.validationActions: Invalid value: []admissionregistration.ValidationAction{\"Deny\", \"Warn\"}: must not contain both Deny and Warn`,
	} {
		if resp.StatusCode != 422 || !strings.Contains(out, want) {
			t.Errorf("bad binding: %d %s\nwant %s", resp.StatusCode, out, want)
		}
	}
	resp, out = request(t, s, "POST", vapPath+"validatingadmissionpolicies", s.AdminToken, `{"apiVersion":"admissionregistration.k8s.io/v1beta1","kind":"ValidatingAdmissionPolicy",
"metadata":{"name":"p1"},"spec":{"matchConstraints":{"resourceRules":[{"apiGroups":["batch"],"apiVersions":["v1"],"operations":["CREATE"],"resources":["cronjobs"]}]},
"validations":[{"expression":"object.spec.schedule != ''"},{"expression":"object.spec.nosuch == 1"}]}}`)
	if resp.StatusCode != 201 {
		t.Fatalf("policy: %d %s", resp.StatusCode, out)
	}
	var p struct {
		Status map[string]interface{}
	}
	if err := json.Unmarshal([]byte(out), &p); err != nil {
		t.Fatal(err)
	}
	got, _ := json.Marshal(p.Status)
	want := `{"observedGeneration":1,"typeChecking":{"expressionWarnings":[{"fieldRef":"spec.validations[1].expression","warning":"batch/v1, Kind=CronJob: ERROR: \u003cinput\u003e:1:12: undefined field 'nosuch'\n | object.spec.nosuch == 1\n | ...........^\n"}]}}`
	if string(got) != want {
		t.Errorf("status:\n%s\nwant\n%s", got, want)
	}
}

// The policy APIs are off by default, as kube's newer beta APIs: served
// only when a runtime-config key turns them on.
func TestResolveRuntimeConfig_PoliciesAreServedOnlyWhenAsked(t *testing.T) {
	available := []schema.GroupVersionResource{{Version: "v1", Resource: "namespaces"}, {Group: "admissionregistration.k8s.io", Version: "v1beta1", Resource: "validatingadmissionpolicies"}}
	for _, tc := range []struct {
		config map[string]string
		want   bool
	}{
		{nil, false},
		{map[string]string{"api/beta": "true"}, true},
		{map[string]string{"api/all": "true"}, true},
		{map[string]string{"admissionregistration.k8s.io/v1beta1": "true"}, true},
		{map[string]string{"admissionregistration.k8s.io/v1beta1/validatingadmissionpolicies": "true"}, true},
		{map[string]string{"api/all": "true", "admissionregistration.k8s.io/v1beta1": "false"}, false},
	} {
		served, err := apiserver.ResolveRuntimeConfig(tc.config, available)
		if err != nil || served[available[1]] != tc.want {
			t.Errorf("%v: served %v (%v), want %v", tc.config, served[available[1]], err, tc.want)
		}
	}
}
