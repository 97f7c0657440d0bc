package storage

import (
	"math/bits"
	"reflect"
	"sync"
	"time"
)

// MemSize estimates the heap memory a decoded object holds: the value its
// pointer points to and everything reachable from it through pointers,
// slices, strings, maps and interfaces, each allocation rounded up as the
// Go allocator rounds it. It is what the object costs once decoded, which
// for a typed object is several times the size of its protobuf bytes.
// Values shared between objects (time zones) are not counted; neither are
// aliases within one object (rare in decoded objects: counted twice).
func MemSize(obj any) int {
	v := reflect.ValueOf(obj)
	if !v.IsValid() {
		return 0
	}
	if v.Kind() == reflect.Pointer {
		return reach(v)
	}
	return allocSize(int(v.Type().Size())) + reach(v)
}

var (
	timeType     = reflect.TypeOf(time.Time{})
	locationType = reflect.TypeOf(time.Location{})
	// pointerFree caches, per type, whether a value of it can reach memory
	// beyond its own bytes.
	pointerFree sync.Map // reflect.Type -> bool
)

// reach is the memory v reaches beyond its own inline bytes.
func reach(v reflect.Value) int {
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			return 0
		}
		e := v.Elem()
		if e.Type() == locationType {
			return 0
		}
		return allocSize(int(e.Type().Size())) + reach(e)
	case reflect.String:
		return dataSize(v.Len())
	case reflect.Slice:
		if v.IsNil() {
			return 0
		}
		elem := v.Type().Elem()
		if isPointerFree(elem) {
			return dataSize(v.Cap() * int(elem.Size()))
		}
		n := allocSize(v.Cap() * int(elem.Size()))
		for i := 0; i < v.Len(); i++ {
			n += reach(v.Index(i))
		}
		return n
	case reflect.Map:
		if v.IsNil() {
			return 0
		}
		t := v.Type()
		n := mapSize(v.Len(), int(t.Key().Size()+t.Elem().Size()))
		if !isPointerFree(t.Key()) || !isPointerFree(t.Elem()) {
			for it := v.MapRange(); it.Next(); {
				n += reach(it.Key()) + reach(it.Value())
			}
		}
		return n
	case reflect.Interface:
		if v.IsNil() {
			return 0
		}
		e := v.Elem()
		if e.Kind() == reflect.Pointer || e.Kind() == reflect.Map {
			return reach(e)
		}
		// Other values are boxed when stored in an interface.
		return allocSize(int(e.Type().Size())) + reach(e)
	case reflect.Struct:
		if v.Type() == timeType || isPointerFree(v.Type()) {
			return 0
		}
		n := 0
		for i := 0; i < v.NumField(); i++ {
			n += reach(v.Field(i))
		}
		return n
	case reflect.Array:
		if isPointerFree(v.Type().Elem()) {
			return 0
		}
		n := 0
		for i := 0; i < v.Len(); i++ {
			n += reach(v.Index(i))
		}
		return n
	}
	return 0
}

// isPointerFree reports whether values of t reach nothing beyond their
// own bytes (time.Time's zone is shared, so it counts as free).
func isPointerFree(t reflect.Type) bool {
	if f, ok := pointerFree.Load(t); ok {
		return f.(bool)
	}
	var free bool
	switch t.Kind() {
	case reflect.Pointer, reflect.String, reflect.Slice, reflect.Map, reflect.Interface, reflect.Chan, reflect.Func, reflect.UnsafePointer:
		free = false
	case reflect.Struct:
		free = true
		if t != timeType {
			// A recursive type is not free: store false while looking.
			pointerFree.Store(t, false)
			for i := 0; i < t.NumField() && free; i++ {
				free = isPointerFree(t.Field(i).Type)
			}
		}
	case reflect.Array:
		free = isPointerFree(t.Elem())
	default:
		free = true
	}
	pointerFree.Store(t, free)
	return free
}

// mapSize approximates a map's own memory (Go's swiss tables): groups of
// eight slots and a control word, at most 7/8 full, and the map header.
func mapSize(n, slot int) int {
	const header = 48
	if n == 0 {
		return header
	}
	if n <= 8 {
		return header + allocSize(8*slot+8)
	}
	slots := 8
	for slots*7/8 < n {
		slots *= 2
	}
	return header + allocSize(slots*slot+slots)
}

// allocSize rounds n up to an allocation size, approximating the Go
// allocator's size classes: 8, 16, 24, then steps of 16 up to 128, then
// steps of an eighth of the power of two below n.
func allocSize(n int) int {
	switch {
	case n <= 0:
		return 0
	case n <= 8:
		return 8
	case n <= 24:
		return (n + 7) &^ 7
	case n <= 128:
		return (n + 15) &^ 15
	}
	step := 1 << (bits.Len(uint(n)) - 4)
	return (n + step - 1) &^ (step - 1)
}

// dataSize is allocSize for bytes without pointers (string and slice
// data): the allocator packs those under 16 bytes together.
func dataSize(n int) int {
	if n < 16 {
		return n
	}
	return allocSize(n)
}
