package apiserver_test

import (
	"encoding/json"
	"strings"
	"testing"
)

// Unknown and duplicate fields of a custom object, at its root and in an
// embedded object's metadata, named in kube-apiserver v1.29's words and
// order (reference run). An apply names unknown fields as kube's field
// manager does (kube answers 500 there, SPEC.md 400 under Strict) and
// duplicate keys as kube's apply does.
func TestCustomResourceServing_StrictFieldValidationAsKube(t *testing.T) {
	ns := servedCrate(t)
	crates := "/apis/http.example.com/v1/namespaces/" + ns + "/crates"
	const (
		dupsAndUnknown = "apiVersion: http.example.com/v1\nkind: Crate\nmetadata:\n  name: v1\n  unknownMeta: x\n  name: v1\nunknownField: 1\n" +
			"spec:\n  replicas: 1\n  replicas: 2\n  template:\n    apiVersion: v1\n    kind: Sub\n    metadata:\n      unknownSubMeta: 1\n      name: sub\n"
		unknown = "apiVersion: http.example.com/v1\nkind: Crate\nmetadata:\n  name: v1\n  unknownMeta: x\nunknownField: 1\n" +
			"spec:\n  replicas: 1\n  template:\n    apiVersion: v1\n    kind: Sub\n    metadata:\n      unknownSubMeta: 1\n      name: sub\n"
		dups = "apiVersion: http.example.com/v1\nkind: Crate\nmetadata:\n  name: v1\nspec:\n  replicas: 1\n  replicas: 2\n"
	)
	for _, tc := range []struct {
		name, method, path, contentType, body string
		code                                  int
		message                               string
		warnings                              []string
	}{
		{"create yaml strict", "POST", crates + "?fieldValidation=Strict", "application/yaml", dupsAndUnknown, 400,
			`Crate in version "v1" cannot be handled as a Crate: strict decoding error: yaml: unmarshal errors:` + "\n" +
				`  line 6: key "name" already set in map` + "\n" +
				`  line 10: key "replicas" already set in map, unknown field "metadata.unknownMeta", unknown field "unknownField", unknown field "spec.template.metadata.unknownSubMeta"`, nil},
		{"create yaml warn", "POST", crates + "?fieldValidation=Warn&dryRun=All", "application/yaml", dupsAndUnknown, 201, "",
			[]string{`line 6: key "name" already set in map`, `line 10: key "replicas" already set in map`,
				`unknown field "metadata.unknownMeta"`, `unknown field "unknownField"`, `unknown field "spec.template.metadata.unknownSubMeta"`}},
		{"apply strict unknown", "PATCH", crates + "/v1?fieldValidation=Strict&fieldManager=m", "application/apply-patch+yaml", unknown, 400,
			"failed to create typed patch object (/v1; http.example.com/v1, Kind=Crate): errors:\n" +
				"  .metadata.unknownMeta: field not declared in schema\n" +
				"  .spec.template.metadata.unknownSubMeta: field not declared in schema\n" +
				"  .unknownField: field not declared in schema", nil},
		{"apply strict duplicate", "PATCH", crates + "/v1?fieldValidation=Strict&fieldManager=m", "application/apply-patch+yaml", dups, 400,
			"error strict decoding YAML: error converting YAML to JSON: yaml: unmarshal errors:\n  line 7: key \"replicas\" already set in map", nil},
		{"apply warn duplicate", "PATCH", crates + "/v1?fieldValidation=Warn&fieldManager=m&dryRun=All", "application/apply-patch+yaml", dups, 201, "",
			[]string{`line 7: key "replicas" already set in map`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, body := send(t, tc.method, tc.path, tc.body, "Content-Type", tc.contentType)
			if resp.StatusCode != tc.code {
				t.Fatalf("%d %s", resp.StatusCode, body)
			}
			if tc.message != "" {
				var st struct{ Message string }
				if err := json.Unmarshal([]byte(body), &st); err != nil {
					t.Fatal(err)
				}
				if st.Message != tc.message {
					t.Errorf("message\n%s\nwant\n%s", st.Message, tc.message)
				}
			}
			var warnings []string
			for _, w := range resp.Header.Values("Warning") {
				warnings = append(warnings, strings.TrimSuffix(strings.TrimPrefix(w, `299 - "`), `"`))
			}
			got, want := strings.Join(warnings, "\n"), strings.ReplaceAll(strings.Join(tc.warnings, "\n"), `"`, `\"`)
			if got != want {
				t.Errorf("warnings\n%s\nwant\n%s", got, want)
			}
		})
	}
}
