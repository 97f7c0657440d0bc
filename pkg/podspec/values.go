package podspec

import (
	"fmt"
	"reflect"
	"regexp"
	"sort"
	"strings"
)

// internalPackages are the names kube's internal types of an API
// package go by in Go syntax, where the versioned types say "v1".
var internalPackages = map[string]string{
	"k8s.io/api/core/v1":        "core",
	"k8s.io/api/batch/v1":       "batch",
	"k8s.io/api/flowcontrol/v1": "flowcontrol",
}

// InternalValue shows a value in a field error as kube does: kube
// validates its internal types, whose Go syntax names their package
// "core" or "batch" where the v1 types name it "v1" (meta/v1's types are
// "v1" in both). Pointers inside print as addresses, in kube too.
func InternalValue(v interface{}) fmt.Stringer { return internalValue{v} }

type internalValue struct{ v interface{} }

func (x internalValue) String() string {
	v := reflect.ValueOf(x.v)
	for v.Kind() == reflect.Pointer && !v.IsNil() {
		v = v.Elem()
	}
	renames := map[string]string{}
	collectInternalNames(v.Type(), renames, map[reflect.Type]bool{})
	s := fmt.Sprintf("%#v", v.Interface())
	if len(renames) == 0 {
		return s
	}
	names := make([]string, 0, len(renames))
	for name := range renames {
		names = append(names, regexp.QuoteMeta(name))
	}
	sort.Strings(names)
	re := regexp.MustCompile(`\bv1\.(` + strings.Join(names, "|") + `)\b`)
	return re.ReplaceAllStringFunc(s, func(m string) string {
		name := strings.TrimPrefix(m, "v1.")
		return renames[name] + "." + name
	})
}

// collectInternalNames maps the names of the versioned API types reachable
// from t to their internal package's name.
func collectInternalNames(t reflect.Type, into map[string]string, seen map[reflect.Type]bool) {
	if seen[t] {
		return
	}
	seen[t] = true
	if pkg, ok := internalPackages[t.PkgPath()]; ok && t.Name() != "" {
		into[t.Name()] = pkg
	}
	switch t.Kind() {
	case reflect.Pointer, reflect.Slice, reflect.Array:
		collectInternalNames(t.Elem(), into, seen)
	case reflect.Map:
		collectInternalNames(t.Key(), into, seen)
		collectInternalNames(t.Elem(), into, seen)
	case reflect.Struct:
		for i := 0; i < t.NumField(); i++ {
			collectInternalNames(t.Field(i).Type, into, seen)
		}
	}
}

// sortedKeys returns the keys of m in order, so that errors about a map
// come in a stable order (kube's follow Go's map order, which varies).
func sortedKeys[K ~string, V any](m map[K]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, string(k))
	}
	sort.Strings(keys)
	return keys
}
