package schema

import (
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"unicode/utf8"

	metavalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/api/validation/path"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Validate checks obj, a custom object as decoded JSON (numbers as int64
// or float64), against st as kube validates a custom resource, in three
// passes as kube makes them: the schema's value validations (junctors
// included), then the apiVersion, kind and metadata of embedded
// resources, then the uniqueness of set and map lists. Errors carry
// kube's words and paths ("spec.replicas in body should be less than or
// equal to 10"); a junctor's own error has no field ("<nil>"), as in
// kube. Fields the schema does not name are not looked at: pruning has
// removed them, or the schema preserves them.
func (st *Structural) Validate(obj map[string]interface{}) field.ErrorList {
	v := &validator{st: st}
	root := st.Resolve(st.Root)
	errs := v.schema(nil, obj, root, nil).errs
	errs = append(errs, v.embedded(nil, obj, root)...)
	return append(errs, v.lists(nil, obj, root)...)
}

// ValidateUpdate checks obj, an update of old, as kube validates an
// update of a custom resource: as Validate, except that set and map
// lists are not checked for duplicates when old has some already (kube
// lets such an object be updated whatever its lists), and that, with
// ratchet (kube's CRDValidationRatcheting gate), the value validations
// forgive what is wrong with a value the update left unchanged: one
// equal to its counterpart in old, which is the same property or map key
// of the old object, or the item with the same keys of a list-type map
// (the items of other lists have none). Errors are forgiven node by
// node: those a node's own keywords find (its required fields, its
// junctors and whatever they find below it) go when the node is
// unchanged; a changed node's children are judged on their own. The
// object itself is never unchanged, and the embedded resources'
// metadata is checked as on create.
func (st *Structural) ValidateUpdate(obj, old map[string]interface{}, ratchet bool) field.ErrorList {
	v := &validator{st: st}
	root := st.Resolve(st.Root)
	var prev *prior
	if ratchet {
		prev = &prior{value: old}
	}
	// As in kube, the object itself never counts as unchanged: its own
	// errors (a required field at the root, its junctors) are reported.
	errs := v.check(nil, obj, root, prev).errs
	errs = append(errs, v.embedded(nil, obj, root)...)
	return append(errs, v.updatedLists(obj, old, root)...)
}

// ValidateStatusUpdate checks obj, an update of old through the status
// subresource, as kube does: the status alone against the schema of the
// status property, as a document of its own (paths relative to the
// status: "phase", not "status.phase"), then the lists of the whole
// object as ValidateUpdate checks them. Embedded resources are not
// checked and nothing is forgiven.
func (st *Structural) ValidateStatusUpdate(obj, old map[string]interface{}) field.ErrorList {
	v := &validator{st: st}
	root := st.Resolve(st.Root)
	var errs field.ErrorList
	if status, ok := obj["status"]; ok && status != nil && root != nil && root.Properties["status"] != nil {
		errs = v.schema(nil, status, st.Resolve(root.Properties["status"]), nil).errs
	}
	return append(errs, v.updatedLists(obj, old, root)...)
}

// updatedLists reports the duplicates in obj's set and map lists, unless
// old has some.
func (v *validator) updatedLists(obj, old map[string]interface{}, root *Schema) field.ErrorList {
	if len(v.lists(nil, old, root)) > 0 {
		return nil
	}
	return v.lists(nil, obj, root)
}

// prior is, when validating an update with ratcheting, the old value at
// the place of the value being validated; nil where there is none to
// compare with.
type prior struct{ value interface{} }

// field is the old value of property or map key k.
func (o *prior) field(k string) *prior {
	if o == nil {
		return nil
	}
	m, _ := o.value.(map[string]interface{})
	v, ok := m[k]
	if !ok {
		return nil
	}
	return &prior{value: v}
}

// validator walks a value with paths relative to it, as kube's validator
// names them in messages.
type validator struct {
	st *Structural
	// defaults validates a CRD's default values as kube does: from the
	// structural schema, where x-kubernetes-int-or-string gives no type
	// (the junctors may) and unknown formats are kept.
	defaults bool
}

// result is what validating a value against a schema gives: the errors,
// and how many checks applied (kube's match count), by which anyOf and
// oneOf choose the failing alternative whose errors they report: the
// first of those with the most checks applied.
type result struct {
	errs    field.ErrorList
	matches int
}

func (r *result) add(err *field.Error) { r.errs = append(r.errs, err) }

func (r *result) merge(o result) {
	r.errs = append(r.errs, o.errs...)
	r.matches += o.matches
}

func (r *result) valid() bool { return len(r.errs) == 0 }

func failed(err *field.Error) result { return result{errs: field.ErrorList{err}} }

// patterns caches compiled patterns: a schema is validated against many
// objects, and FromOpenAPIV3 has already rejected invalid ones.
var patterns sync.Map

func compiledPattern(p string) (*regexp.Regexp, error) {
	if re, ok := patterns.Load(p); ok {
		return re.(*regexp.Regexp), nil
	}
	re, err := regexp.Compile(p)
	if err != nil {
		return nil, err
	}
	patterns.Store(p, re)
	return re, nil
}

// name is the path as kube's validator spells it in messages.
func name(p *field.Path) string {
	if p == nil {
		return ""
	}
	return p.String()
}

func child(p *field.Path, k string) *field.Path {
	if p == nil {
		return field.NewPath(k)
	}
	return p.Child(k)
}

func key(p *field.Path, k string) *field.Path {
	if p == nil {
		return field.NewPath("").Key(k)
	}
	return p.Key(k)
}

// composite is the error of a junctor: no field and no value, as kube
// reports it.
func composite(format string, args ...interface{}) *field.Error {
	return field.Invalid(nil, "", fmt.Sprintf(format, args...))
}

// schema validates x against s; with old, the errors are forgiven if x
// is unchanged (see ValidateUpdate).
func (v *validator) schema(p *field.Path, x interface{}, s *Schema, old *prior) result {
	r := v.check(p, x, s, old)
	if old != nil && !r.valid() && reflect.DeepEqual(x, old.value) {
		r.errs = nil
	}
	return r
}

// check validates x against s, the checks in kube's order: the type,
// the junctors, the string, format, number and list checks, the enum,
// then the object's. Each check looks only at values of its kind, so a
// value of the wrong type still gets the checks that apply to what it is.
// Children are validated against their counterparts in old; the
// junctors' alternatives against none.
func (v *validator) check(p *field.Path, x interface{}, s *Schema, old *prior) result {
	var r result
	if s == nil {
		return r
	}
	if x == nil {
		r.merge(v.typeCheck(p, x, s))
		r.merge(v.enum(p, x, s))
		return r
	}
	kind := jsonType(x)
	if len(v.types(s)) > 0 || v.typeFormat(s) != "" {
		r.merge(v.typeCheck(p, x, s))
		r.matches++
	}
	r.merge(v.junctors(p, x, s))
	r.matches++
	if kind == "string" {
		r.merge(v.str(p, x.(string), s))
		r.matches++
		if f := supportedFormat(s.Format); f != "" {
			r.merge(v.format(p, x.(string), s))
			r.matches++
		}
	}
	if kind == "integer" || kind == "number" {
		r.merge(v.number(p, x, s))
		r.matches++
	}
	if l, ok := x.([]interface{}); ok {
		r.merge(v.array(p, l, s, old))
		r.matches++
	}
	r.merge(v.enum(p, x, s))
	r.matches++
	if m, ok := x.(map[string]interface{}); ok {
		r.merge(v.object(p, m, s, old))
		r.matches++
	}
	r.matches++
	return r
}

// types are the JSON types s takes: both for int-or-string.
func (v *validator) types(s *Schema) []string {
	switch {
	case s.IntOrString && !v.defaults:
		return []string{"integer", "string"}
	case s.Type != "":
		return []string{s.Type}
	}
	return nil
}

// supportedFormat is f when kube checks it, else "" (kube drops the
// formats it does not know before validating).
func supportedFormat(f string) string {
	if formatChecker(f) != nil {
		return f
	}
	return ""
}

// typeFormat is the format the type check knows.
func (v *validator) typeFormat(s *Schema) string {
	if v.defaults {
		return s.Format
	}
	return supportedFormat(s.Format)
}

// typeCheck checks x's JSON type, and for a format on a non-string the
// format's type, as kube does.
func (v *validator) typeCheck(p *field.Path, x interface{}, s *Schema) result {
	want := v.types(s)
	typeErr := func(wanted, got string) result {
		return failed(field.TypeInvalid(p, got, fmt.Sprintf("%s in body must be of type %s: %q", name(p), wanted, got)))
	}
	if x == nil {
		if len(want) > 0 && !s.Nullable {
			return typeErr(strings.Join(want, ","), "null")
		}
		return result{matches: 1}
	}
	got, gotFormat := jsonType(x), ""
	switch got {
	case "integer":
		gotFormat = "int64"
	case "number":
		gotFormat = "float64"
	}
	f := v.typeFormat(s)
	floatInt := got == "number" && slices.Contains(want, "integer") && isIntegral(x)
	intFloat := got == "integer" && slices.Contains(want, "number")
	compound := got == "string" || got == "array"
	if !compound && f != "" && !(slices.Contains(want, got) || gotFormat == f || floatInt || intFloat) {
		return typeErr(f, gotFormat)
	}
	if !slices.Contains(want, "number") && !slices.Contains(want, "integer") && f != "" && compound {
		return result{matches: 1}
	}
	if !(slices.Contains(want, got) || floatInt || intFloat) {
		return typeErr(strings.Join(want, ","), got)
	}
	return result{matches: 1}
}

// isIntegral reports whether x, a float, holds an integer, with the
// tolerance kube's validator allows.
func isIntegral(x interface{}) bool {
	f, ok := x.(float64)
	return ok && isJSONInteger(f)
}

// isJSONInteger reports whether f is an integer JSON can carry exactly,
// allowing a relative error of 1e-9.
func isJSONInteger(f float64) bool {
	const maxJSON = 1<<53 - 1
	if math.IsNaN(f) || math.IsInf(f, 0) || f < -maxJSON || f > maxJSON {
		return false
	}
	g := float64(uint64(f))
	diff := math.Abs(f - g)
	switch {
	case f == g, f == float64(int64(f)), f == float64(uint64(f)):
		return true
	case f == 0 || g == 0 || diff < math.SmallestNonzeroFloat64:
		return diff < 1e-9*math.SmallestNonzeroFloat64
	}
	return diff/math.Min(math.Abs(f)+math.Abs(g), math.MaxFloat64) < 1e-9
}

// jsonType names x's JSON type as kube's validator does.
func jsonType(x interface{}) string {
	switch x.(type) {
	case nil:
		return "null"
	case string:
		return "string"
	case bool:
		return "boolean"
	case int64, int, int32:
		return "integer"
	case float64, float32:
		return "number"
	case map[string]interface{}:
		return "object"
	case []interface{}:
		return "array"
	}
	return fmt.Sprintf("%T", x)
}

// junctors checks anyOf, oneOf, allOf and not. A failing anyOf or oneOf
// reports its own error and the errors of one failing alternative; allOf
// reports the errors of every alternative, then its own.
func (v *validator) junctors(p *field.Path, x interface{}, s *Schema) result {
	var r result
	if len(s.AnyOf) > 0 {
		var best, success *result
		for _, b := range s.AnyOf {
			br := v.schema(p, x, v.st.Resolve(b), nil)
			if br.valid() {
				best, success = nil, &br
				break
			}
			if best == nil || br.matches > best.matches {
				best = &br
			}
		}
		if success == nil {
			r.add(composite("%q must validate at least one schema (anyOf)", name(p)))
		}
		if best != nil {
			r.merge(*best)
		} else if success != nil {
			r.merge(*success)
		}
	}
	if len(s.OneOf) > 0 {
		var best, success *result
		validated := 0
		for _, b := range s.OneOf {
			br := v.schema(p, x, v.st.Resolve(b), nil)
			if br.valid() {
				validated++
				best = nil
				if success == nil {
					success = &br
				}
				continue
			}
			if validated == 0 && (best == nil || br.matches > best.matches) {
				best = &br
			}
		}
		switch {
		case validated == 0:
			r.add(composite("%q must validate one and only one schema (oneOf). Found none valid", name(p)))
			if best != nil {
				r.merge(*best)
			}
		case validated > 1:
			r.add(composite("%q must validate one and only one schema (oneOf). Found %d valid alternatives", name(p), validated))
		default:
			r.merge(*success)
		}
	}
	if len(s.AllOf) > 0 {
		validated := 0
		for _, b := range s.AllOf {
			br := v.schema(p, x, v.st.Resolve(b), nil)
			if br.valid() {
				validated++
			}
			r.merge(br)
		}
		switch validated {
		case len(s.AllOf):
		case 0:
			r.add(composite("%q must validate all the schemas (allOf). None validated", name(p)))
		default:
			r.add(composite("%q must validate all the schemas (allOf)", name(p)))
		}
	}
	if s.Not != nil {
		if nr := v.schema(p, x, v.st.Resolve(s.Not), nil); nr.valid() {
			r.add(composite("%q must not validate the schema (not)", name(p)))
		}
	}
	r.matches++
	return r
}

// str checks the length and the pattern; only the first failing check is
// reported, as kube does.
func (v *validator) str(p *field.Path, x string, s *Schema) result {
	n := int64(utf8.RuneCountInString(x))
	switch {
	case s.MaxLength != nil && n > *s.MaxLength:
		return failed(field.TooLongMaxLength(p, x, int(*s.MaxLength)))
	case s.MinLength != nil && n < *s.MinLength:
		return failed(field.Invalid(p, x, fmt.Sprintf("%s in body should be at least %d chars long", name(p), *s.MinLength)))
	case s.Pattern != "":
		if re, err := compiledPattern(s.Pattern); err == nil && !re.MatchString(x) {
			return failed(field.Invalid(p, x, fmt.Sprintf("%s in body should match '%s'", name(p), s.Pattern)))
		}
	}
	return result{}
}

func (v *validator) format(p *field.Path, x string, s *Schema) result {
	if check := formatChecker(s.Format); check != nil && !check(x) {
		return failed(field.TypeInvalid(p, x, fmt.Sprintf("%s in body must be of type %s: %q", name(p), s.Format, x)))
	}
	return result{}
}

// number checks multipleOf and the bounds, in kube's order. As kube, an
// integer value is compared with the factor and the bounds truncated to
// integers: 2 against maximum 1.5 "should be less than or equal to 1".
func (v *validator) number(p *field.Path, x interface{}, s *Schema) result {
	r := result{matches: 1}
	f, _ := toFloat(x)
	integer := jsonType(x) == "integer"
	if s.MultipleOf != nil {
		if integer {
			factor, n := int64(*s.MultipleOf), asInt64(x)
			switch {
			case factor <= 0:
				r.add(field.Invalid(p, factor, fmt.Sprintf("factor MultipleOf declared for %s must be positive: %v", name(p), factor)))
			case n%factor != 0:
				r.add(field.Invalid(p, x, fmt.Sprintf("%s in body should be a multiple of %v", name(p), factor)))
			}
		} else {
			factor := *s.MultipleOf
			mult := f / factor
			if factor < 1 {
				mult = 1 / factor * f
			}
			switch {
			case factor <= 0:
				r.add(field.Invalid(p, factor, fmt.Sprintf("factor MultipleOf declared for %s must be positive: %v", name(p), factor)))
			case !isJSONInteger(mult):
				r.add(field.Invalid(p, f, fmt.Sprintf("%s in body should be a multiple of %v", name(p), factor)))
			}
		}
	}
	bound := func(b float64) float64 {
		if integer {
			return float64(int64(b))
		}
		return b
	}
	if s.Minimum != nil {
		lim := bound(*s.Minimum)
		if s.ExclusiveMinimum && f <= lim {
			r.add(field.Invalid(p, x, fmt.Sprintf("%s in body should be greater than %v", name(p), lim)))
		} else if !s.ExclusiveMinimum && f < lim {
			r.add(field.Invalid(p, x, fmt.Sprintf("%s in body should be greater than or equal to %v", name(p), lim)))
		}
	}
	if s.Maximum != nil {
		lim := bound(*s.Maximum)
		if s.ExclusiveMaximum && f >= lim {
			r.add(field.Invalid(p, x, fmt.Sprintf("%s in body should be less than %v", name(p), lim)))
		} else if !s.ExclusiveMaximum && f > lim {
			r.add(field.Invalid(p, x, fmt.Sprintf("%s in body should be less than or equal to %v", name(p), lim)))
		}
	}
	return r
}

// array checks the items, then the count. Only the items of a map list
// have counterparts in old.
func (v *validator) array(p *field.Path, x []interface{}, s *Schema, old *prior) result {
	var r result
	if s.Items != nil {
		items := v.st.Resolve(s.Items)
		counterpart := func(interface{}) *prior { return nil }
		if old != nil && s.ListType == "map" {
			pair := v.st.CorrelateMapList(s, old.value)
			counterpart = func(e interface{}) *prior {
				if o := pair(e); o != nil {
					return &prior{value: o}
				}
				return nil
			}
		}
		for i, e := range x {
			r.merge(v.schema(p.Index(i), e, items, counterpart(e)))
		}
	}
	n := int64(len(x))
	if s.MinItems != nil && n < *s.MinItems {
		r.add(field.Invalid(p, n, fmt.Sprintf("%s in body should have at least %d items", name(p), *s.MinItems)))
	}
	if s.MaxItems != nil && n > *s.MaxItems {
		r.add(field.TooMany(p, int(n), int(*s.MaxItems)))
	}
	if s.UniqueItems && len(duplicates(x)) > 0 {
		r.add(field.Invalid(p, x, fmt.Sprintf("%s in body shouldn't contain duplicates", name(p))))
	}
	r.matches++
	return r
}

// enum checks x against the enum as kube compares: a value equal to an
// entry once converted to the entry's Go type.
func (v *validator) enum(p *field.Path, x interface{}, s *Schema) result {
	if len(s.Enum) == 0 || inEnum(x, s.Enum) {
		return result{}
	}
	values := make([]string, 0, len(s.Enum))
	for _, e := range s.Enum {
		if es, ok := e.(string); ok {
			values = append(values, es)
		} else {
			j, _ := json.Marshal(e)
			values = append(values, string(j))
		}
	}
	return failed(field.NotSupported(p, x, values))
}

// object checks the count, the values of additional properties, the
// properties, then the required ones.
func (v *validator) object(p *field.Path, x map[string]interface{}, s *Schema, old *prior) result {
	var r result
	n := int64(len(x))
	if s.MinProperties != nil && n < *s.MinProperties {
		r.add(field.Invalid(p, n, fmt.Sprintf("%s in body should have at least %d properties", name(p), *s.MinProperties)))
	}
	if s.MaxProperties != nil && n > *s.MaxProperties {
		r.add(field.TooMany(p, int(n), int(*s.MaxProperties)))
	}
	var failed keyedErrors
	if s.AdditionalProperties != nil {
		ap := v.st.Resolve(s.AdditionalProperties)
		for k, e := range x {
			if _, ok := s.Properties[k]; !ok {
				cr := v.schema(child(p, k), e, ap, old.field(k))
				r.matches += cr.matches
				failed.add(k, cr.errs)
			}
		}
		r.errs = failed.appendTo(r.errs)
	}
	for k, e := range x {
		if ps, ok := s.Properties[k]; ok {
			cr := v.schema(child(p, k), e, v.st.Resolve(ps), old.field(k))
			r.matches += cr.matches
			failed.add(k, cr.errs)
		}
	}
	r.errs = failed.appendTo(r.errs)
	for _, req := range s.Required {
		if _, ok := x[req]; !ok {
			r.add(field.Required(child(p, req), ""))
		}
	}
	return r
}

// keyedErrors gathers the errors of an object's fields, walked in map
// order, to report them in the order of the fields' names: kube's order
// is the map's, so any order is kube's, and this one is stable.
type keyedErrors []keyedError

type keyedError struct {
	key  string
	errs field.ErrorList
}

func (k *keyedErrors) add(key string, errs field.ErrorList) {
	if len(errs) > 0 {
		*k = append(*k, keyedError{key, errs})
	}
}

// appendTo appends the errors gathered to errs, by field name, and
// forgets them.
func (k *keyedErrors) appendTo(errs field.ErrorList) field.ErrorList {
	if len(*k) > 1 {
		sort.Slice(*k, func(i, j int) bool { return (*k)[i].key < (*k)[j].key })
	}
	for _, e := range *k {
		errs = append(errs, e.errs...)
	}
	*k = (*k)[:0]
	return errs
}

// embedded checks the apiVersion, kind and metadata of the embedded
// resources in x; isResource treats x itself as one.
func (v *validator) embedded(p *field.Path, x interface{}, s *Schema) field.ErrorList {
	return v.embeddedIn(p, x, s, false)
}

func (v *validator) embeddedIn(p *field.Path, x interface{}, s *Schema, isResource bool) field.ErrorList {
	if s == nil {
		return nil
	}
	if embedded, _ := v.st.below(s); !embedded && !isResource {
		return nil
	}
	var errs field.ErrorList
	switch x := x.(type) {
	case map[string]interface{}:
		if isResource || s.EmbeddedResource {
			errs = append(errs, embeddedResource(p, x)...)
		}
		var failed keyedErrors
		for k, e := range x {
			if ps, ok := s.Properties[k]; ok {
				failed.add(k, v.embeddedIn(child(p, k), e, v.st.Resolve(ps), false))
			} else if s.AdditionalProperties != nil {
				failed.add(k, v.embeddedIn(key(p, k), e, v.st.Resolve(s.AdditionalProperties), false))
			}
		}
		errs = failed.appendTo(errs)
	case []interface{}:
		items := v.st.Resolve(s.Items)
		for i, e := range x {
			errs = append(errs, v.embeddedIn(p.Index(i), e, items, false)...)
		}
	}
	return errs
}

// embeddedResource checks an x-kubernetes-embedded-resource object as
// kube checks an object of its own: apiVersion and kind set and well
// formed, metadata a valid ObjectMeta.
func embeddedResource(p *field.Path, x map[string]interface{}) field.ErrorList {
	var errs field.ErrorList
	if _, ok := x["apiVersion"]; !ok {
		errs = append(errs, field.Required(child(p, "apiVersion"), "must not be empty"))
	}
	if _, ok := x["kind"]; !ok {
		errs = append(errs, field.Required(child(p, "kind"), "must not be empty"))
	}
	if av, ok := x["apiVersion"]; ok {
		switch s, isStr := av.(string); {
		case !isStr:
			errs = append(errs, field.Invalid(child(p, "apiVersion"), av, "must be a string"))
		case s == "":
			errs = append(errs, field.Invalid(child(p, "apiVersion"), s, "must not be empty"))
		default:
			if _, err := schema.ParseGroupVersion(s); err != nil {
				errs = append(errs, field.Invalid(child(p, "apiVersion"), s, err.Error()))
			}
		}
	}
	if k, ok := x["kind"]; ok {
		switch s, isStr := k.(string); {
		case !isStr:
			errs = append(errs, field.Invalid(child(p, "kind"), k, "must be a string"))
		case s == "":
			errs = append(errs, field.Invalid(child(p, "kind"), s, "must not be empty"))
		default:
			if msgs := utilvalidation.IsDNS1035Label(strings.ToLower(s)); len(msgs) > 0 {
				errs = append(errs, field.Invalid(child(p, "kind"), s, "may have mixed case, but should otherwise match: "+strings.Join(msgs, ",")))
			}
		}
	}
	if md, ok := x["metadata"]; ok {
		m, isMap := md.(map[string]interface{})
		var meta metav1.ObjectMeta
		if !isMap {
			return append(errs, field.Invalid(child(p, "metadata"), md, "must be an object"))
		}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(m, &meta); err != nil {
			return append(errs, field.Invalid(child(p, "metadata"), md, err.Error()))
		}
		if meta.Name == "" {
			// An embedded object need not be named; ObjectMeta's
			// validation requires a name, so it gets a valid one.
			meta.Name = "fakename"
		}
		errs = append(errs, metavalidation.ValidateObjectMeta(&meta, meta.Namespace != "", path.ValidatePathSegmentName, child(p, "metadata"))...)
	}
	return errs
}

// lists reports the duplicates of set and map lists in x, an object.
func (v *validator) lists(p *field.Path, x map[string]interface{}, s *Schema) field.ErrorList {
	if s == nil || x == nil {
		return nil
	}
	var errs field.ErrorList
	var failed keyedErrors
	if s.AdditionalProperties != nil {
		ap := v.st.Resolve(s.AdditionalProperties)
		for k, e := range x {
			failed.add(k, v.listsIn(key(p, k), e, ap))
		}
		errs = failed.appendTo(errs)
	}
	for k, e := range x {
		if ps, ok := s.Properties[k]; ok {
			failed.add(k, v.listsIn(child(p, k), e, v.st.Resolve(ps)))
		}
	}
	return failed.appendTo(errs)
}

func (v *validator) listsIn(p *field.Path, x interface{}, s *Schema) field.ErrorList {
	if s == nil {
		return nil
	}
	if _, lists := v.st.below(s); !lists {
		return nil
	}
	switch x := x.(type) {
	case map[string]interface{}:
		return v.lists(p, x, s)
	case []interface{}:
		var errs field.ErrorList
		switch s.ListType {
		case "set":
			for _, i := range duplicates(x) {
				errs = append(errs, field.Duplicate(p.Index(i), x[i]))
			}
		case "map":
			errs = append(errs, listMap(p, x, s)...)
		}
		if s.Items != nil {
			items := v.st.Resolve(s.Items)
			for i, e := range x {
				errs = append(errs, v.listsIn(p.Index(i), e, items)...)
			}
		}
		return errs
	}
	return nil
}

// listMap reports the entries of a list-type map whose keys an earlier
// entry already has, the duplicate value as kube words it: the map of key
// fields the entry has.
func listMap(p *field.Path, x []interface{}, s *Schema) field.ErrorList {
	for i, e := range x {
		if _, ok := e.(map[string]interface{}); e != nil && !ok {
			return field.ErrorList{field.Invalid(p.Index(i), e, "must be an object for an array of list-type map")}
		}
	}
	type unspecified struct{}
	keys := make([]interface{}, len(x))
	for i, e := range x {
		m, _ := e.(map[string]interface{})
		if len(s.ListMapKeys) == 1 {
			// One key field: its values compare as they are.
			keys[i] = unspecified{}
			if kv, ok := m[s.ListMapKeys[0]]; ok {
				keys[i] = kv
			}
			continue
		}
		key := map[string]interface{}{}
		for _, k := range s.ListMapKeys {
			if kv, ok := m[k]; ok {
				key[k] = kv
			}
		}
		keys[i] = key
	}
	var errs field.ErrorList
	for _, i := range duplicates(keys) {
		dup := keys[i]
		switch k := keys[i].(type) {
		case unspecified:
			dup = map[string]interface{}{}
		case map[string]interface{}:
		default:
			dup = map[string]interface{}{s.ListMapKeys[0]: k}
		}
		errs = append(errs, field.Duplicate(p.Index(i), dup))
	}
	return errs
}

// duplicates returns the indexes of the second occurrence of each value
// met more than once, as kube reports them: scalars equal as Go values
// (1 and 1.0 differ), objects and lists equal as JSON.
func duplicates(x []interface{}) []int {
	if len(x) < 2 {
		return nil
	}
	scalars := make(map[interface{}]int, len(x))
	compounds := make(map[string]int, len(x))
	var dups []int
	for i, e := range x {
		var times int
		switch e.(type) {
		case map[string]interface{}, []interface{}:
			k, err := json.Marshal(e)
			if err != nil {
				continue
			}
			compounds[string(k)]++
			times = compounds[string(k)]
		default:
			scalars[e]++
			times = scalars[e]
		}
		if times == 2 {
			dups = append(dups, i)
		}
	}
	return dups
}

func asInt64(x interface{}) int64 {
	switch n := x.(type) {
	case int64:
		return n
	case int:
		return int64(n)
	case int32:
		return int64(n)
	}
	f, _ := toFloat(x)
	return int64(f)
}

// inEnum reports whether x is one of the enum's values as kube compares
// them: x converted to the Go type of the entry, when it converts.
func inEnum(x interface{}, enum []interface{}) bool {
	xv := reflect.ValueOf(x)
	for _, e := range enum {
		et := reflect.TypeOf(e)
		if et == nil || !xv.IsValid() || !xv.Type().ConvertibleTo(et) {
			continue
		}
		if reflect.DeepEqual(xv.Convert(et).Interface(), e) {
			return true
		}
	}
	return false
}
