package apiextensions

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	apiextensionsv1 "github.com/cronplane/cronplane/pkg/apis/apiextensions/v1"
)

// kube validates a definition in its internal form and prints some bad
// values, whole lists of versions or a whole schema, as Go syntax of
// those internal types. The values below print the same way, so that the
// messages match; pointers print as an address (kube's vary from call to
// call, so no client can depend on them).

// fakeAddress stands for the address of a non-nil pointer.
const fakeAddress = "0xc000a1b2c0"

func goPointer(typ string, set bool) string {
	if !set {
		return "(*" + typ + ")(nil)"
	}
	return "(*" + typ + ")(" + fakeAddress + ")"
}

// internalVersions prints a definition's versions as kube's internal
// versions: the schema, subresources and columns that every version
// shares are moved out of them (hoisted).
type internalVersions struct {
	versions                               []apiextensionsv1.CustomResourceDefinitionVersion
	schemaHoisted, subHoisted, colsHoisted bool
}

func (v internalVersions) String() string {
	if v.versions == nil {
		return "[]apiextensions.CustomResourceDefinitionVersion(nil)"
	}
	parts := make([]string, len(v.versions))
	for i, ver := range v.versions {
		cols := "[]apiextensions.CustomResourceColumnDefinition(nil)"
		if ver.AdditionalPrinterColumns != nil && !v.colsHoisted {
			cs := make([]string, len(ver.AdditionalPrinterColumns))
			for j, c := range ver.AdditionalPrinterColumns {
				cs[j] = fmt.Sprintf("apiextensions.CustomResourceColumnDefinition{Name:%q, Type:%q, Format:%q, Description:%q, Priority:%d, JSONPath:%q}",
					c.Name, c.Type, c.Format, c.Description, c.Priority, c.JSONPath)
			}
			cols = "[]apiextensions.CustomResourceColumnDefinition{" + strings.Join(cs, ", ") + "}"
		}
		parts[i] = fmt.Sprintf("apiextensions.CustomResourceDefinitionVersion{Name:%q, Served:%t, Storage:%t, Deprecated:%t, DeprecationWarning:%s, Schema:%s, Subresources:%s, AdditionalPrinterColumns:%s}",
			ver.Name, ver.Served, ver.Storage, ver.Deprecated,
			goPointer("string", ver.DeprecationWarning != nil),
			goPointer("apiextensions.CustomResourceValidation", ver.Schema != nil && !v.schemaHoisted),
			goPointer("apiextensions.CustomResourceSubresources", ver.Subresources != nil && !v.subHoisted),
			cols)
	}
	return "[]apiextensions.CustomResourceDefinitionVersion{" + strings.Join(parts, ", ") + "}"
}

// internalSchema prints an openAPIV3Schema as kube's internal
// JSONSchemaProps.
type internalSchema map[string]interface{}

func (s internalSchema) String() string { return "apiextensions.JSONSchemaProps" + schemaFields(s) }

// schemaFields prints the fields of a JSONSchemaProps in kube's order.
func schemaFields(m map[string]interface{}) string {
	str := func(k string) string {
		s, _ := m[k].(string)
		return strconv.Quote(s)
	}
	boolean := func(k string) string {
		b, _ := m[k].(bool)
		return strconv.FormatBool(b)
	}
	set := func(k string) bool { return m[k] != nil }
	strs := func(k string) string {
		l, ok := m[k].([]interface{})
		if !ok {
			return "[]string(nil)"
		}
		q := make([]string, len(l))
		for i, e := range l {
			s, _ := e.(string)
			q[i] = strconv.Quote(s)
		}
		return "[]string{" + strings.Join(q, ", ") + "}"
	}
	schemas := func(k string) string {
		l, ok := m[k].([]interface{})
		if !ok {
			return "[]apiextensions.JSONSchemaProps(nil)"
		}
		q := make([]string, len(l))
		for i, e := range l {
			sub, _ := e.(map[string]interface{})
			q[i] = internalSchema(sub).String()
		}
		return "[]apiextensions.JSONSchemaProps{" + strings.Join(q, ", ") + "}"
	}
	schemaMap := func(k, typ string) string {
		sm, ok := m[k].(map[string]interface{})
		if !ok {
			return typ + "(nil)"
		}
		keys := make([]string, 0, len(sm))
		for key := range sm {
			keys = append(keys, key)
		}
		sort.Strings(keys)
		q := make([]string, len(keys))
		for i, key := range keys {
			sub, _ := sm[key].(map[string]interface{})
			q[i] = strconv.Quote(key) + ":" + internalSchema(sub).String()
		}
		return typ + "{" + strings.Join(q, ", ") + "}"
	}
	enum := "[]apiextensions.JSON(nil)"
	if l, ok := m["enum"].([]interface{}); ok {
		q := make([]string, len(l))
		for i, e := range l {
			q[i] = goValue(e)
		}
		enum = "[]apiextensions.JSON{" + strings.Join(q, ", ") + "}"
	}
	rules := "apiextensions.ValidationRules(nil)"
	if l, ok := m["x-kubernetes-validations"].([]interface{}); ok {
		q := make([]string, len(l))
		for i, e := range l {
			r, _ := e.(map[string]interface{})
			rs := func(k string) string { s, _ := r[k].(string); return strconv.Quote(s) }
			q[i] = fmt.Sprintf("apiextensions.ValidationRule{Rule:%s, Message:%s, MessageExpression:%s, Reason:%s, FieldPath:%s, OptionalOldSelf:%s}",
				rs("rule"), rs("message"), rs("messageExpression"), goPointer("apiextensions.FieldValueErrorReason", r["reason"] != nil),
				rs("fieldPath"), goPointer("bool", r["optionalOldSelf"] != nil))
		}
		rules = "apiextensions.ValidationRules{" + strings.Join(q, ", ") + "}"
	}
	_, itemsSet := m["items"]
	fields := []string{
		"ID:" + str("id"), "Schema:" + str("$schema"), "Ref:" + goPointer("string", set("$ref")),
		"Description:" + str("description"), "Type:" + str("type"), "Nullable:" + boolean("nullable"),
		"Format:" + str("format"), "Title:" + str("title"), "Default:" + goPointer("apiextensions.JSON", set("default")),
		"Maximum:" + goPointer("float64", set("maximum")), "ExclusiveMaximum:" + boolean("exclusiveMaximum"),
		"Minimum:" + goPointer("float64", set("minimum")), "ExclusiveMinimum:" + boolean("exclusiveMinimum"),
		"MaxLength:" + goPointer("int64", set("maxLength")), "MinLength:" + goPointer("int64", set("minLength")),
		"Pattern:" + str("pattern"), "MaxItems:" + goPointer("int64", set("maxItems")), "MinItems:" + goPointer("int64", set("minItems")),
		"UniqueItems:" + boolean("uniqueItems"), "MultipleOf:" + goPointer("float64", set("multipleOf")), "Enum:" + enum,
		"MaxProperties:" + goPointer("int64", set("maxProperties")), "MinProperties:" + goPointer("int64", set("minProperties")),
		"Required:" + strs("required"), "Items:" + goPointer("apiextensions.JSONSchemaPropsOrArray", itemsSet && m["items"] != nil),
		"AllOf:" + schemas("allOf"), "OneOf:" + schemas("oneOf"), "AnyOf:" + schemas("anyOf"),
		"Not:" + goPointer("apiextensions.JSONSchemaProps", set("not")),
		"Properties:" + schemaMap("properties", "map[string]apiextensions.JSONSchemaProps"),
		"AdditionalProperties:" + goPointer("apiextensions.JSONSchemaPropsOrBool", set("additionalProperties")),
		"PatternProperties:" + schemaMap("patternProperties", "map[string]apiextensions.JSONSchemaProps"),
		"Dependencies:" + dependencies(m["dependencies"]),
		"AdditionalItems:" + goPointer("apiextensions.JSONSchemaPropsOrBool", set("additionalItems")),
		"Definitions:" + schemaMap("definitions", "apiextensions.JSONSchemaDefinitions"),
		"ExternalDocs:" + goPointer("apiextensions.ExternalDocumentation", set("externalDocs")),
		"Example:" + goPointer("apiextensions.JSON", set("example")),
		"XPreserveUnknownFields:" + goPointer("bool", set("x-kubernetes-preserve-unknown-fields")),
		"XEmbeddedResource:" + boolean("x-kubernetes-embedded-resource"), "XIntOrString:" + boolean("x-kubernetes-int-or-string"),
		"XListMapKeys:" + strs("x-kubernetes-list-map-keys"), "XListType:" + goPointer("string", set("x-kubernetes-list-type")),
		"XMapType:" + goPointer("string", set("x-kubernetes-map-type")), "XValidations:" + rules,
	}
	return "{" + strings.Join(fields, ", ") + "}"
}

func dependencies(x interface{}) string {
	d, ok := x.(map[string]interface{})
	if !ok {
		return "apiextensions.JSONSchemaDependencies(nil)"
	}
	keys := make([]string, 0, len(d))
	for k := range d {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	q := make([]string, len(keys))
	for i, k := range keys {
		_, isSchema := d[k].(map[string]interface{})
		prop := "[]string(nil)"
		if l, ok := d[k].([]interface{}); ok {
			ps := make([]string, len(l))
			for j, e := range l {
				s, _ := e.(string)
				ps[j] = strconv.Quote(s)
			}
			prop = "[]string{" + strings.Join(ps, ", ") + "}"
		}
		q[i] = fmt.Sprintf("%q:apiextensions.JSONSchemaPropsOrStringArray{Schema:%s, Property:%s}", k, goPointer("apiextensions.JSONSchemaProps", isSchema), prop)
	}
	return "apiextensions.JSONSchemaDependencies{" + strings.Join(q, ", ") + "}"
}

// goValue prints a decoded JSON value held in an interface as %#v
// prints it inside a list.
func goValue(x interface{}) string {
	if x == nil {
		return "interface {}(nil)"
	}
	return fmt.Sprintf("%#v", x)
}
