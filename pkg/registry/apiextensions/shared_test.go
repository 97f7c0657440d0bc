package apiextensions

import (
	"testing"

	apiextensionsv1 "github.com/cronplane/cronplane/pkg/apis/apiextensions/v1"
)

func TestSharedOf_EmptyAndNilListsAreAlikeOtherDifferencesAreNot(t *testing.T) {
	schema := func(required ...interface{}) *apiextensionsv1.CustomResourceValidation {
		return &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: apiextensionsv1.JSONSchemaProps{"type": "object", "required": required}}
	}
	for _, tc := range []struct {
		name       string
		a, b       apiextensionsv1.CustomResourceDefinitionVersion
		wantSchema bool
		wantCols   bool
	}{
		{
			name:       "nil and empty lists",
			a:          apiextensionsv1.CustomResourceDefinitionVersion{Name: "v1", Schema: schema(), AdditionalPrinterColumns: nil},
			b:          apiextensionsv1.CustomResourceDefinitionVersion{Name: "v2", Schema: schema([]interface{}{}...), AdditionalPrinterColumns: []apiextensionsv1.CustomResourceColumnDefinition{}},
			wantSchema: true, wantCols: true,
		},
		{
			name:       "different required fields",
			a:          apiextensionsv1.CustomResourceDefinitionVersion{Name: "v1", Schema: schema("spec")},
			b:          apiextensionsv1.CustomResourceDefinitionVersion{Name: "v2", Schema: schema()},
			wantSchema: false, wantCols: true,
		},
		{
			name:       "nil and set schema",
			a:          apiextensionsv1.CustomResourceDefinitionVersion{Name: "v1", Schema: schema()},
			b:          apiextensionsv1.CustomResourceDefinitionVersion{Name: "v2"},
			wantSchema: false, wantCols: true,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sh := sharedOf([]apiextensionsv1.CustomResourceDefinitionVersion{tc.a, tc.b})
			if sh.schema != tc.wantSchema || sh.columns != tc.wantCols {
				t.Errorf("sharedOf: schema %v, columns %v; want %v, %v", sh.schema, sh.columns, tc.wantSchema, tc.wantCols)
			}
		})
	}
}
