package podspec

import (
	"fmt"
	"reflect"
	"sort"
	"strings"
)

// internalValue shows a struct in an error as kube does: kube validates
// its internal types, whose Go syntax names the package "core" where the
// v1 types name it "v1". Pointers inside print as addresses, in kube too.
type internalValue struct{ v interface{} }

func (x internalValue) String() string {
	v := reflect.ValueOf(x.v)
	for v.Kind() == reflect.Pointer && !v.IsNil() {
		v = v.Elem()
	}
	s := fmt.Sprintf("%#v", v.Interface())
	if rest, found := strings.CutPrefix(s, "v1."); found {
		s = "core." + rest
	}
	return strings.NewReplacer("(*v1.", "(*core.", "[]v1.", "[]core.").Replace(s)
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
