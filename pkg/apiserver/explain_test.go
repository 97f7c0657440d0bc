package apiserver_test

import (
	"strings"
	"testing"
)

// kubectl explain names the types and the required fields as it does
// against kube-apiserver v1.29 (lines taken from the reference): Quantity
// and IntOrString by their names, references and event fields required as
// kube's schemas require them.
func TestKubectl_ExplainTypesAndRequiredFieldsAsKube(t *testing.T) {
	for _, tc := range []struct {
		field string
		want  []string
	}{
		{"cronjob.spec.jobTemplate.spec.template.spec.containers.resources.limits", []string{"FIELD: limits <map[string]Quantity>"}},
		{"cronjob.spec.jobTemplate.spec.template.spec.containers.livenessProbe.httpGet.port", []string{"FIELD: port <IntOrString>"}},
		{"cronjob.status.active", []string{"FIELD: active <[]ObjectReference>", "apiVersion\t<string>", "uid\t<string>"}},
		{"cronjob.spec", []string{"jobTemplate\t<JobTemplateSpec> -required-", "schedule\t<string> -required-", "suspend\t<boolean>"}},
		{"cronjob.metadata.ownerReferences", []string{"apiVersion\t<string> -required-", "kind\t<string> -required-", "name\t<string> -required-", "uid\t<string> -required-", "controller\t<boolean>"}},
		{"events", []string{"involvedObject\t<ObjectReference> -required-", "metadata\t<ObjectMeta> -required-", "reason\t<string>"}},
		{"events.involvedObject", []string{"FIELD: involvedObject <ObjectReference>", "name\t<string>"}},
	} {
		t.Run(tc.field, func(t *testing.T) {
			out := mustKubectl(t, "explain", tc.field)
			lines := map[string]bool{}
			for _, l := range strings.Split(out, "\n") {
				lines[strings.TrimSpace(l)] = true
			}
			for _, w := range tc.want {
				if !lines[w] {
					t.Errorf("no line %q in:\n%s", w, out)
				}
			}
		})
	}
}
