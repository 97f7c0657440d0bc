package apiextensions

import apiextensionsv1 "github.com/cronplane/cronplane/pkg/apis/apiextensions/v1"

// dropNullKeywords removes from a schema, and from the schemas inside it,
// the keywords whose value is null, as kube's decoding into its Go type
// does: a null default, description or maximum is no keyword at all, and
// a null property schema an empty one. Values of keywords that hold data
// (a default, an enum, an example) are kept as given.
func dropNullKeywords(s map[string]interface{}) {
	for k, v := range s {
		if v == nil && schemaKeywords[k] {
			delete(s, k)
			continue
		}
		switch k {
		case "properties", "patternProperties", "definitions":
			if m, ok := v.(map[string]interface{}); ok {
				for name, sub := range m {
					if sub == nil {
						m[name] = map[string]interface{}{}
					}
					dropNullKeywordsIn(m[name])
				}
			}
		case "items", "additionalProperties", "additionalItems", "not":
			dropNullKeywordsIn(v)
		case "allOf", "anyOf", "oneOf":
			if l, ok := v.([]interface{}); ok {
				for _, sub := range l {
					dropNullKeywordsIn(sub)
				}
			}
		}
	}
}

// dropNullKeywordsIn drops the null keywords of v, if v is a schema, or of
// each schema in v, if v is a list of them (a tuple's items).
func dropNullKeywordsIn(v interface{}) {
	switch v := v.(type) {
	case map[string]interface{}:
		dropNullKeywords(v)
	case apiextensionsv1.JSONSchemaProps:
		dropNullKeywords(v)
	case []interface{}:
		for _, sub := range v {
			dropNullKeywordsIn(sub)
		}
	}
}

// schemaKeywords are the keywords of kube's schema type.
var schemaKeywords = func() map[string]bool {
	m := make(map[string]bool, len(rootSchemaFields))
	for _, f := range rootSchemaFields {
		m[f.key] = true
	}
	return m
}()
