package apiextensions

import (
	"fmt"
	"net/url"
	"reflect"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	apiextensionsv1 "github.com/cronplane/cronplane/pkg/apis/apiextensions/v1"
	"github.com/cronplane/cronplane/pkg/registry/clientconfig"
)

func reflectTypeOf(v interface{}) reflect.Type { return reflect.TypeOf(v) }

// KubeAPIApprovedAnnotation records the approval of an API in a group
// the Kubernetes project owns (*.k8s.io, *.kubernetes.io).
const KubeAPIApprovedAnnotation = "api-approved.kubernetes.io"

// printerColumnTypes and printerColumnFormats are what a printer column
// may declare, as kube lists them.
var (
	printerColumnTypes   = []string{"boolean", "date", "integer", "number", "string"}
	printerColumnFormats = []string{"byte", "date", "date-time", "double", "float", "int32", "int64", "password"}
)

// Validate checks a definition as kube-apiserver does, in its order (old
// is nil on create): the name, the spec (group, scope, versions and each
// version's schema, subresources and printer columns, names, conversion),
// the status, the stored versions, the approval of protected groups and
// preserveUnknownFields. The rest of the metadata is the generic store's
// to validate.
//
// kube validates a definition in its internal form, where the schema,
// subresources and printer columns that every version shares (the only
// version's, for one) are given once for the whole spec: their errors
// are then reported at spec.validation.openAPIV3Schema,
// spec.subresources and spec.additionalPrinterColumns, as kube reports
// them, and at spec.versions[i] otherwise.
func Validate(crd, old *apiextensionsv1.CustomResourceDefinition, schemaCheck SchemaCheck) field.ErrorList {
	var errs field.ErrorList
	if old == nil {
		// On update the name cannot change, and kube does not check it.
		required := crd.Spec.Names.Plural + "." + crd.Spec.Group
		md := field.NewPath("metadata")
		if crd.GenerateName != "" && crd.GenerateName != required {
			errs = append(errs, field.Invalid(md.Child("generateName"), crd.GenerateName, `must be spec.names.plural+"."+spec.group`))
		}
		if crd.Name != "" && crd.Name != required {
			errs = append(errs, field.Invalid(md.Child("name"), crd.Name, `must be spec.names.plural+"."+spec.group`))
		}
	}
	errs = append(errs, validateSpec(crd, old, schemaCheck, field.NewPath("spec"))...)
	status := field.NewPath("status")
	errs = append(errs, validateNames(&crd.Status.AcceptedNames, status.Child("acceptedNames"))...)
	errs = append(errs, validateStoredVersions(crd.Status.StoredVersions, crd.Spec.Versions, status.Child("storedVersions"))...)
	errs = append(errs, validateAPIApproval(crd, old)...)
	if crd.Spec.PreserveUnknownFields && (old == nil || !old.Spec.PreserveUnknownFields) {
		errs = append(errs, field.Invalid(field.NewPath("spec", "preserveUnknownFields"), true,
			"cannot set to true, set x-kubernetes-preserve-unknown-fields to true in spec.versions[*].schema instead"))
	}
	return errs
}

// shared says which of the versions' schema, subresources and printer
// columns all versions have alike, and are so validated once, at the
// spec's level.
type shared struct {
	schema       bool
	subresources bool
	columns      bool
}

func sharedOf(versions []apiextensionsv1.CustomResourceDefinitionVersion) shared {
	if len(versions) == 0 {
		return shared{}
	}
	sh := shared{true, true, true}
	// Semantic: empty and nil lists and maps are alike, as kube compares
	// the versions' parts.
	first := versions[0]
	for _, v := range versions[1:] {
		sh.schema = sh.schema && equality.Semantic.DeepEqual(v.Schema, first.Schema)
		sh.subresources = sh.subresources && equality.Semantic.DeepEqual(v.Subresources, first.Subresources)
		sh.columns = sh.columns && equality.Semantic.DeepEqual(v.AdditionalPrinterColumns, first.AdditionalPrinterColumns)
	}
	return sh
}

func validateSpec(crd, old *apiextensionsv1.CustomResourceDefinition, schemaCheck SchemaCheck, path *field.Path) field.ErrorList {
	spec := &crd.Spec
	var errs field.ErrorList
	switch g := spec.Group; {
	case g == "":
		errs = append(errs, field.Required(path.Child("group"), ""))
	case len(validation.IsDNS1123Subdomain(g)) > 0:
		errs = append(errs, field.Invalid(path.Child("group"), g, strings.Join(validation.IsDNS1123Subdomain(g), ",")))
	case len(strings.Split(g, ".")) < 2:
		errs = append(errs, field.Invalid(path.Child("group"), g, "should be a domain with at least one dot"))
	}
	switch spec.Scope {
	case "":
		errs = append(errs, field.Required(path.Child("scope"), ""))
	case apiextensionsv1.ClusterScoped, apiextensionsv1.NamespaceScoped:
	default:
		errs = append(errs, field.NotSupported(path.Child("scope"), spec.Scope, []string{"Cluster", "Namespaced"}))
	}

	versions := path.Child("versions")
	sh := sharedOf(spec.Versions)
	var top apiextensionsv1.CustomResourceDefinitionVersion
	if len(spec.Versions) > 0 {
		top = spec.Versions[0]
	}
	if !sh.schema || top.Schema == nil || top.Schema.OpenAPIV3Schema == nil {
		// An existing definition some versions of which have no schema
		// (kube once allowed it) keeps that for its versions not served.
		requireAll := old == nil || allVersionsHaveSchema(old.Spec.Versions)
		for i, v := range spec.Versions {
			if v.Schema != nil && v.Schema.OpenAPIV3Schema != nil && !sh.schema {
				continue
			}
			switch {
			case requireAll:
				errs = append(errs, field.Required(versions.Index(i).Child("schema", "openAPIV3Schema"), "schemas are required"))
			case v.Served && !spec.PreserveUnknownFields:
				errs = append(errs, field.Required(versions.Index(i).Child("schema", "openAPIV3Schema"), "because otherwise all fields are pruned"))
			}
		}
	}
	if spec.PreserveUnknownFields && specHasDefaults(spec) {
		errs = append(errs, field.Invalid(path.Child("preserveUnknownFields"), true, "must be false in order to use defaults in the schema"))
	}

	seen := map[string]bool{}
	unique, storage := true, 0
	for i, v := range spec.Versions {
		vp := versions.Index(i)
		if v.Storage {
			storage++
		}
		if seen[v.Name] {
			unique = false
		}
		seen[v.Name] = true
		if msgs := validation.IsDNS1035Label(v.Name); len(msgs) > 0 {
			errs = append(errs, field.Invalid(vp.Child("name"), v.Name, strings.Join(msgs, ",")))
		}
		for _, msg := range deprecationWarningErrors(v.Deprecated, v.DeprecationWarning) {
			errs = append(errs, field.Invalid(vp.Child("deprecationWarning"), v.DeprecationWarning, msg))
		}
		if !sh.schema {
			subresources := top.Subresources
			if !sh.subresources {
				subresources = v.Subresources
			}
			errs = append(errs, validateSchema(v.Schema, oldSchemas(old), hasStatus(subresources), schemaCheck, vp.Child("schema"))...)
		}
		if !sh.subresources {
			errs = append(errs, validateSubresources(v.Subresources, vp.Child("subresources"))...)
		}
		if !sh.columns {
			for j := range v.AdditionalPrinterColumns {
				errs = append(errs, validateColumn(&v.AdditionalPrinterColumns[j], vp.Child("additionalPrinterColumns").Index(j))...)
			}
		}
	}
	internal := internalVersions{versions: spec.Versions, schemaHoisted: sh.schema, subHoisted: sh.subresources, colsHoisted: sh.columns}
	if !unique {
		errs = append(errs, field.Invalid(versions, internal, "must contain unique version names"))
	}
	if storage != 1 {
		errs = append(errs, field.Invalid(versions, internal, "must have exactly one version marked as storage version"))
	}
	// kube's internal form names the first version in spec.version too.
	if len(spec.Versions) > 0 && spec.Versions[0].Name != "" {
		if msgs := validation.IsDNS1035Label(spec.Versions[0].Name); len(msgs) > 0 {
			errs = append(errs, field.Invalid(path.Child("version"), spec.Versions[0].Name, strings.Join(msgs, ",")))
		}
	}

	names := path.Child("names")
	for _, n := range []struct{ value, name string }{
		{spec.Names.Plural, "plural"}, {spec.Names.Singular, "singular"},
		{spec.Names.Kind, "kind"}, {spec.Names.ListKind, "listKind"},
	} {
		if n.value == "" {
			errs = append(errs, field.Required(names.Child(n.name), ""))
		}
	}
	errs = append(errs, validateNames(&spec.Names, names)...)

	if sh.schema {
		anyStatus := false
		for _, v := range spec.Versions {
			anyStatus = anyStatus || hasStatus(v.Subresources)
		}
		errs = append(errs, validateSchema(top.Schema, oldSchemas(old), anyStatus, schemaCheck, path.Child("validation"))...)
	}
	if sh.subresources {
		errs = append(errs, validateSubresources(top.Subresources, path.Child("subresources"))...)
	}
	if sh.columns {
		for j := range top.AdditionalPrinterColumns {
			errs = append(errs, validateColumn(&top.AdditionalPrinterColumns[j], path.Child("additionalPrinterColumns").Index(j))...)
		}
	}

	if c := spec.Conversion; c != nil && c.Strategy != apiextensionsv1.NoneConverter && spec.PreserveUnknownFields {
		errs = append(errs, field.Invalid(path.Child("conversion", "strategy"), c.Strategy, "must be None if spec.preserveUnknownFields is true"))
	}
	requireKnownReview := old == nil || old.Spec.Conversion == nil || old.Spec.Conversion.Webhook == nil ||
		hasKnownReviewVersionOrNone(old.Spec.Conversion.Webhook.ConversionReviewVersions)
	errs = append(errs, validateConversion(spec.Conversion, requireKnownReview, path.Child("conversion"))...)

	if old != nil {
		if old.Status.IsTrue(apiextensionsv1.Established) {
			// These give the storage its shape once objects are served.
			if spec.Scope != old.Spec.Scope {
				errs = append(errs, field.Invalid(path.Child("scope"), spec.Scope, "field is immutable"))
			}
			if spec.Names.Kind != old.Spec.Names.Kind {
				errs = append(errs, field.Invalid(names.Child("kind"), spec.Names.Kind, "field is immutable"))
			}
		}
		// These make the resource's name, which never changes.
		if spec.Group != old.Spec.Group {
			errs = append(errs, field.Invalid(path.Child("group"), spec.Group, "field is immutable"))
		}
		if spec.Names.Plural != old.Spec.Names.Plural {
			errs = append(errs, field.Invalid(names.Child("plural"), spec.Names.Plural, "field is immutable"))
		}
	}
	return errs
}

func hasStatus(s *apiextensionsv1.CustomResourceSubresources) bool {
	return s != nil && s.Status != nil
}

func allVersionsHaveSchema(versions []apiextensionsv1.CustomResourceDefinitionVersion) bool {
	for _, v := range versions {
		if v.Schema == nil || v.Schema.OpenAPIV3Schema == nil {
			return false
		}
	}
	return true
}

// deprecationWarningErrors checks a version's deprecationWarning: only
// for a deprecated version, and a short printable line.
func deprecationWarningErrors(deprecated bool, warning *string) []string {
	if !deprecated && warning != nil {
		return []string{"can only be set for deprecated versions"}
	}
	if warning == nil {
		return nil
	}
	var msgs []string
	if len(*warning) > 256 {
		msgs = append(msgs, "must be <= 256 characters long")
	}
	if len(*warning) == 0 {
		msgs = append(msgs, "must not be an empty string")
	}
	for i, r := range *warning {
		if !unicode.IsPrint(r) {
			msgs = append(msgs, fmt.Sprintf("must only contain printable UTF-8 characters; non-printable character found at index %d", i))
			break
		}
		if unicode.IsControl(r) {
			msgs = append(msgs, fmt.Sprintf("must only contain printable UTF-8 characters; control character found at index %d", i))
			break
		}
	}
	if !utf8.ValidString(*warning) {
		msgs = append(msgs, "must only contain printable UTF-8 characters")
	}
	return msgs
}

// validateSchema checks a version's (or the shared) schema at path
// (spec.versions[i].schema or spec.validation).
// oldSchemas are the schemas of every version of old (none when nil).
func oldSchemas(old *apiextensionsv1.CustomResourceDefinition) []map[string]interface{} {
	if old == nil {
		return nil
	}
	var out []map[string]interface{}
	for _, v := range old.Spec.Versions {
		if v.Schema != nil && v.Schema.OpenAPIV3Schema != nil {
			out = append(out, v.Schema.OpenAPIV3Schema)
		}
	}
	return out
}

func validateSchema(v *apiextensionsv1.CustomResourceValidation, old []map[string]interface{}, statusEnabled bool, schemaCheck SchemaCheck, path *field.Path) field.ErrorList {
	if v == nil || v.OpenAPIV3Schema == nil {
		return nil
	}
	var errs field.ErrorList
	if statusEnabled {
		errs = append(errs, validateStatusRoot(v.OpenAPIV3Schema, path.Child("openAPIV3Schema"))...)
	}
	if schemaCheck != nil {
		errs = append(errs, schemaCheck(v.OpenAPIV3Schema, old, statusEnabled, path.Child("openAPIV3Schema"))...)
	}
	return errs
}

// rootSchemaFields are the keywords of a schema in the order of kube's
// Go type, with the kind of Go field that holds each: what is unset
// differs ("", false, nil).
var rootSchemaFields = []struct {
	key, name string
	kind      byte // 's' string, 'b' bool, 'p' pointer, slice or map
}{
	{"id", "ID", 's'}, {"$schema", "Schema", 's'}, {"$ref", "Ref", 'p'}, {"description", "Description", 's'},
	{"type", "Type", 's'}, {"nullable", "Nullable", 'b'}, {"format", "Format", 's'}, {"title", "Title", 's'},
	{"default", "Default", 'p'}, {"maximum", "Maximum", 'p'}, {"exclusiveMaximum", "ExclusiveMaximum", 'b'},
	{"minimum", "Minimum", 'p'}, {"exclusiveMinimum", "ExclusiveMinimum", 'b'}, {"maxLength", "MaxLength", 'p'},
	{"minLength", "MinLength", 'p'}, {"pattern", "Pattern", 's'}, {"maxItems", "MaxItems", 'p'},
	{"minItems", "MinItems", 'p'}, {"uniqueItems", "UniqueItems", 'b'}, {"multipleOf", "MultipleOf", 'p'},
	{"enum", "Enum", 'p'}, {"maxProperties", "MaxProperties", 'p'}, {"minProperties", "MinProperties", 'p'},
	{"required", "Required", 'p'}, {"items", "Items", 'p'}, {"allOf", "AllOf", 'p'}, {"oneOf", "OneOf", 'p'},
	{"anyOf", "AnyOf", 'p'}, {"not", "Not", 'p'}, {"properties", "Properties", 'p'},
	{"additionalProperties", "AdditionalProperties", 'p'}, {"patternProperties", "PatternProperties", 'p'},
	{"dependencies", "Dependencies", 'p'}, {"additionalItems", "AdditionalItems", 'p'},
	{"definitions", "Definitions", 'p'}, {"externalDocs", "ExternalDocs", 'p'}, {"example", "Example", 'p'},
	{"x-kubernetes-preserve-unknown-fields", "XPreserveUnknownFields", 'p'},
	{"x-kubernetes-embedded-resource", "XEmbeddedResource", 'b'}, {"x-kubernetes-int-or-string", "XIntOrString", 'b'},
	{"x-kubernetes-list-map-keys", "XListMapKeys", 'p'}, {"x-kubernetes-list-type", "XListType", 'p'},
	{"x-kubernetes-map-type", "XMapType", 'p'}, {"x-kubernetes-validations", "XValidations", 'p'},
}

// allowedAtStatusRoot are the fields a schema's root may set when the
// status subresource is on: with them, status's schema is
// properties[status] alone.
var allowedAtStatusRoot = []string{"Description", "Type", "Format", "Title", "Maximum", "ExclusiveMaximum", "Minimum",
	"ExclusiveMinimum", "MaxLength", "MinLength", "Pattern", "MaxItems", "MinItems", "UniqueItems", "MultipleOf",
	"Required", "Items", "Properties", "ExternalDocs", "Example", "XPreserveUnknownFields", "XValidations"}

// validateStatusRoot reports the first field of the root schema, in
// kube's order, that the status subresource does not allow.
func validateStatusRoot(schema map[string]interface{}, path *field.Path) field.ErrorList {
	for _, f := range rootSchemaFields {
		x := schema[f.key]
		switch f.kind {
		case 's':
			if s, _ := x.(string); s == "" {
				continue
			}
		case 'b':
			if b, _ := x.(bool); !b {
				continue
			}
		default:
			if x == nil {
				continue
			}
		}
		if f.name == "Type" {
			if t, _ := x.(string); t != "object" {
				return field.ErrorList{field.Invalid(path.Child("type"), t, `only "object" is allowed as the type at the root of the schema if the status subresource is enabled`)}
			}
			continue
		}
		if !slices.Contains(allowedAtStatusRoot, f.name) {
			return field.ErrorList{field.Invalid(path, internalSchema(schema),
				fmt.Sprintf("only %v fields are allowed at the root of the schema if the status subresource is enabled", allowedAtStatusRoot))}
		}
	}
	return nil
}

// specHasDefaults reports whether a version's schema sets a default
// anywhere.
func specHasDefaults(spec *apiextensionsv1.CustomResourceDefinitionSpec) bool {
	for _, v := range spec.Versions {
		if v.Schema != nil && schemaHasDefault(v.Schema.OpenAPIV3Schema) {
			return true
		}
	}
	return false
}

func schemaHasDefault(s map[string]interface{}) bool {
	if s == nil {
		return false
	}
	if s["default"] != nil {
		return true
	}
	for _, k := range []string{"items", "not", "additionalProperties", "additionalItems"} {
		if m, ok := s[k].(map[string]interface{}); ok && schemaHasDefault(m) {
			return true
		}
	}
	for _, k := range []string{"items", "allOf", "anyOf", "oneOf"} {
		if l, ok := s[k].([]interface{}); ok {
			for _, e := range l {
				if m, ok := e.(map[string]interface{}); ok && schemaHasDefault(m) {
					return true
				}
			}
		}
	}
	for _, k := range []string{"properties", "patternProperties", "definitions", "dependencies"} {
		if m, ok := s[k].(map[string]interface{}); ok {
			for _, e := range m {
				if sub, ok := e.(map[string]interface{}); ok && schemaHasDefault(sub) {
					return true
				}
			}
		}
	}
	return false
}

func validateNames(names *apiextensionsv1.CustomResourceDefinitionNames, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	label := func(value, child string, lower bool, prefix string) {
		v := value
		if lower {
			v = strings.ToLower(v)
		}
		if msgs := validation.IsDNS1035Label(v); value != "" && len(msgs) > 0 {
			errs = append(errs, field.Invalid(path.Child(child), value, prefix+strings.Join(msgs, ",")))
		}
	}
	label(names.Plural, "plural", false, "")
	label(names.Singular, "singular", false, "")
	label(names.Kind, "kind", true, "may have mixed case, but should otherwise match: ")
	label(names.ListKind, "listKind", true, "may have mixed case, but should otherwise match: ")
	for i, s := range names.ShortNames {
		if msgs := validation.IsDNS1035Label(s); len(msgs) > 0 {
			errs = append(errs, field.Invalid(path.Child("shortNames").Index(i), s, strings.Join(msgs, ",")))
		}
	}
	if names.Kind != "" && names.Kind == names.ListKind {
		errs = append(errs, field.Invalid(path.Child("listKind"), names.ListKind, "kind and listKind may not be the same"))
	}
	for i, c := range names.Categories {
		if msgs := validation.IsDNS1035Label(c); len(msgs) > 0 {
			errs = append(errs, field.Invalid(path.Child("categories").Index(i), c, strings.Join(msgs, ",")))
		}
	}
	return errs
}

// validateStoredVersions checks that the stored versions name the
// storage version and only declared versions.
func validateStoredVersions(stored []string, versions []apiextensionsv1.CustomResourceDefinitionVersion, path *field.Path) field.ErrorList {
	if len(stored) == 0 {
		return field.ErrorList{field.Invalid(path, stored, "must have at least one stored version")}
	}
	var errs field.ErrorList
	declared := map[string]bool{}
	for _, v := range versions {
		declared[v.Name] = true
		if v.Storage && !slices.Contains(stored, v.Name) {
			errs = append(errs, field.Invalid(path, stored, "must have the storage version "+v.Name))
		}
	}
	// kube names the last position of a version listed twice.
	last := map[string]int{}
	for i, v := range stored {
		last[v] = i
	}
	for i, v := range stored {
		if !declared[v] && last[v] == i {
			errs = append(errs, field.Invalid(path.Index(i), v, "must appear in spec.versions"))
		}
	}
	return errs
}

// acceptedReviewVersions are the ConversionReview versions a webhook may
// be asked in.
var acceptedReviewVersions = []string{"v1", "v1beta1"}

func hasKnownReviewVersionOrNone(versions []string) bool {
	if len(versions) == 0 {
		return true
	}
	for _, v := range versions {
		if slices.Contains(acceptedReviewVersions, v) {
			return true
		}
	}
	return false
}

func validateConversion(c *apiextensionsv1.CustomResourceConversion, requireKnownReview bool, path *field.Path) field.ErrorList {
	if c == nil {
		return nil
	}
	var errs field.ErrorList
	switch c.Strategy {
	case "":
		errs = append(errs, field.Required(path.Child("strategy"), ""))
	case apiextensionsv1.NoneConverter, apiextensionsv1.WebhookConverter:
	default:
		errs = append(errs, field.NotSupported(path.Child("strategy"), c.Strategy, []string{"None", "Webhook"}))
	}
	var cc *apiextensionsv1.WebhookClientConfig
	var reviewVersions []string
	if c.Webhook != nil {
		cc, reviewVersions = c.Webhook.ClientConfig, c.Webhook.ConversionReviewVersions
	}
	if c.Strategy != apiextensionsv1.WebhookConverter {
		if cc != nil {
			errs = append(errs, field.Forbidden(path.Child("webhookClientConfig"), "should not be set when strategy is not set to Webhook"))
		}
		if len(reviewVersions) > 0 {
			errs = append(errs, field.Forbidden(path.Child("conversionReviewVersions"), "should not be set when strategy is not set to Webhook"))
		}
		return errs
	}
	ccPath := path.Child("webhookClientConfig")
	switch {
	case cc == nil:
		errs = append(errs, field.Required(ccPath, "required when strategy is set to Webhook"))
	case (cc.URL == nil) == (cc.Service == nil):
		errs = append(errs, field.Required(ccPath, "exactly one of url or service is required"))
	case cc.URL != nil:
		errs = append(errs, clientconfig.ValidateURL(ccPath.Child("url"), *cc.URL)...)
	default:
		port := int32(443)
		if cc.Service.Port != nil {
			port = *cc.Service.Port
		}
		// kube hands the service's name over as its namespace and the
		// other way round: a missing name is a "service namespace is
		// required".
		errs = append(errs, clientconfig.ValidateService(ccPath.Child("service"), cc.Service.Name, cc.Service.Namespace, cc.Service.Path, port)...)
	}
	rvPath := path.Child("conversionReviewVersions")
	if len(reviewVersions) == 0 {
		return append(errs, field.Required(rvPath, ""))
	}
	seen, known := map[string]bool{}, false
	for i, v := range reviewVersions {
		if seen[v] {
			errs = append(errs, field.Invalid(rvPath.Index(i), v, "duplicate version"))
			continue
		}
		seen[v] = true
		for _, msg := range validation.IsDNS1035Label(v) {
			errs = append(errs, field.Invalid(rvPath.Index(i), v, msg))
		}
		known = known || slices.Contains(acceptedReviewVersions, v)
	}
	if requireKnownReview && !known {
		errs = append(errs, field.Invalid(rvPath, reviewVersions, "must include at least one of "+strings.Join(acceptedReviewVersions, ", ")))
	}
	return errs
}

// validateSubresources checks the scale subresource's paths: each a path
// starting with a dot, specReplicasPath under .spec, statusReplicasPath
// under .status, labelSelectorPath under either. Beyond that kube takes
// any JSON path (.spec.replicas[0], .spec.a..b).
func validateSubresources(s *apiextensionsv1.CustomResourceSubresources, path *field.Path) field.ErrorList {
	if s == nil || s.Scale == nil {
		return nil
	}
	scale := path.Child("scale")
	var errs field.ErrorList
	check := func(value, child string, under ...string) {
		p := scale.Child(child)
		if pathErrs := validateSimpleJSONPath(value, p); len(pathErrs) > 0 {
			errs = append(errs, pathErrs...)
			return
		}
		for _, u := range under {
			if strings.HasPrefix(value, "."+u+".") {
				return
			}
		}
		if len(under) == 1 {
			errs = append(errs, field.Invalid(p, value, "should be a json path under ."+under[0]))
		} else {
			errs = append(errs, field.Invalid(p, value, "should be a json path under either .spec or .status"))
		}
	}
	if s.Scale.SpecReplicasPath == "" {
		errs = append(errs, field.Required(scale.Child("specReplicasPath"), ""))
	} else {
		check(s.Scale.SpecReplicasPath, "specReplicasPath", "spec")
	}
	if s.Scale.StatusReplicasPath == "" {
		errs = append(errs, field.Required(scale.Child("statusReplicasPath"), ""))
	} else {
		check(s.Scale.StatusReplicasPath, "statusReplicasPath", "status")
	}
	if s.Scale.LabelSelectorPath != nil && *s.Scale.LabelSelectorPath != "" {
		check(*s.Scale.LabelSelectorPath, "labelSelectorPath", "spec", "status")
	}
	return errs
}

// validateSimpleJSONPath checks that p is a JSON path starting with a dot.
func validateSimpleJSONPath(p string, path *field.Path) field.ErrorList {
	switch {
	case p == "":
		return field.ErrorList{field.Invalid(path, p, "must not be empty")}
	case p[0] != '.':
		return field.ErrorList{field.Invalid(path, p, "must be a simple json path starting with .")}
	}
	return nil
}

func validateColumn(c *apiextensionsv1.CustomResourceColumnDefinition, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if c.Name == "" {
		errs = append(errs, field.Required(path.Child("name"), ""))
	}
	types := strings.Join(printerColumnTypes, ",")
	if c.Type == "" {
		errs = append(errs, field.Required(path.Child("type"), fmt.Sprintf("must be one of %s", types)))
	} else if !slices.Contains(printerColumnTypes, c.Type) {
		errs = append(errs, field.Invalid(path.Child("type"), c.Type, fmt.Sprintf("must be one of %s", types)))
	}
	if c.Format != "" && !slices.Contains(printerColumnFormats, c.Format) {
		errs = append(errs, field.Invalid(path.Child("format"), c.Format, fmt.Sprintf("must be one of %s", strings.Join(printerColumnFormats, ","))))
	}
	if c.JSONPath == "" {
		errs = append(errs, field.Required(path.Child("JSONPath"), ""))
	} else {
		errs = append(errs, validateSimpleJSONPath(c.JSONPath, path.Child("JSONPath"))...)
	}
	return errs
}

// APIApproval says whether a definition in a protected group
// (IsProtectedGroup) is approved: approved, bypassed ("unapproved..."),
// invalid or missing, and kube's words for it.
type APIApproval int

// The approval states.
const (
	APIApproved APIApproval = iota
	APIApprovalBypassed
	APIApprovalInvalid
	APIApprovalMissing
)

// IsProtectedGroup reports whether group belongs to the Kubernetes
// project: k8s.io, kubernetes.io and their subdomains.
func IsProtectedGroup(group string) bool {
	return group == "k8s.io" || strings.HasSuffix(group, ".k8s.io") ||
		group == "kubernetes.io" || strings.HasSuffix(group, ".kubernetes.io")
}

// APIApprovalState reads the approval annotation among annotations.
func APIApprovalState(annotations map[string]string) (APIApproval, string) {
	a := annotations[KubeAPIApprovedAnnotation]
	u, err := url.ParseRequestURI(a)
	switch {
	case a == "":
		return APIApprovalMissing, fmt.Sprintf("protected groups must have approval annotation %q, see https://github.com/kubernetes/enhancements/pull/1111", KubeAPIApprovedAnnotation)
	case strings.HasPrefix(a, "unapproved"):
		return APIApprovalBypassed, fmt.Sprintf("not approved: %q", a)
	case err == nil && u.Host != "" && u.Scheme != "":
		return APIApproved, fmt.Sprintf("approved in %v", a)
	}
	return APIApprovalInvalid, fmt.Sprintf("protected groups must have approval annotation %q with either a URL or a reason starting with \"unapproved\", see https://github.com/kubernetes/enhancements/pull/1111", KubeAPIApprovedAnnotation)
}

// validateAPIApproval requires the approval annotation of a definition in
// a protected group; an update that keeps the approval state is let
// through, so that controllers may update definitions they did not
// approve.
func validateAPIApproval(crd, old *apiextensionsv1.CustomResourceDefinition) field.ErrorList {
	if !IsProtectedGroup(crd.Spec.Group) {
		return nil
	}
	state, reason := APIApprovalState(crd.Annotations)
	if old != nil {
		if oldState, _ := APIApprovalState(old.Annotations); oldState == state {
			return nil
		}
	}
	path := field.NewPath("metadata", "annotations").Key(KubeAPIApprovedAnnotation)
	switch state {
	case APIApprovalMissing:
		return field.ErrorList{field.Required(path, reason)}
	case APIApprovalInvalid:
		return field.ErrorList{field.Invalid(path, crd.Annotations[KubeAPIApprovedAnnotation], reason)}
	}
	return nil
}
