package schema

import (
	"reflect"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

// An object's top-level fields, by their JSON names, are the properties
// of its schema's root: an unstructured object's map entries, or the
// struct fields of a Go type that FromGoType reads the same way. The
// functions below let the status subresource split objects of both kinds
// alike, without knowing their types.

// FieldNames returns the names of obj's top-level fields: for a Go type
// every one it declares, for an unstructured object those it holds.
func FieldNames(obj runtime.Object) []string {
	if u, ok := obj.(*unstructured.Unstructured); ok {
		names := make([]string, 0, len(u.Object))
		for k := range u.Object {
			names = append(names, k)
		}
		return names
	}
	fields := goFieldsOf(reflect.TypeOf(obj).Elem())
	names := make([]string, len(fields))
	for i, f := range fields {
		names[i] = f.name
	}
	return names
}

// CopyFields sets each top-level field of obj for which take holds to
// its value in from, a deep copy; a field from lacks is removed (a Go
// type's set to its zero value). obj and from are of one type.
func CopyFields(obj, from runtime.Object, take func(name string) bool) {
	if u, ok := obj.(*unstructured.Unstructured); ok {
		f := from.(*unstructured.Unstructured)
		for k := range u.Object {
			if _, inFrom := f.Object[k]; take(k) && !inFrom {
				delete(u.Object, k)
			}
		}
		for k, v := range f.Object {
			if take(k) {
				u.Object[k] = runtime.DeepCopyJSONValue(v)
			}
		}
		return
	}
	dst, src := reflect.ValueOf(obj).Elem(), reflect.ValueOf(from).Elem()
	// copied is a deep copy of from, made only for a field that cannot be
	// copied on its own.
	var copied reflect.Value
	for _, f := range goFieldsOf(dst.Type()) {
		if !take(f.name) {
			continue
		}
		d := dst.FieldByIndex(f.index)
		if deepCopyField(d, src.FieldByIndex(f.index)) {
			continue
		}
		if !copied.IsValid() {
			copied = reflect.ValueOf(from.DeepCopyObject()).Elem()
		}
		d.Set(copied.FieldByIndex(f.index))
	}
}

// deepCopyField sets d to a deep copy of s, an addressable field of the
// same type, when the field's type can copy itself (a generated
// DeepCopyInto) or holds no references, and reports whether it did.
func deepCopyField(d, s reflect.Value) bool {
	if !holdsReferences(s.Type()) {
		d.Set(s)
		return true
	}
	m := s.Addr().MethodByName("DeepCopyInto")
	if !m.IsValid() || m.Type().NumIn() != 1 || m.Type().In(0) != d.Addr().Type() || m.Type().NumOut() != 0 {
		return false
	}
	m.Call([]reflect.Value{d.Addr()})
	return true
}

// holdsReferences reports whether a value of type t can share memory
// with a copy of it made by assignment.
func holdsReferences(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.Struct:
		for i := 0; i < t.NumField(); i++ {
			if holdsReferences(t.Field(i).Type) {
				return true
			}
		}
		return false
	case reflect.Array:
		return holdsReferences(t.Elem())
	case reflect.Bool, reflect.String, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Float32, reflect.Float64, reflect.Complex64, reflect.Complex128:
		return false
	}
	return true
}

// FieldsDiffer reports whether a and b, of one type, differ semantically
// in a top-level field for which consider holds.
func FieldsDiffer(a, b runtime.Object, consider func(name string) bool) bool {
	if u, ok := a.(*unstructured.Unstructured); ok {
		o := b.(*unstructured.Unstructured)
		for _, m := range []map[string]interface{}{u.Object, o.Object} {
			for k := range m {
				if consider(k) && !equality.Semantic.DeepEqual(u.Object[k], o.Object[k]) {
					return true
				}
			}
		}
		return false
	}
	va, vb := reflect.ValueOf(a).Elem(), reflect.ValueOf(b).Elem()
	for _, f := range goFieldsOf(va.Type()) {
		if consider(f.name) && !equality.Semantic.DeepEqual(va.FieldByIndex(f.index).Interface(), vb.FieldByIndex(f.index).Interface()) {
			return true
		}
	}
	return false
}

// ClearField removes the top-level field name of obj (a Go type's is set
// to its zero value).
func ClearField(obj runtime.Object, name string) {
	if u, ok := obj.(*unstructured.Unstructured); ok {
		delete(u.Object, name)
		return
	}
	v := reflect.ValueOf(obj).Elem()
	for _, f := range goFieldsOf(v.Type()) {
		if f.name == name {
			fv := v.FieldByIndex(f.index)
			fv.Set(reflect.Zero(fv.Type()))
		}
	}
}

// goField is a top-level JSON field of a Go type: its name and the index
// path of the struct field (through inline members such as TypeMeta).
type goField struct {
	name  string
	index []int
}

// goFields caches goFieldsOf per type: the status endpoint asks on every
// write.
var goFields sync.Map // reflect.Type → []goField

func goFieldsOf(t reflect.Type) []goField {
	if fs, ok := goFields.Load(t); ok {
		return fs.([]goField)
	}
	var fs []goField
	var walk func(t reflect.Type, index []int)
	walk = func(t reflect.Type, index []int) {
		for i := 0; i < t.NumField(); i++ {
			name, inline, ok := jsonField(t.Field(i))
			if !ok {
				continue
			}
			at := append(append([]int(nil), index...), i)
			if ft := t.Field(i).Type; inline && ft.Kind() == reflect.Struct {
				walk(ft, at)
			} else if !inline {
				fs = append(fs, goField{name: name, index: at})
			}
		}
	}
	walk(t, nil)
	goFields.Store(t, fs)
	return fs
}

// jsonField reads a struct field as encoding/json does: its JSON name,
// whether its fields are inlined into the parent's, and whether it is
// encoded at all. API types inline only struct values (TypeMeta,
// ObjectMeta of a list item), which goFieldsOf follows; the schema
// builder also follows pointers.
func jsonField(f reflect.StructField) (name string, inline, ok bool) {
	name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
	if name == "-" || !f.IsExported() {
		return "", false, false
	}
	if strings.Contains(opts, "inline") || (f.Anonymous && name == "") {
		return "", true, true
	}
	if name == "" {
		name = f.Name
	}
	return name, false, true
}
