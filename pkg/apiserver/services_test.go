package apiserver_test

import (
	"encoding/json"
	"strings"
	"testing"
)

// Bad Services and Endpoints are refused with kube-apiserver v1.29's 422
// and words (read from it), and nothing is stored.
func TestServices_BadInputAsKube(t *testing.T) {
	mustKubectl(t, "create", "namespace", "svc-bad")
	defer mustKubectl(t, "delete", "namespace", "svc-bad", "--wait=false")
	if _, body := raw(t, "POST", "/api/v1/namespaces/svc-bad/services", srv.AdminToken, "application/json",
		`{"apiVersion":"v1","kind":"Service","metadata":{"name":"taken"},"spec":{"clusterIP":"10.0.0.77","ports":[{"port":80}]}}`); !strings.Contains(body, `"clusterIP":"10.0.0.77"`) {
		t.Fatalf("create taken: %s", body)
	}
	cases := []struct{ path, body, message string }{
		{"services", `{"metadata":{"name":"dup"},"spec":{"clusterIP":"10.0.0.77","ports":[{"port":80}]}}`,
			`Service "dup" is invalid: spec.clusterIPs: Invalid value: []string{"10.0.0.77"}: failed to allocate IP 10.0.0.77: provided IP is already allocated`},
		{"services", `{"metadata":{"name":"out"},"spec":{"clusterIP":"10.9.0.5","ports":[{"port":80}]}}`,
			`Service "out" is invalid: spec.clusterIPs: Invalid value: []string{"10.9.0.5"}: failed to allocate IP 10.9.0.5: the provided IP (10.9.0.5) is not in the valid range. The range of valid IPs is 10.0.0.0/24`},
		{"services", `{"metadata":{"name":"bad"},"spec":{"type":"Foo","ports":[{"port":0,"protocol":"XX"},{"port":70000}]}}`,
			`Service "bad" is invalid: [spec.ports[0].name: Required value, spec.ports[0].port: Invalid value: 0: must be between 1 and 65535, inclusive, spec.ports[0].protocol: Unsupported value: "XX": supported values: "SCTP", "TCP", "UDP", spec.ports[0].targetPort: Invalid value: 0: must be between 1 and 65535, inclusive, spec.ports[1].name: Required value, spec.ports[1].port: Invalid value: 70000: must be between 1 and 65535, inclusive, spec.ports[1].targetPort: Invalid value: 70000: must be between 1 and 65535, inclusive, spec.type: Unsupported value: "Foo": supported values: "ClusterIP", "ExternalName", "LoadBalancer", "NodePort"]`},
		{"services", `{"metadata":{"name":"noports"},"spec":{}}`, `Service "noports" is invalid: spec.ports: Required value`},
		{"services", `{"metadata":{"name":"Bad_Name"},"spec":{"ports":[{"port":80}]}}`,
			`Service "Bad_Name" is invalid: metadata.name: Invalid value: "Bad_Name": a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')`},
		{"services", `{"metadata":{"name":"badip"},"spec":{"clusterIP":"bogus","ports":[{"port":80}]}}`,
			`Service "badip" is invalid: spec.clusterIPs[0]: Invalid value: "bogus": must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)`},
		{"endpoints", `{"metadata":{"name":"e1"},"subsets":[{"addresses":[{"ip":"127.0.0.1"}],"ports":[{"port":80}]}]}`,
			`Endpoints "e1" is invalid: subsets[0].addresses[0].ip: Invalid value: "127.0.0.1": may not be in the loopback range (127.0.0.0/8, ::1/128)`},
	}
	for _, tc := range cases {
		resp, body := raw(t, "POST", "/api/v1/namespaces/svc-bad/"+tc.path, srv.AdminToken, "application/json", tc.body)
		var status struct {
			Message string `json:"message"`
			Reason  string `json:"reason"`
		}
		_ = json.Unmarshal([]byte(body), &status)
		if resp.StatusCode != 422 || status.Reason != "Invalid" || status.Message != tc.message {
			t.Errorf("%s: %d %s\n%s\nwant\n%s", tc.body, resp.StatusCode, status.Reason, status.Message, tc.message)
		}
	}
	if out := mustKubectl(t, "get", "services,endpoints", "-n", "svc-bad", "-o", "name"); out != "service/taken\n" {
		t.Fatalf("stored:\n%s", out)
	}
	// The clusterIP of a Service is kept on update and may not change.
	resp, body := raw(t, "PATCH", "/api/v1/namespaces/svc-bad/services/taken", srv.AdminToken, "application/merge-patch+json", `{"spec":{"clusterIP":"10.0.0.78","clusterIPs":["10.0.0.78"]}}`)
	if resp.StatusCode != 422 || !strings.Contains(body, `spec.clusterIPs[0]: Invalid value: []string{\"10.0.0.78\"}: may not change once set`) {
		t.Fatalf("change of clusterIP: %d %s", resp.StatusCode, body)
	}
}

// A patch of the type alone drops what the old type needed, and kube's
// warnings come back, as kube-apiserver v1.29 answers (read from it).
func TestServices_TypeChangesAndWarningsAsKube(t *testing.T) {
	ns := "svc-types"
	mustKubectl(t, "create", "namespace", ns)
	defer mustKubectl(t, "delete", "namespace", ns, "--wait=false")
	spec := func() string {
		return mustKubectl(t, "get", "service", "s", "-n", ns, "-o", `jsonpath={.spec.type} {.spec.ports[*].nodePort} {.spec.ipFamilyPolicy} {.spec.internalTrafficPolicy} {.spec.externalTrafficPolicy}`)
	}
	mustKubectl(t, "create", "service", "nodeport", "s", "--tcp=80:8080", "-n", ns)
	if got := spec(); !strings.HasPrefix(got, "NodePort 3") || !strings.HasSuffix(got, " SingleStack Cluster Cluster") {
		t.Fatalf("NodePort service: %q", got)
	}
	mustKubectl(t, "patch", "service", "s", "-n", ns, "-p", `{"spec":{"type":"ClusterIP"}}`)
	if got := spec(); got != "ClusterIP  SingleStack Cluster " {
		t.Fatalf("after the patch to ClusterIP: %q", got)
	}
	mustKubectl(t, "patch", "service", "s", "-n", ns, "-p", `{"spec":{"type":"ExternalName","externalName":"x.example"}}`)
	if got := spec(); got != "ExternalName    " {
		t.Fatalf("after the patch to ExternalName: %q", got)
	}
	out := mustKubectl(t, "patch", "service", "s", "-n", ns, "-p", `{"spec":{"type":"ClusterIP"}}`)
	if !strings.Contains(out, `Warning: spec.externalName is ignored when spec.type is not "ExternalName"`) {
		t.Fatalf("patch back to ClusterIP:\n%s", out)
	}
	out, err := kubectl(t, "create", "service", "clusterip", "w", "--tcp=80", "-n", ns, "--dry-run=server", "-o", "name")
	if err != nil || out != "service/w\n" {
		t.Fatalf("dry-run create: %v %s", err, out)
	}
	if _, err := kubectl(t, "get", "service", "w", "-n", ns); err == nil {
		t.Fatal("a dry run stored the Service")
	}
}

// A LoadBalancer Service with the Local policy gets a health check node
// port, which may not change and goes when the policy does.
func TestServices_HealthCheckNodePortAsKube(t *testing.T) {
	ns := "svc-health"
	mustKubectl(t, "create", "namespace", ns)
	defer mustKubectl(t, "delete", "namespace", ns, "--wait=false")
	resp, body := raw(t, "POST", "/api/v1/namespaces/"+ns+"/services", srv.AdminToken, "application/json",
		`{"apiVersion":"v1","kind":"Service","metadata":{"name":"lb"},"spec":{"type":"LoadBalancer","externalTrafficPolicy":"Local","ports":[{"port":80}]}}`)
	if resp.StatusCode != 201 || !strings.Contains(body, `"healthCheckNodePort":3`) || !strings.Contains(body, `"allocateLoadBalancerNodePorts":true`) {
		t.Fatalf("create: %d %s", resp.StatusCode, body)
	}
	if out, err := kubectl(t, "patch", "service", "lb", "-n", ns, "-p", `{"spec":{"healthCheckNodePort":30999}}`); err == nil ||
		!strings.Contains(out, `The Service "lb" is invalid: spec.healthCheckNodePort: Forbidden: field is immutable`) {
		t.Fatalf("change of healthCheckNodePort: %v %s", err, out)
	}
	mustKubectl(t, "patch", "service", "lb", "-n", ns, "-p", `{"spec":{"externalTrafficPolicy":"Cluster"}}`)
	if out := mustKubectl(t, "get", "service", "lb", "-n", ns, "-o", "jsonpath={.spec.healthCheckNodePort}"); out != "" {
		t.Fatalf("healthCheckNodePort %q after the policy changed", out)
	}
}
