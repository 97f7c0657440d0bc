package schema

import (
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"regexp"
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
// or float64), against the value validations of st, as kube validates a
// custom resource: errors carry kube's words and paths ("spec.replicas in
// body should be less than or equal to 10"). A value of the wrong type
// gets only that error. Fields the schema does not name are not looked
// at: pruning has removed them, or the schema preserves them.
func (st *Structural) Validate(obj map[string]interface{}) field.ErrorList {
	v := &validator{st: st}
	v.value(nil, obj, st.Resolve(st.Root))
	return v.errs
}

// validator walks a value with paths relative to it, as kube's validator
// names them in messages; base, when set, prefixes the paths of the
// errors (a default's, inside the CRD).
type validator struct {
	st   *Structural
	base *field.Path
	errs field.ErrorList
}

func (v *validator) add(err *field.Error) {
	if v.base != nil {
		switch {
		case err.Field == "<nil>":
			err.Field = v.base.String()
		case strings.HasPrefix(err.Field, "["):
			err.Field = v.base.String() + err.Field
		default:
			err.Field = v.base.String() + "." + err.Field
		}
	}
	v.errs = append(v.errs, err)
}

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

func (v *validator) value(p *field.Path, x interface{}, s *Schema) {
	if s == nil {
		return
	}
	if !v.typeOK(p, x, s) {
		return
	}
	if x == nil {
		return
	}
	switch x := x.(type) {
	case string:
		v.str(p, x, s)
	case map[string]interface{}:
		v.object(p, x, s)
	case []interface{}:
		v.array(p, x, s)
	default:
		if f, ok := toFloat(x); ok {
			v.number(p, x, f, s)
		}
	}
	if len(s.Enum) > 0 && !inEnum(x, s.Enum) {
		values := make([]string, 0, len(s.Enum))
		for _, e := range s.Enum {
			if es, ok := e.(string); ok {
				values = append(values, es)
			} else {
				j, _ := json.Marshal(e)
				values = append(values, string(j))
			}
		}
		v.add(field.NotSupported(p, x, values))
	}
}

// typeOK reports whether x has s's type, adding kube's error when not.
func (v *validator) typeOK(p *field.Path, x interface{}, s *Schema) bool {
	got := jsonType(x)
	var want []string
	switch {
	case s.IntOrString:
		want = []string{"integer", "string"}
	case s.Type != "":
		want = []string{s.Type}
	}
	if x == nil {
		if s.Nullable || len(want) == 0 {
			return true
		}
	} else if len(want) == 0 {
		return true
	}
	for _, w := range want {
		if w == got || (w == "number" && got == "integer") || (w == "integer" && got == "number" && isIntegral(x)) {
			return true
		}
	}
	wantS := strings.Join(want, ",")
	v.add(field.TypeInvalid(p, got, fmt.Sprintf("%s in body must be of type %s: %q", name(p), wantS, got)))
	return false
}

func isIntegral(x interface{}) bool {
	f, ok := x.(float64)
	return ok && f == math.Trunc(f) && !math.IsInf(f, 0)
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

func (v *validator) str(p *field.Path, x string, s *Schema) {
	n := int64(utf8.RuneCountInString(x))
	if s.MaxLength != nil && n > *s.MaxLength {
		v.add(field.TooLongMaxLength(p, x, int(*s.MaxLength)))
	}
	if s.MinLength != nil && n < *s.MinLength {
		v.add(field.Invalid(p, x, fmt.Sprintf("%s in body should be at least %d chars long", name(p), *s.MinLength)))
	}
	if s.Pattern != "" {
		if re, err := compiledPattern(s.Pattern); err == nil && !re.MatchString(x) {
			v.add(field.Invalid(p, x, fmt.Sprintf("%s in body should match '%s'", name(p), s.Pattern)))
		}
	}
	if s.Format != "" {
		if check := formatChecker(s.Format); check != nil && !check(x) {
			v.add(field.TypeInvalid(p, x, fmt.Sprintf("%s in body must be of type %s: %q", name(p), s.Format, x)))
		}
	}
}

// number checks the bounds. Kube compares an integer value with the
// bound truncated to an integer, and names the truncated bound: 2 against
// maximum 1.5 "should be less than or equal to 1".
func (v *validator) number(p *field.Path, x interface{}, f float64, s *Schema) {
	bound := func(b float64) float64 {
		if jsonType(x) == "integer" {
			return float64(int64(b))
		}
		return b
	}
	if s.Maximum != nil {
		lim := bound(*s.Maximum)
		if s.ExclusiveMaximum && f >= lim {
			v.add(field.Invalid(p, x, fmt.Sprintf("%s in body should be less than %v", name(p), lim)))
		} else if !s.ExclusiveMaximum && f > lim {
			v.add(field.Invalid(p, x, fmt.Sprintf("%s in body should be less than or equal to %v", name(p), lim)))
		}
	}
	if s.Minimum != nil {
		lim := bound(*s.Minimum)
		if s.ExclusiveMinimum && f <= lim {
			v.add(field.Invalid(p, x, fmt.Sprintf("%s in body should be greater than %v", name(p), lim)))
		} else if !s.ExclusiveMinimum && f < lim {
			v.add(field.Invalid(p, x, fmt.Sprintf("%s in body should be greater than or equal to %v", name(p), lim)))
		}
	}
}

func (v *validator) array(p *field.Path, x []interface{}, s *Schema) {
	n := int64(len(x))
	if s.MinItems != nil && n < *s.MinItems {
		v.add(field.Invalid(p, n, fmt.Sprintf("%s in body should have at least %d items", name(p), *s.MinItems)))
	}
	if s.MaxItems != nil && n > *s.MaxItems {
		v.add(field.TooMany(p, int(n), int(*s.MaxItems)))
	}
	if s.UniqueItems && len(duplicates(x)) > 0 {
		v.add(field.Invalid(p, x, fmt.Sprintf("%s in body shouldn't contain duplicates", name(p))))
	}
	items := v.st.Resolve(s.Items)
	for i, e := range x {
		v.value(p.Index(i), e, items)
	}
	switch s.ListType {
	case "set":
		for _, i := range duplicates(x) {
			v.add(field.Duplicate(p.Index(i), x[i]))
		}
	case "map":
		v.listMap(p, x, s)
	}
}

// listMap reports the entries of a list-type map whose keys an earlier
// entry already has, the duplicate value as kube words it: the key alone
// for one key field, else the map of key fields.
func (v *validator) listMap(p *field.Path, x []interface{}, s *Schema) {
	keys := make([]interface{}, len(x))
	for i, e := range x {
		m, ok := e.(map[string]interface{})
		if e != nil && !ok {
			v.add(field.Invalid(p.Index(i), e, "must be an object for an array of list-type map"))
			return
		}
		key := map[string]interface{}{}
		for _, k := range s.ListMapKeys {
			if kv, ok := m[k]; ok {
				key[k] = kv
			}
		}
		keys[i] = key
	}
	for _, i := range duplicates(keys) {
		dup := keys[i]
		if len(s.ListMapKeys) == 1 {
			if kv, ok := keys[i].(map[string]interface{})[s.ListMapKeys[0]]; ok {
				dup = map[string]interface{}{s.ListMapKeys[0]: kv}
			}
		}
		v.add(field.Duplicate(p.Index(i), dup))
	}
}

// duplicates returns the indexes of the elements equal to an earlier one.
func duplicates(x []interface{}) []int {
	if len(x) < 2 {
		return nil
	}
	seen := make(map[string]bool, len(x))
	var dups []int
	for i, e := range x {
		k, err := json.Marshal(normalize(e))
		if err != nil {
			continue
		}
		if seen[string(k)] {
			dups = append(dups, i)
		}
		seen[string(k)] = true
	}
	return dups
}

func (v *validator) object(p *field.Path, x map[string]interface{}, s *Schema) {
	n := int64(len(x))
	if s.MaxProperties != nil && n > *s.MaxProperties {
		v.add(field.TooMany(p, int(n), int(*s.MaxProperties)))
	}
	if s.MinProperties != nil && n < *s.MinProperties {
		v.add(field.Invalid(p, n, fmt.Sprintf("%s in body should have at least %d properties", name(p), *s.MinProperties)))
	}
	for _, r := range s.Required {
		if _, ok := x[r]; !ok {
			v.add(field.Required(child(p, r), ""))
		}
	}
	if s.EmbeddedResource {
		v.embedded(p, x)
	}
	keys := make([]string, 0, len(x))
	for k := range x {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if ps, ok := s.Properties[k]; ok {
			v.value(child(p, k), x[k], v.st.Resolve(ps))
		} else if s.AdditionalProperties != nil {
			v.value(child(p, k), x[k], v.st.Resolve(s.AdditionalProperties))
		}
	}
}

// embedded checks an x-kubernetes-embedded-resource object as kube
// checks an object of its own: apiVersion and kind set and well formed,
// metadata a valid ObjectMeta.
func (v *validator) embedded(p *field.Path, x map[string]interface{}) {
	if _, ok := x["apiVersion"]; !ok {
		v.add(field.Required(child(p, "apiVersion"), "must not be empty"))
	}
	if _, ok := x["kind"]; !ok {
		v.add(field.Required(child(p, "kind"), "must not be empty"))
	}
	if av, ok := x["apiVersion"]; ok {
		switch s, isStr := av.(string); {
		case !isStr:
			v.add(field.Invalid(child(p, "apiVersion"), av, "must be a string"))
		case s == "":
			v.add(field.Invalid(child(p, "apiVersion"), s, "must not be empty"))
		default:
			if _, err := schema.ParseGroupVersion(s); err != nil {
				v.add(field.Invalid(child(p, "apiVersion"), s, err.Error()))
			}
		}
	}
	if k, ok := x["kind"]; ok {
		switch s, isStr := k.(string); {
		case !isStr:
			v.add(field.Invalid(child(p, "kind"), k, "must be a string"))
		case s == "":
			v.add(field.Invalid(child(p, "kind"), s, "must not be empty"))
		default:
			if errs := utilvalidation.IsDNS1035Label(strings.ToLower(s)); len(errs) > 0 {
				v.add(field.Invalid(child(p, "kind"), s, "may have mixed case, but should otherwise match: "+strings.Join(errs, ",")))
			}
		}
	}
	if md, ok := x["metadata"]; ok {
		m, isMap := md.(map[string]interface{})
		var meta metav1.ObjectMeta
		if !isMap {
			v.add(field.Invalid(child(p, "metadata"), md, "must be an object"))
			return
		}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(m, &meta); err != nil {
			v.add(field.Invalid(child(p, "metadata"), md, err.Error()))
			return
		}
		if meta.Name == "" {
			// An embedded object need not be named; ObjectMeta's
			// validation requires a name, so it gets a valid one.
			meta.Name = "fakename"
		}
		for _, err := range metavalidation.ValidateObjectMeta(&meta, meta.Namespace != "", path.ValidatePathSegmentName, child(p, "metadata")) {
			v.add(err)
		}
	}
}

// inEnum reports whether x is one of the enum's values, numbers equal
// whatever their Go type.
func inEnum(x interface{}, enum []interface{}) bool {
	nx := normalize(x)
	for _, e := range enum {
		if reflect.DeepEqual(nx, normalize(e)) {
			return true
		}
	}
	return false
}

// normalize turns every number in a decoded JSON value into float64 so
// that equal numbers compare equal.
func normalize(x interface{}) interface{} {
	switch x := x.(type) {
	case map[string]interface{}:
		out := make(map[string]interface{}, len(x))
		for k, v := range x {
			out[k] = normalize(v)
		}
		return out
	case []interface{}:
		out := make([]interface{}, len(x))
		for i, v := range x {
			out[i] = normalize(v)
		}
		return out
	}
	if f, ok := toFloat(x); ok {
		return f
	}
	return x
}
