package schema

import (
	"fmt"
	"regexp"
	"slices"
	"sort"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// FromOpenAPIV3 parses v, a CustomResourceDefinition version's decoded
// openAPIV3Schema, into a Schema and checks it as kube checks a CRD's
// schema, but for the defaults (ValidateDefaults) and the CEL rules:
// structural (a type at every level, junctors that only add value
// validations, the extensions used consistently) and the keywords and
// markers allowed, with errors in kube's words at paths below fldPath and
// in kube's order (see CheckCRDSchema). A value of the wrong JSON type
// ("nullable": "yes"), which kube refuses when it decodes the request,
// gets only those errors. The returned Schema is usable only when the
// list is empty.
func FromOpenAPIV3(v map[string]interface{}, fldPath *field.Path) (*Schema, field.ErrorList) {
	c := checkSchema(v, fldPath)
	if len(c.decodeErrs) > 0 {
		return c.root.s, c.decodeErrs
	}
	errs := append(c.rootErrs, c.structuralErrs...)
	return c.root.s, c.finish(errs)
}

// StructuralViolations reports what keeps v, a stored definition's
// openAPIV3Schema, from being structural, as kube's NonStructuralSchema
// condition reports it: the violations of the structural rules, sorted,
// at paths below fldPath; or, when v cannot be read as a structural
// schema at all, why (unreadable), and no violations.
func StructuralViolations(v map[string]interface{}, fldPath *field.Path) (unreadable string, errs field.ErrorList) {
	c := checkSchema(v, fldPath)
	if len(c.decodeErrs) > 0 {
		return c.decodeErrs.ToAggregate().Error(), nil
	}
	if c.initErr != "" {
		return c.initErr, nil
	}
	return "", c.structuralErrs
}

// ParseOpenAPIV3 parses v, a stored definition's openAPIV3Schema, for
// serving it, with no checks but of the JSON types: kube serves the
// definitions it stored under rules older releases had (a set of
// granular objects, say) and keeps them valid on update.
func ParseOpenAPIV3(v map[string]interface{}, fldPath *field.Path) (*Schema, field.ErrorList) {
	p := &openAPIParser{}
	n := p.node(v, fldPath)
	return n.s, p.errs
}

// CheckCRDSchema is FromOpenAPIV3 with the defaults checked too, in the
// order kube-apiserver reports a version's schema errors: a nullable root,
// the structural violations (sorted, as kube sorts them), the defaults
// when the schema is structural, then the keyword and marker errors met
// walking the schema. The CEL rules are left to the caller, but for
// their evaluation on the defaults, by rules (nil: none).
func CheckCRDSchema(v map[string]interface{}, fldPath *field.Path, rules DefaultRules) (*Schema, field.ErrorList) {
	c := checkSchema(v, fldPath)
	if len(c.decodeErrs) > 0 {
		return c.root.s, c.decodeErrs
	}
	errs := append(c.rootErrs, c.structuralErrs...)
	if c.initErr == "" && len(c.structuralErrs) == 0 {
		errs = append(errs, ValidateDefaults(&Structural{Root: c.root.s}, fldPath, rules)...)
	}
	return c.root.s, c.finish(errs)
}

// schemaCheck holds what checkSchema found, by kind of error.
type schemaCheck struct {
	root *node
	path *field.Path
	// decodeErrs are values of the wrong JSON type.
	decodeErrs field.ErrorList
	// rootErrs come first: a nullable root.
	rootErrs field.ErrorList
	// structuralErrs are the violations of the structural rules, sorted;
	// they are not looked for when initErr is set.
	structuralErrs field.ErrorList
	// keywordErrs are the errors of the keywords and markers, in walking
	// order.
	keywordErrs field.ErrorList
	// initErr names a keyword that keeps the schema from being read as
	// structural at all; kube reports it only when nothing else is wrong.
	initErr string
}

func (c *schemaCheck) finish(errs field.ErrorList) field.ErrorList {
	errs = append(errs, c.keywordErrs...)
	if len(errs) == 0 && c.initErr != "" {
		errs = append(errs, field.Invalid(c.path, "", c.initErr))
	}
	return errs
}

func checkSchema(v map[string]interface{}, fldPath *field.Path) *schemaCheck {
	p := &openAPIParser{}
	c := &schemaCheck{path: fldPath}
	c.root = p.node(v, fldPath)
	c.decodeErrs = p.errs
	if len(c.decodeErrs) > 0 {
		return c
	}
	c.initErr = p.initErr
	if c.root.s.Nullable {
		c.rootErrs = append(c.rootErrs, field.Forbidden(fldPath.Child("nullable"), "nullable cannot be true at the root"))
	}
	if c.initErr == "" {
		sc := &structuralChecker{}
		sc.invariants(c.root, levelRoot)
		sc.completeness(c.root)
		sort.SliceStable(sc.errs, func(i, j int) bool { return sc.errs[i].Error() < sc.errs[j].Error() })
		c.structuralErrs = sc.errs
	}
	kc := &keywordChecker{}
	kc.check(c.root, keywordContext{}, true)
	c.keywordErrs = kc.errs
	return c
}

// level says where a schema sits: kube words the missing-type error
// after it, and the root has rules of its own.
type level int

const (
	levelRoot level = iota
	levelItems
	levelField
)

// node is one schema of the tree as given, with what the checks need
// beyond the parsed Schema: which keywords were present and the nested
// schemas.
type node struct {
	s    *Schema
	raw  map[string]interface{}
	path *field.Path

	props map[string]*node
	names []string // sorted property names
	items *node
	// itemsArray is an items given as an array of schemas.
	itemsArray bool
	ap         *node
	// apSet is additionalProperties given at all, a schema or a boolean;
	// apAllows is the boolean.
	apSet, apAllows bool

	allOf, anyOf, oneOf []*node
	not                 *node

	hasDefault    bool
	preserveFalse bool
	listTypeSet   bool
	mapTypeSet    bool
	title         string
	// refused lists the unsupported keywords kube refuses here;
	// unsupported is any of them not empty.
	refused     []string
	unsupported bool
}

type openAPIParser struct {
	errs    field.ErrorList
	initErr string
}

// unsupported are the JSON-Schema keywords kube does not take in a CRD:
// refused, each with its own message, when set as kube checks them
// (refused), and keeping the schema from being read as structural when
// not empty (structural, named as kube names them then).
var unsupported = []struct {
	key, structural string
	refused         func(x interface{}) bool
}{
	{"id", "id", func(x interface{}) bool { return !isEmptyJSON(x) }},
	{"$schema", "schema", func(interface{}) bool { return false }},
	{"$ref", "$ref", func(x interface{}) bool { return x != nil }},
	{"patternProperties", "patternProperties", func(x interface{}) bool { return !isEmptyJSON(x) }},
	{"dependencies", "dependencies", func(x interface{}) bool { return x != nil }},
	{"additionalItems", "additionalItems", func(x interface{}) bool { return x != nil }},
	{"definitions", "definitions", func(x interface{}) bool { return !isEmptyJSON(x) }},
}

// refusedOrder is the order kube reports the refused keywords in.
var refusedOrder = []string{"id", "additionalItems", "patternProperties", "definitions", "dependencies", "$ref"}

func (p *openAPIParser) decodeErr(err *field.Error) { p.errs = append(p.errs, err) }

func (p *openAPIParser) node(v map[string]interface{}, fldPath *field.Path) *node {
	n := &node{s: &Schema{}, raw: v, path: fldPath}
	s := n.s
	for _, u := range unsupported {
		x, ok := v[u.key]
		if !ok {
			continue
		}
		if u.refused(x) {
			n.refused = append(n.refused, u.key)
		}
		if !isEmptyJSON(x) {
			n.unsupported = true
			if p.initErr == "" {
				p.initErr = fmt.Sprintf("OpenAPIV3Schema '%s' is not supported", u.structural)
			}
		}
	}
	s.Type = p.str(v, "type", fldPath)
	s.Format = p.str(v, "format", fldPath)
	s.Description = p.str(v, "description", fldPath)
	n.title = p.str(v, "title", fldPath)
	s.Pattern = p.str(v, "pattern", fldPath)
	s.Maximum = p.num(v, "maximum", fldPath)
	s.Minimum = p.num(v, "minimum", fldPath)
	s.ExclusiveMaximum = p.boolean(v, "exclusiveMaximum", fldPath)
	s.ExclusiveMinimum = p.boolean(v, "exclusiveMinimum", fldPath)
	s.MultipleOf = p.num(v, "multipleOf", fldPath)
	s.MaxLength = p.count(v, "maxLength", fldPath)
	s.MinLength = p.count(v, "minLength", fldPath)
	s.MaxItems = p.count(v, "maxItems", fldPath)
	s.MinItems = p.count(v, "minItems", fldPath)
	s.MaxProperties = p.count(v, "maxProperties", fldPath)
	s.MinProperties = p.count(v, "minProperties", fldPath)
	s.UniqueItems = p.boolean(v, "uniqueItems", fldPath)
	s.Nullable = p.boolean(v, "nullable", fldPath)
	s.IntOrString = p.boolean(v, "x-kubernetes-int-or-string", fldPath)
	s.EmbeddedResource = p.boolean(v, "x-kubernetes-embedded-resource", fldPath)
	if pu, ok := v["x-kubernetes-preserve-unknown-fields"]; ok && pu != nil {
		b := p.boolean(v, "x-kubernetes-preserve-unknown-fields", fldPath)
		s.PreserveUnknownFields = b
		n.preserveFalse = !b
		if n.preserveFalse && p.initErr == "" {
			p.initErr = "internal error: 'x-kubernetes-preserve-unknown-fields' must be true or undefined"
		}
	}
	if lt, ok := v["x-kubernetes-list-type"]; ok && lt != nil {
		n.listTypeSet = true
		s.ListType = p.str(v, "x-kubernetes-list-type", fldPath)
	}
	if mt, ok := v["x-kubernetes-map-type"]; ok && mt != nil {
		n.mapTypeSet = true
		s.MapType = p.str(v, "x-kubernetes-map-type", fldPath)
	}
	if keys, ok := v["x-kubernetes-list-map-keys"]; ok && keys != nil {
		s.ListMapKeys = p.strings(keys, fldPath.Child("x-kubernetes-list-map-keys"))
	}
	if req, ok := v["required"]; ok && req != nil {
		s.Required = p.strings(req, fldPath.Child("required"))
	}
	if e, ok := v["enum"]; ok && e != nil {
		if l, isList := e.([]interface{}); isList {
			s.Enum = l
		} else {
			p.decodeErr(field.Invalid(fldPath.Child("enum"), e, "must be an array"))
		}
	}
	// A null default is no default, as kube reads it.
	s.Default = v["default"]
	n.hasDefault = s.Default != nil
	if props, ok := v["properties"]; ok && props != nil {
		m, isMap := props.(map[string]interface{})
		if !isMap {
			p.decodeErr(field.Invalid(fldPath.Child("properties"), props, "must be an object"))
		}
		if len(m) > 0 {
			s.Properties = make(map[string]*Schema, len(m))
			n.props = make(map[string]*node, len(m))
			for _, k := range sortedKeys(m) {
				c := p.sub(m[k], fldPath.Child("properties").Key(k))
				n.props[k], s.Properties[k] = c, c.s
				n.names = append(n.names, k)
			}
		}
	}
	if items, ok := v["items"]; ok && items != nil {
		if l, isList := items.([]interface{}); isList {
			n.itemsArray = true
			if p.initErr == "" {
				p.initErr = "OpenAPIV3Schema 'items' must be a schema, but is an array"
			}
			for i, x := range l {
				if _, isMap := x.(map[string]interface{}); !isMap {
					p.decodeErr(field.Invalid(fldPath.Child("items").Index(i), x, "must be a schema object"))
				}
			}
		} else {
			n.items = p.sub(items, fldPath.Child("items"))
			s.Items = n.items.s
		}
	}
	if ap, ok := v["additionalProperties"]; ok && ap != nil {
		n.apSet = true
		switch ap := ap.(type) {
		case bool:
			n.apAllows = ap
		default:
			n.apAllows = true
			n.ap = p.sub(ap, fldPath.Child("additionalProperties"))
			s.AdditionalProperties = n.ap.s
		}
	}
	if xv, ok := v["x-kubernetes-validations"]; ok && xv != nil {
		s.XValidations = p.rules(xv, fldPath.Child("x-kubernetes-validations"))
	}
	if x, ok := v["not"]; ok && x != nil {
		n.not = p.sub(x, fldPath.Child("not"))
		s.Not = n.not.s
	}
	for _, j := range []struct {
		key   string
		nodes *[]*node
		list  *[]*Schema
	}{{"allOf", &n.allOf, &s.AllOf}, {"anyOf", &n.anyOf, &s.AnyOf}, {"oneOf", &n.oneOf, &s.OneOf}} {
		x, ok := v[j.key]
		if !ok || x == nil {
			continue
		}
		l, isList := x.([]interface{})
		if !isList {
			p.decodeErr(field.Invalid(fldPath.Child(j.key), x, "must be an array"))
			continue
		}
		for i, b := range l {
			c := p.sub(b, fldPath.Child(j.key).Index(i))
			*j.nodes = append(*j.nodes, c)
			*j.list = append(*j.list, c.s)
		}
	}
	return n
}

func (p *openAPIParser) sub(x interface{}, fldPath *field.Path) *node {
	m, ok := x.(map[string]interface{})
	if !ok {
		p.decodeErr(field.Invalid(fldPath, x, "must be a schema object"))
		m = map[string]interface{}{}
	}
	return p.node(m, fldPath)
}

// isEmptyJSON reports whether x is what kube decodes as unset: null, or
// an empty string, list or object.
func isEmptyJSON(x interface{}) bool {
	switch x := x.(type) {
	case nil:
		return true
	case string:
		return x == ""
	case []interface{}:
		return len(x) == 0
	case map[string]interface{}:
		return len(x) == 0
	}
	return false
}

// keywordContext is what an enclosing schema imposes on a nested one.
type keywordContext struct {
	// insideMeta is inside the apiVersion, kind or metadata of a
	// resource (the root or an embedded one).
	insideMeta bool
	// noDefaults, when set, is why a default is refused here.
	noDefaults string
}

// keywordChecker reports the keywords and markers kube refuses, walking
// the schema as kube does.
type keywordChecker struct {
	errs field.ErrorList
}

var openAPIV3Types = []string{"array", "boolean", "integer", "number", "object", "string"}

var metaFields = map[string]bool{"apiVersion": true, "kind": true, "metadata": true}

func (k *keywordChecker) add(err *field.Error) { k.errs = append(k.errs, err) }

func (k *keywordChecker) check(n *node, ctx keywordContext, isRoot bool) {
	s, fldPath := n.s, n.path
	if s.Type != "" && !slices.Contains(openAPIV3Types, s.Type) {
		k.add(field.NotSupported(fldPath.Child("type"), s.Type, openAPIV3Types))
	}
	if n.hasDefault && ctx.noDefaults != "" {
		k.add(field.Forbidden(fldPath.Child("default"), "must not be set "+ctx.noDefaults))
	}
	for _, u := range refusedOrder {
		if slices.Contains(n.refused, u) {
			k.add(field.Forbidden(fldPath.Child(u), u+" is not supported"))
		}
	}
	if s.Type == "null" {
		k.add(field.Forbidden(fldPath.Child("type"), "type cannot be set to null, use nullable as an alternative"))
	}
	if n.itemsArray {
		k.add(field.Forbidden(fldPath.Child("items"), "items must be a schema object and not an array"))
	}
	if ctx.insideMeta && s.EmbeddedResource {
		k.add(field.Forbidden(fldPath.Child("x-kubernetes-embedded-resource"), "must not be used inside of resource meta"))
	}
	if s.UniqueItems {
		k.add(field.Forbidden(fldPath.Child("uniqueItems"), "uniqueItems cannot be set to true since the runtime complexity becomes quadratic"))
	}
	if n.apSet {
		if len(n.props) != 0 && (!n.apAllows || n.ap != nil) {
			k.add(field.Forbidden(fldPath.Child("additionalProperties"), "additionalProperties and properties are mutual exclusive"))
		}
		if n.ap != nil {
			sub := ctx
			if ctx.insideMeta {
				sub.noDefaults = "inside additionalProperties applying to object metadata"
			}
			k.check(n.ap, sub, false)
		}
	}
	for _, name := range n.names {
		sub := ctx
		if (isRoot || s.EmbeddedResource) && metaFields[name] {
			sub.insideMeta = true
			if isRoot {
				sub.noDefaults = "in top-level " + name
			}
		}
		k.check(n.props[name], sub, false)
	}
	if n.not != nil {
		k.check(n.not, ctx, false)
	}
	for _, l := range [][]*node{n.allOf, n.oneOf, n.anyOf} {
		for _, b := range l {
			k.check(b, ctx, false)
		}
	}
	if n.items != nil {
		k.check(n.items, ctx, false)
	}
	if n.preserveFalse {
		k.add(field.Invalid(fldPath.Child("x-kubernetes-preserve-unknown-fields"), false, "must be true or undefined"))
	}
	k.markers(n)
}

// markers checks x-kubernetes-map-type, -list-type and -list-map-keys.
func (k *keywordChecker) markers(n *node) {
	s, fldPath := n.s, n.path
	if n.mapTypeSet && s.Type != "object" {
		if s.Type == "" {
			k.add(field.Required(fldPath.Child("type"), "must be object if x-kubernetes-map-type is specified"))
		} else {
			k.add(field.Invalid(fldPath.Child("type"), s.Type, "must be object if x-kubernetes-map-type is specified"))
		}
	}
	if n.mapTypeSet && s.MapType != "atomic" && s.MapType != "granular" {
		k.add(field.NotSupported(fldPath.Child("x-kubernetes-map-type"), s.MapType, []string{"atomic", "granular"}))
	}
	if n.listTypeSet && s.Type != "array" {
		if s.Type == "" {
			k.add(field.Required(fldPath.Child("type"), "must be array if x-kubernetes-list-type is specified"))
		} else {
			k.add(field.Invalid(fldPath.Child("type"), s.Type, "must be array if x-kubernetes-list-type is specified"))
		}
	} else if n.listTypeSet && s.ListType == "set" && n.items != nil {
		// The items of a set are compared whole: objects and lists
		// among them must be atomic.
		is := n.items
		switch is.s.Type {
		case "array":
			if is.listTypeSet && is.s.ListType != "atomic" {
				k.add(field.Invalid(fldPath.Child("items").Child("x-kubernetes-list-type"), is.s.ListType, "must be atomic as item of a list with x-kubernetes-list-type=set"))
			}
		case "object":
			if !is.mapTypeSet || is.s.MapType != "atomic" {
				// kube shows the items' list type here, null when unset.
				var bad interface{}
				if is.listTypeSet {
					bad = is.s.ListType
				}
				k.add(field.Invalid(fldPath.Child("items").Child("x-kubernetes-map-type"), bad, "must be atomic as item of a list with x-kubernetes-list-type=set"))
			}
		}
	}
	if n.listTypeSet && s.ListType != "atomic" && s.ListType != "set" && s.ListType != "map" {
		k.add(field.NotSupported(fldPath.Child("x-kubernetes-list-type"), s.ListType, []string{"atomic", "set", "map"}))
	}
	if len(s.ListMapKeys) > 0 {
		if !n.listTypeSet {
			k.add(field.Required(fldPath.Child("x-kubernetes-list-type"), "must be map if x-kubernetes-list-map-keys is non-empty"))
		} else if s.ListType != "map" {
			k.add(field.Invalid(fldPath.Child("x-kubernetes-list-type"), s.ListType, "must be map if x-kubernetes-list-map-keys is non-empty"))
		}
	}
	if n.listTypeSet && s.ListType == "map" {
		if len(s.ListMapKeys) == 0 {
			k.add(field.Required(fldPath.Child("x-kubernetes-list-map-keys"), "must not be empty if x-kubernetes-list-type is map"))
		}
		if n.items == nil && !n.itemsArray {
			k.add(field.Required(fldPath.Child("items"), "must have a schema if x-kubernetes-list-type is map"))
		}
		if n.items != nil && n.items.s.Type != "object" {
			k.add(field.Invalid(fldPath.Child("items").Child("type"), n.items.s.Type, "must be object if parent array's x-kubernetes-list-type is map"))
		}
		if n.items != nil && n.items.s.Type == "object" {
			seen := map[string]bool{}
			for _, key := range s.ListMapKeys {
				if ks, ok := n.items.props[key]; ok {
					if ks.s.Type == "array" || ks.s.Type == "object" {
						// kube shows the items' type here.
						k.add(field.Invalid(fldPath.Child("items").Child("properties").Key(key).Child("type"), n.items.s.Type, "must be a scalar type if parent array's x-kubernetes-list-type is map"))
					}
				} else {
					k.add(field.Invalid(fldPath.Child("x-kubernetes-list-map-keys"), s.ListMapKeys, "entries must all be names of item properties"))
				}
				if seen[key] {
					k.add(field.Invalid(fldPath.Child("x-kubernetes-list-map-keys"), s.ListMapKeys, "must not contain duplicate entries"))
				}
				seen[key] = true
			}
		}
	}
	k.mapListKeysAndSets(n)
}

// mapListKeysAndSets holds the items of set and map lists, and the keys
// of map lists, to what merging them needs: present and not null.
func (k *keywordChecker) mapListKeysAndSets(n *node) {
	s, fldPath := n.s, n.path
	if n.items == nil || !n.listTypeSet || (s.ListType != "set" && s.ListType != "map") {
		return
	}
	is := n.items
	if is.s.Nullable {
		k.add(field.Forbidden(fldPath.Child("items").Child("nullable"), "cannot be nullable when x-kubernetes-list-type is "+s.ListType))
	}
	if s.ListType != "map" {
		return
	}
	for _, key := range s.ListMapKeys {
		ks, ok := is.props[key]
		if !ok {
			continue
		}
		if !slices.Contains(is.s.Required, key) && !ks.hasDefault {
			k.add(field.Required(fldPath.Child("items").Child("properties").Key(key).Child("default"), "this property is in x-kubernetes-list-map-keys, so it must have a default or be a required property"))
		}
		if ks.s.Nullable {
			k.add(field.Forbidden(fldPath.Child("items").Child("properties").Key(key).Child("nullable"), "this property is in x-kubernetes-list-map-keys, so it cannot be nullable"))
		}
	}
}

// structuralChecker reports the violations of kube's structural-schema
// rules: the shape (types, items, properties, additionalProperties) is
// given outside the junctors, which may only add value validations.
type structuralChecker struct {
	errs field.ErrorList
}

func (c *structuralChecker) add(err *field.Error) { c.errs = append(c.errs, err) }

func (c *structuralChecker) invariants(n *node, lvl level) {
	s, fldPath := n.s, n.path
	if s.Type == "array" && n.items == nil {
		c.add(field.Required(fldPath.Child("items"), "must be specified"))
	}
	if n.items != nil {
		c.invariants(n.items, levelItems)
	}
	for _, name := range n.names {
		c.invariants(n.props[name], levelField)
	}
	if n.apSet {
		if lvl == levelRoot {
			c.add(field.Forbidden(fldPath.Child("additionalProperties"), "must not be used at the root"))
		}
		if n.ap != nil {
			c.invariants(n.ap, levelField)
		}
	}
	if s.IntOrString && s.PreserveUnknownFields {
		c.add(field.Invalid(fldPath.Child("x-kubernetes-preserve-unknown-fields"), true, "must be false if x-kubernetes-int-or-string is true"))
	}
	if s.IntOrString && s.EmbeddedResource {
		c.add(field.Invalid(fldPath.Child("x-kubernetes-embedded-resource"), true, "must be false if x-kubernetes-int-or-string is true"))
	}
	// The int-or-string types may be given in junctors, as kubebuilder
	// writes them: anyOf [{type: integer}, {type: string}], or that
	// anyOf as the first allOf.
	c.valueValidation(n, isIntOrStringAnyOf(n.anyOf), len(n.allOf) > 0 && isIntOrStringAnyOf(n.allOf[0].anyOf))

	checkMetadata := lvl == levelRoot || s.EmbeddedResource
	if s.EmbeddedResource && s.Type != "object" {
		if s.Type == "" {
			c.add(field.Required(fldPath.Child("type"), "must be object if x-kubernetes-embedded-resource is true"))
		} else {
			c.add(field.Invalid(fldPath.Child("type"), s.Type, "must be object if x-kubernetes-embedded-resource is true"))
		}
	} else if s.Type == "" && !s.IntOrString && !s.PreserveUnknownFields {
		switch lvl {
		case levelRoot:
			c.add(field.Required(fldPath.Child("type"), "must not be empty at the root"))
		case levelItems:
			c.add(field.Required(fldPath.Child("type"), "must not be empty for specified array items"))
		default:
			c.add(field.Required(fldPath.Child("type"), "must not be empty for specified object fields"))
		}
	}
	if s.EmbeddedResource && n.apSet {
		c.add(field.Forbidden(fldPath.Child("additionalProperties"), "must not be used if x-kubernetes-embedded-resource is set"))
	}
	if lvl == levelRoot && s.Type != "" && s.Type != "object" {
		c.add(field.Invalid(fldPath.Child("type"), s.Type, "must be object at the root"))
	}
	if checkMetadata {
		for _, name := range []string{"kind", "apiVersion"} {
			if p, ok := n.props[name]; ok && p.s.Type != "string" {
				c.add(field.Invalid(fldPath.Child("properties").Key(name).Child("type"), p.s.Type, "must be string"))
			}
		}
	}
	if md, ok := n.props["metadata"]; ok {
		mdPath := fldPath.Child("properties").Key("metadata")
		if checkMetadata && md.s.Type != "object" {
			c.add(field.Invalid(mdPath.Child("type"), md.s.Type, "must be object"))
		}
		if lvl == levelRoot && !onlyNameAndGenerateName(md) {
			c.add(field.Forbidden(mdPath, "must not specify anything other than name and generateName, but metadata is implicitly specified"))
		}
	}
	if s.EmbeddedResource && !s.PreserveUnknownFields && len(n.props) == 0 {
		c.add(field.Required(fldPath.Child("properties"), "must not be empty if x-kubernetes-embedded-resource is true without x-kubernetes-preserve-unknown-fields"))
	}
}

// isIntOrStringAnyOf reports whether l is exactly [{type: integer},
// {type: string}].
func isIntOrStringAnyOf(l []*node) bool {
	return len(l) == 2 && isBareType(l[0], "integer") && isBareType(l[1], "string")
}

// isBareType reports whether n says type t and nothing else kube keeps.
func isBareType(n *node, t string) bool {
	if n.s.Type != t {
		return false
	}
	bare := *n
	bare.s = &Schema{}
	*bare.s = *n.s
	bare.s.Type = ""
	return isZeroNode(&bare)
}

// isZeroNode reports whether n says nothing kube keeps of a schema: only
// examples, external documentation and unknown keywords, or zero values.
func isZeroNode(n *node) bool {
	s := n.s
	return n.title == "" && !n.hasDefault && !n.apSet && n.items == nil && !n.itemsArray && len(n.props) == 0 &&
		n.not == nil && len(n.allOf) == 0 && len(n.anyOf) == 0 && len(n.oneOf) == 0 &&
		!n.listTypeSet && !n.mapTypeSet && !n.preserveFalse && !n.unsupported &&
		s.Type == "" && s.Format == "" && s.Description == "" && len(s.Required) == 0 && len(s.Enum) == 0 &&
		!s.Nullable && s.Pattern == "" && s.Maximum == nil && s.Minimum == nil && !s.ExclusiveMaximum &&
		!s.ExclusiveMinimum && s.MultipleOf == nil && s.MaxLength == nil && s.MinLength == nil &&
		s.MaxItems == nil && s.MinItems == nil && !s.UniqueItems && s.MaxProperties == nil && s.MinProperties == nil &&
		!s.PreserveUnknownFields && !s.EmbeddedResource && !s.IntOrString && len(s.ListMapKeys) == 0 &&
		len(s.XValidations) == 0
}

// onlyNameAndGenerateName reports whether a resource's metadata schema
// says nothing but its type and default (checked elsewhere) and, on its
// own, the schemas of name and generateName: ObjectMeta is the server's.
func onlyNameAndGenerateName(md *node) bool {
	rest := *md
	rest.s = &Schema{}
	*rest.s = *md.s
	rest.s.Type, rest.hasDefault = "", false
	_, name := md.props["name"]
	_, generateName := md.props["generateName"]
	if (name && generateName && len(md.props) == 2) || ((name || generateName) && len(md.props) == 1) {
		rest.props = nil
	}
	return isZeroNode(&rest)
}

// valueValidation checks the junctors of a node: each may only add value
// validations. skipAnyOf and skipFirstAllOfAnyOf let the int-or-string
// patterns through.
func (c *structuralChecker) valueValidation(n *node, skipAnyOf, skipFirstAllOfAnyOf bool) {
	if !skipAnyOf {
		for _, b := range n.anyOf {
			c.nested(b, false)
		}
	}
	for i, b := range n.allOf {
		c.nested(b, skipFirstAllOfAnyOf && i == 0)
	}
	for _, b := range n.oneOf {
		c.nested(b, false)
	}
	if n.not != nil {
		c.nested(n.not, false)
	}
	if n.s.Pattern != "" {
		if _, err := regexp.Compile(n.s.Pattern); err != nil {
			c.add(field.Invalid(n.path.Child("pattern"), n.s.Pattern, fmt.Sprintf("must be a valid regular expression, but isn't: %v", err)))
		}
	}
}

// nested checks a junctor's schema, which says no shape of its own.
func (c *structuralChecker) nested(n *node, skipAnyOf bool) {
	s, fldPath := n.s, n.path
	c.valueValidation(n, skipAnyOf, false)
	if n.items != nil {
		c.nested(n.items, false)
	}
	for _, name := range n.names {
		c.nested(n.props[name], false)
	}
	if s.Type != "" {
		c.add(field.Forbidden(fldPath.Child("type"), "must be empty to be structural"))
	}
	if n.apSet {
		c.add(field.Forbidden(fldPath.Child("additionalProperties"), "must be undefined to be structural"))
	}
	if n.hasDefault {
		c.add(field.Forbidden(fldPath.Child("default"), "must be undefined to be structural"))
	}
	if n.title != "" {
		c.add(field.Forbidden(fldPath.Child("title"), "must be empty to be structural"))
	}
	if s.Description != "" {
		c.add(field.Forbidden(fldPath.Child("description"), "must be empty to be structural"))
	}
	if s.Nullable {
		c.add(field.Forbidden(fldPath.Child("nullable"), "must be false to be structural"))
	}
	if s.PreserveUnknownFields {
		c.add(field.Forbidden(fldPath.Child("x-kubernetes-preserve-unknown-fields"), "must be false to be structural"))
	}
	if s.EmbeddedResource {
		c.add(field.Forbidden(fldPath.Child("x-kubernetes-embedded-resource"), "must be false to be structural"))
	}
	if s.IntOrString {
		c.add(field.Forbidden(fldPath.Child("x-kubernetes-int-or-string"), "must be false to be structural"))
	}
	if len(s.ListMapKeys) > 0 {
		c.add(field.Forbidden(fldPath.Child("x-kubernetes-list-map-keys"), "must be empty to be structural"))
	}
	if n.listTypeSet {
		c.add(field.Forbidden(fldPath.Child("x-kubernetes-list-type"), "must be undefined to be structural"))
	}
	if n.mapTypeSet {
		c.add(field.Forbidden(fldPath.Child("x-kubernetes-map-type"), "must be undefined to be structural"))
	}
	if len(s.XValidations) > 0 {
		c.add(field.Forbidden(fldPath.Child("x-kubernetes-validations"), "must be empty to be structural"))
	}
	if _, ok := n.props["metadata"]; ok {
		c.add(field.Forbidden(fldPath.Child("properties").Key("metadata"), "must not be specified in a nested context"))
	}
}

// completeness checks that the fields and items the root's junctors
// speak of are specified outside of them (kube looks at the root's
// junctors only).
func (c *structuralChecker) completeness(root *node) {
	c.junctorsComplete(root, root, root.path)
}

func (c *structuralChecker) junctorsComplete(v, s *node, sPath *field.Path) {
	if v.not != nil {
		c.nestedComplete(v.not, s, sPath)
	}
	for _, l := range [][]*node{v.allOf, v.anyOf, v.oneOf} {
		for _, b := range l {
			c.nestedComplete(b, s, sPath)
		}
	}
}

func (c *structuralChecker) nestedComplete(v, s *node, sPath *field.Path) {
	if s == nil {
		c.add(field.Required(sPath, fmt.Sprintf("because it is defined in %s", v.path)))
		return
	}
	c.junctorsComplete(v, s, sPath)
	if v.items != nil {
		c.nestedComplete(v.items, s.items, sPath.Child("items"))
	}
	for _, name := range v.names {
		sp, ok := s.props[name]
		if !ok {
			c.add(field.Required(sPath.Child("properties").Key(name), fmt.Sprintf("because it is defined in %s", v.props[name].path)))
			continue
		}
		c.nestedComplete(v.props[name], sp, sPath.Child("properties").Key(name))
	}
}

func (p *openAPIParser) rules(x interface{}, fldPath *field.Path) []ValidationRule {
	l, ok := x.([]interface{})
	if !ok {
		p.decodeErr(field.Invalid(fldPath, x, "must be an array"))
		return nil
	}
	out := make([]ValidationRule, 0, len(l))
	for i, r := range l {
		m, ok := r.(map[string]interface{})
		if !ok {
			p.decodeErr(field.Invalid(fldPath.Index(i), r, "must be an object"))
			continue
		}
		rp := fldPath.Index(i)
		out = append(out, ValidationRule{
			Rule:              p.str(m, "rule", rp),
			Message:           p.str(m, "message", rp),
			MessageExpression: p.str(m, "messageExpression", rp),
			Reason:            p.str(m, "reason", rp),
			FieldPath:         p.str(m, "fieldPath", rp),
			OptionalOldSelf:   p.boolean(m, "optionalOldSelf", rp),
		})
	}
	return out
}

func (p *openAPIParser) str(v map[string]interface{}, k string, fldPath *field.Path) string {
	x, ok := v[k]
	if !ok || x == nil {
		return ""
	}
	s, ok := x.(string)
	if !ok {
		p.decodeErr(field.Invalid(fldPath.Child(k), x, "must be a string"))
	}
	return s
}

func (p *openAPIParser) boolean(v map[string]interface{}, k string, fldPath *field.Path) bool {
	x, ok := v[k]
	if !ok || x == nil {
		return false
	}
	b, ok := x.(bool)
	if !ok {
		p.decodeErr(field.Invalid(fldPath.Child(k), x, "must be a boolean"))
	}
	return b
}

func (p *openAPIParser) num(v map[string]interface{}, k string, fldPath *field.Path) *float64 {
	x, ok := v[k]
	if !ok || x == nil {
		return nil
	}
	f, ok := toFloat(x)
	if !ok {
		p.decodeErr(field.Invalid(fldPath.Child(k), x, "must be a number"))
		return nil
	}
	return &f
}

// count reads an integer keyword; kube takes negative ones.
func (p *openAPIParser) count(v map[string]interface{}, k string, fldPath *field.Path) *int64 {
	x, ok := v[k]
	if !ok || x == nil {
		return nil
	}
	f, ok := toFloat(x)
	if !ok || f != float64(int64(f)) {
		p.decodeErr(field.Invalid(fldPath.Child(k), x, "must be an integer"))
		return nil
	}
	n := int64(f)
	return &n
}

func (p *openAPIParser) strings(x interface{}, fldPath *field.Path) []string {
	l, ok := x.([]interface{})
	if !ok {
		p.decodeErr(field.Invalid(fldPath, x, "must be an array of strings"))
		return nil
	}
	out := make([]string, 0, len(l))
	for i, e := range l {
		s, ok := e.(string)
		if !ok {
			p.decodeErr(field.Invalid(fldPath.Index(i), e, "must be a string"))
			continue
		}
		out = append(out, s)
	}
	return out
}

// toFloat reads a decoded JSON number: float64 from encoding/json,
// int64 or float64 from kube's decoders.
func toFloat(x interface{}) (float64, bool) {
	switch n := x.(type) {
	case float64:
		return n, true
	case int64:
		return float64(n), true
	case int:
		return float64(n), true
	case int32:
		return float64(n), true
	}
	return 0, false
}

func sortedKeys(m map[string]interface{}) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
