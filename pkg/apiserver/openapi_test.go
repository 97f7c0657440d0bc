package apiserver_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	openapi_v2 "github.com/google/gnostic-models/openapiv2"
	openapi_v3 "github.com/google/gnostic-models/openapiv3"
	"google.golang.org/protobuf/proto"
)

func TestOpenAPI_V3IndexAndGroupVersionDocument(t *testing.T) {
	_, body := get(t, "/openapi/v3", nil)
	var index struct {
		Paths map[string]struct {
			ServerRelativeURL string `json:"serverRelativeURL"`
		} `json:"paths"`
	}
	if err := json.Unmarshal(body, &index); err != nil {
		t.Fatal(err)
	}
	batch, ok := index.Paths["apis/batch/v1"]
	if !ok || !strings.Contains(batch.ServerRelativeURL, "?hash=") {
		t.Fatalf("index %s", body)
	}
	_, body = get(t, batch.ServerRelativeURL, nil)
	var doc struct {
		Paths      map[string]map[string]json.RawMessage `json:"paths"`
		Components struct {
			Schemas map[string]map[string]interface{} `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(body, &doc); err != nil {
		t.Fatal(err)
	}
	cj := doc.Components.Schemas["io.k8s.api.batch.v1.CronJob"]
	gvks, _ := cj["x-kubernetes-group-version-kind"].([]interface{})
	if len(gvks) != 1 || gvks[0].(map[string]interface{})["kind"] != "CronJob" {
		t.Fatalf("CronJob schema: %v", cj)
	}
	pod := doc.Components.Schemas["io.k8s.api.core.v1.PodSpec"]
	containers := pod["properties"].(map[string]interface{})["containers"].(map[string]interface{})
	// As kube's: the patch strategy from the tags, a list type only where
	// the API declares one.
	if _, ok := containers["x-kubernetes-list-type"]; ok || containers["x-kubernetes-patch-merge-key"] != "name" || containers["x-kubernetes-patch-strategy"] != "merge" {
		t.Fatalf("containers: %v", containers)
	}
	owner := doc.Components.Schemas["io.k8s.apimachinery.pkg.apis.meta.v1.OwnerReference"]
	if owner["x-kubernetes-map-type"] != "atomic" || fmt.Sprint(owner["required"]) != "[apiVersion kind name uid]" {
		t.Fatalf("OwnerReference: map type %v, required %v", owner["x-kubernetes-map-type"], owner["required"])
	}
	if q := doc.Components.Schemas["io.k8s.apimachinery.pkg.api.resource.Quantity"]; q["type"] != nil || len(q["oneOf"].([]interface{})) != 2 {
		t.Fatalf("Quantity: %v", q)
	}
	port := doc.Components.Schemas["io.k8s.api.core.v1.ContainerPort"]["properties"].(map[string]interface{})["protocol"].(map[string]interface{})
	if fmt.Sprint(port["enum"]) != "[SCTP TCP UDP]" || port["default"] != "TCP" {
		t.Fatalf("ContainerPort.protocol: %v", port)
	}
	patch := string(doc.Paths["/apis/batch/v1/namespaces/{namespace}/cronjobs/{name}"]["patch"])
	for _, p := range []string{`"fieldValidation"`, `"dryRun"`, `"fieldManager"`, `"force"`, `"kind":"CronJob"`} {
		if !strings.Contains(patch, p) {
			t.Errorf("PATCH operation lacks %s", p)
		}
	}
}

func TestOpenAPI_V2JSONAndProtobuf(t *testing.T) {
	_, body := get(t, "/openapi/v2", nil)
	var doc map[string]interface{}
	if err := json.Unmarshal(body, &doc); err != nil || doc["swagger"] != "2.0" {
		t.Fatalf("v2 JSON: %v", err)
	}
	resp, body := get(t, "/openapi/v2", map[string]string{"Accept": "application/com.github.proto-openapi.spec.v2@v1.0+protobuf"})
	// kube answers with a spelling client-go can parse.
	if resp.Header.Get("Content-Type") != "application/com.github.proto-openapi.spec.v2.v1.0+protobuf" {
		t.Fatalf("content type %q", resp.Header.Get("Content-Type"))
	}
	var pb openapi_v2.Document
	if err := proto.Unmarshal(body, &pb); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, d := range pb.GetDefinitions().GetAdditionalProperties() {
		if d.GetName() == "io.k8s.api.batch.v1.CronJob" {
			found = true
		}
	}
	if !found || pb.GetSwagger() != "2.0" {
		t.Fatal("protobuf v2 document lacks the CronJob definition")
	}
}

func TestOpenAPI_NegotiatesAsKubeDoes(t *testing.T) {
	const (
		v2pb = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf"
		v3pb = "application/com.github.proto-openapi.spec.v3.v1.0+protobuf"
	)
	for _, tc := range []struct {
		path, accept string
		code         int
		contentType  string
	}{
		{"/openapi/v2", "", 200, "application/json"},
		{"/openapi/v2", "*/*", 200, "application/json"},
		{"/openapi/v2", "application/*", 200, "application/json"},
		{"/openapi/v2", v2pb, 200, v2pb},
		{"/openapi/v2", "application/json;q=0.5, application/com.github.proto-openapi.spec.v2@v1.0+protobuf", 200, v2pb},
		{"/openapi/v2", "foo/bar", 406, ""},
		{"/openapi/v2", "application/com.github.proto-openapi.spec.v3@v1.0+protobuf", 406, ""},
		{"/openapi/v3/apis/batch/v1", "application/com.github.proto-openapi.spec.v3@v1.0+protobuf", 200, v3pb},
		{"/openapi/v3/apis/batch/v1", v3pb, 200, v3pb},
		{"/openapi/v3/apis/batch/v1", "application/json", 200, "application/json"},
		{"/openapi/v3/apis/batch/v1", v2pb, 406, ""},
	} {
		resp, body := get(t, tc.path, map[string]string{"Accept": tc.accept})
		if resp.StatusCode != tc.code || (tc.code == 200 && resp.Header.Get("Content-Type") != tc.contentType) {
			t.Errorf("%s [%s]: %d %q", tc.path, tc.accept, resp.StatusCode, resp.Header.Get("Content-Type"))
			continue
		}
		if tc.code == 406 && len(body) != 0 {
			t.Errorf("%s [%s]: 406 with a body %q", tc.path, tc.accept, body)
		}
		if tc.contentType == v3pb {
			var doc openapi_v3.Document
			if err := proto.Unmarshal(body, &doc); err != nil || doc.GetComponents().GetSchemas() == nil || !strings.HasPrefix(doc.GetOpenapi(), "3.") {
				t.Errorf("v3 protobuf: %v", err)
			}
		}
	}
}

// TestOpenAPI_CustomResourceDefinitionStatusAsKube: the definition's
// status carries kube's markers: conditions a map list keyed by type (as
// server-side apply keys them), and no field required.
func TestOpenAPI_CustomResourceDefinitionStatusAsKube(t *testing.T) {
	_, body := get(t, "/openapi/v3/apis/apiextensions.k8s.io/v1", nil)
	var doc struct {
		Components struct {
			Schemas map[string]struct {
				Required   []string                          `json:"required"`
				Properties map[string]map[string]interface{} `json:"properties"`
			} `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(body, &doc); err != nil {
		t.Fatal(err)
	}
	for name, s := range doc.Components.Schemas {
		if !strings.HasSuffix(name, ".CustomResourceDefinitionStatus") {
			continue
		}
		conditions := s.Properties["conditions"]
		if conditions["x-kubernetes-list-type"] != "map" || fmt.Sprint(conditions["x-kubernetes-list-map-keys"]) != "[type]" {
			t.Errorf("conditions: %v", conditions)
		}
		if len(s.Required) != 0 {
			t.Errorf("required %v, kube requires none", s.Required)
		}
		return
	}
	t.Fatal("no CustomResourceDefinitionStatus schema")
}
