package core

import (
	"reflect"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/cronplane/cronplane/pkg/codec"
	"github.com/cronplane/cronplane/pkg/registry/generic"
	"github.com/cronplane/cronplane/pkg/registry/rest"
)

// maxDataSize bounds the summed size of the values of a ConfigMap or a
// Secret, as kube bounds it (1 MiB).
const maxDataSize = 1 * 1024 * 1024

// immutableMsg is kube's detail for a change that `immutable: true` forbids.
const immutableMsg = "field is immutable when `immutable` is set"

// ConfigMapResource registers core/v1 configmaps. They have no spec or
// status, so kube sets no generation on them.
func ConfigMapResource() *generic.Resource {
	gvk := corev1.SchemeGroupVersion.WithKind("ConfigMap")
	newFunc := func() runtime.Object { return &corev1.ConfigMap{} }
	return &generic.Resource{
		Resource: rest.Resource{
			GroupVersionKind: gvk,
			Plural:           "configmaps",
			Singular:         "configmap",
			ShortNames:       []string{"cm"},
			Namespaced:       true,
			New:              newFunc,
			NewList:          func() runtime.Object { return &corev1.ConfigMapList{} },
			Table:            configMapTable,
			Default:          defaultConfigMap,
		},
		Codec:    codec.Protobuf(gvk, newFunc),
		Strategy: configMapStrategy{},
	}
}

type configMapStrategy struct{ generic.DefaultStrategy }

// defaultConfigMap gives a configmap without data an empty data map, as kube's v1
// defaults do. It shows in no encoding, but it makes an empty data map and
// a missing one compare equal when an immutable configmap is updated.
func defaultConfigMap(obj runtime.Object) {
	cm := obj.(*corev1.ConfigMap)
	if cm.Data == nil {
		cm.Data = map[string]string{}
	}
}

func (configMapStrategy) Validate(obj runtime.Object) field.ErrorList {
	cm := obj.(*corev1.ConfigMap)
	return append(validateKubeFinalizers(&cm.ObjectMeta), validateConfigMapData(cm)...)
}

// ValidateUpdate checks what kube's configmap update validation checks, in
// its order. kube checks metadata once more than the store does, so each
// metadata error appears in the causes as many times as kube lists it.
func (configMapStrategy) ValidateUpdate(obj, old runtime.Object) field.ErrorList {
	cm, oldCM := obj.(*corev1.ConfigMap), old.(*corev1.ConfigMap)
	errs := validateCoreMetaUpdate(&cm.ObjectMeta, &oldCM.ObjectMeta)
	if isImmutable(oldCM.Immutable) {
		if !isImmutable(cm.Immutable) {
			errs = append(errs, field.Forbidden(field.NewPath("immutable"), immutableMsg))
		}
		if !reflect.DeepEqual(cm.Data, oldCM.Data) {
			errs = append(errs, field.Forbidden(field.NewPath("data"), immutableMsg))
		}
		if !reflect.DeepEqual(cm.BinaryData, oldCM.BinaryData) {
			errs = append(errs, field.Forbidden(field.NewPath("binaryData"), immutableMsg))
		}
	}
	errs = append(errs, validateCoreMeta(&cm.ObjectMeta)...)
	return append(errs, validateConfigMapData(cm)...)
}

func isImmutable(b *bool) bool { return b != nil && *b }

// validateConfigMapData checks the keys of data and binaryData and their
// total size. Keys are visited in order, so that the errors come in an
// order kube's (map-ordered) validation may give.
func validateConfigMapData(cm *corev1.ConfigMap) field.ErrorList {
	var errs field.ErrorList
	size := 0
	dataPath := field.NewPath("data")
	for _, key := range sortedKeys(cm.Data) {
		for _, msg := range validation.IsConfigMapKey(key) {
			errs = append(errs, field.Invalid(dataPath.Key(key), key, msg))
		}
		if _, dup := cm.BinaryData[key]; dup {
			errs = append(errs, field.Invalid(dataPath.Key(key), key, "duplicate of key present in binaryData"))
		}
		size += len(cm.Data[key])
	}
	binaryPath := field.NewPath("binaryData")
	for _, key := range sortedKeys(cm.BinaryData) {
		for _, msg := range validation.IsConfigMapKey(key) {
			errs = append(errs, field.Invalid(binaryPath.Key(key), key, msg))
		}
		size += len(cm.BinaryData[key])
	}
	if size > maxDataSize {
		// kube names the whole object, with an empty path that prints "[]".
		errs = append(errs, field.TooLong(field.NewPath(""), cm, maxDataSize))
	}
	return errs
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// standardFinalizers are the finalizer names of core objects that need no
// domain.
var standardFinalizers = map[string]bool{
	string(corev1.FinalizerKubernetes): true,
	metav1.FinalizerOrphanDependents:   true,
	metav1.FinalizerDeleteDependents:   true,
}

// validateKubeFinalizers is the check kube adds to the metadata of core
// objects: a finalizer name without a domain must be a standard one.
func validateKubeFinalizers(m *metav1.ObjectMeta) field.ErrorList {
	var errs field.ErrorList
	for i, f := range m.Finalizers {
		if !strings.Contains(f, "/") && !standardFinalizers[f] {
			errs = append(errs, field.Invalid(field.NewPath("metadata", "finalizers").Index(i), f, "name is neither a standard finalizer name nor is it fully qualified"))
		}
	}
	return errs
}

// validateCoreMeta and validateCoreMetaUpdate are kube's metadata checks of
// a core object, which its update validation repeats after the checks every
// resource gets.
func validateCoreMeta(m *metav1.ObjectMeta) field.ErrorList {
	errs := apivalidation.ValidateObjectMeta(m, true, apivalidation.NameIsDNSSubdomain, field.NewPath("metadata"))
	return append(errs, validateKubeFinalizers(m)...)
}

func validateCoreMetaUpdate(m, old *metav1.ObjectMeta) field.ErrorList {
	errs := apivalidation.ValidateObjectMetaUpdate(m, old, field.NewPath("metadata"))
	return append(errs, validateKubeFinalizers(m)...)
}

var configMapTable = &rest.TableSpec{
	Columns: []metav1.TableColumnDefinition{
		rest.NameColumn,
		{Name: "Data", Type: "string", Description: corev1.ConfigMap{}.SwaggerDoc()["data"]},
		rest.AgeColumn,
	},
	Cells: func(obj runtime.Object, now time.Time) []interface{} {
		cm := obj.(*corev1.ConfigMap)
		return []interface{}{cm.Name, int64(len(cm.Data) + len(cm.BinaryData)), rest.Age(cm.CreationTimestamp, now)}
	},
}
