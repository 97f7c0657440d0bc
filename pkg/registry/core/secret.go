package core

import (
	"crypto/tls"
	"encoding/json"
	"reflect"
	"time"

	corev1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/cronplane/cronplane/pkg/codec"
	"github.com/cronplane/cronplane/pkg/registry/generic"
	"github.com/cronplane/cronplane/pkg/registry/rest"
)

// redacted stands for a secret value in error messages, as kube words it.
const redacted = "<secret contents redacted>"

// SecretResource registers core/v1 secrets. stringData is write-only: it
// is folded into data when a body is decoded and never stored.
func SecretResource() *generic.Resource {
	gvk := corev1.SchemeGroupVersion.WithKind("Secret")
	newFunc := func() runtime.Object { return &corev1.Secret{} }
	return &generic.Resource{
		Resource: rest.Resource{
			GroupVersionKind: gvk,
			Plural:           "secrets",
			Singular:         "secret",
			Namespaced:       true,
			New:              newFunc,
			NewList:          func() runtime.Object { return &corev1.SecretList{} },
			Table:            secretTable,
			Default:          defaultSecret,
		},
		Codec:    codec.Protobuf(gvk, newFunc),
		Strategy: secretStrategy{},
		SelectableFields: func(obj runtime.Object) fields.Set {
			return fields.Set{"type": string(obj.(*corev1.Secret).Type)}
		},
		FieldLabels: generic.SupportedFieldLabels("metadata.name", "metadata.namespace", "type"),
	}
}

type secretStrategy struct{ generic.DefaultStrategy }

// defaultSecret applies kube's v1 default type, Opaque, and what kube's
// conversion of a v1 Secret does on every decode: each stringData entry
// replaces the data entry of its key, and stringData is dropped.
func defaultSecret(obj runtime.Object) {
	s := obj.(*corev1.Secret)
	if s.Type == "" {
		s.Type = corev1.SecretTypeOpaque
	}
	if len(s.StringData) > 0 {
		if s.Data == nil {
			s.Data = map[string][]byte{}
		}
		for k, v := range s.StringData {
			s.Data[k] = []byte(v)
		}
	}
	s.StringData = nil
}

// PrepareForUpdate keeps the stored type when none is given, as kube
// does; the v1 default makes that rare.
func (secretStrategy) PrepareForUpdate(obj, old runtime.Object) {
	if s := obj.(*corev1.Secret); s.Type == "" {
		s.Type = old.(*corev1.Secret).Type
	}
}

func (secretStrategy) Validate(obj runtime.Object) field.ErrorList {
	s := obj.(*corev1.Secret)
	return append(validateKubeFinalizers(&s.ObjectMeta), validateSecretData(s)...)
}

// ValidateUpdate checks what kube's secret update validation checks, in its
// order, metadata included (see configMapStrategy.ValidateUpdate).
func (secretStrategy) ValidateUpdate(obj, old runtime.Object) field.ErrorList {
	s, oldS := obj.(*corev1.Secret), old.(*corev1.Secret)
	errs := validateCoreMetaUpdate(&s.ObjectMeta, &oldS.ObjectMeta)
	errs = append(errs, apivalidation.ValidateImmutableField(s.Type, oldS.Type, field.NewPath("type"))...)
	if isImmutable(oldS.Immutable) {
		if !isImmutable(s.Immutable) {
			errs = append(errs, field.Forbidden(field.NewPath("immutable"), immutableMsg))
		}
		if !reflect.DeepEqual(s.Data, oldS.Data) {
			errs = append(errs, field.Forbidden(field.NewPath("data"), immutableMsg))
		}
	}
	errs = append(errs, validateCoreMeta(&s.ObjectMeta)...)
	return append(errs, validateSecretData(s)...)
}

// WarningsOnCreate and WarningsOnUpdate report a TLS secret whose key does
// not match its certificate; kube accepts it with a warning.
func (secretStrategy) WarningsOnCreate(obj runtime.Object) []string {
	return secretWarnings(obj.(*corev1.Secret))
}

func (secretStrategy) WarningsOnUpdate(obj, _ runtime.Object) []string {
	return secretWarnings(obj.(*corev1.Secret))
}

func secretWarnings(s *corev1.Secret) []string {
	if s.Type != corev1.SecretTypeTLS {
		return nil
	}
	if _, err := tls.X509KeyPair(s.Data[corev1.TLSCertKey], s.Data[corev1.TLSPrivateKeyKey]); err != nil {
		return []string{err.Error()}
	}
	return nil
}

// validateSecretData checks the keys and total size of data and the keys
// each built-in type requires. Types kube does not know, and
// bootstrap.kubernetes.io/token (whose format only its consumers check),
// may hold anything.
func validateSecretData(s *corev1.Secret) field.ErrorList {
	var errs field.ErrorList
	dataPath := field.NewPath("data")
	size := 0
	for _, key := range sortedKeys(s.Data) {
		for _, msg := range validation.IsConfigMapKey(key) {
			errs = append(errs, field.Invalid(dataPath.Key(key), key, msg))
		}
		size += len(s.Data[key])
	}
	if size > maxDataSize {
		errs = append(errs, field.TooLong(dataPath, "", maxDataSize))
	}
	required := func(key string) {
		errs = append(errs, field.Required(dataPath.Key(key), ""))
	}
	wellFormedJSON := func(key string) {
		value, ok := s.Data[key]
		if !ok {
			required(key)
			return
		}
		if err := json.Unmarshal(value, &map[string]interface{}{}); err != nil {
			errs = append(errs, field.Invalid(dataPath.Key(key), redacted, err.Error()))
		}
	}
	switch s.Type {
	case corev1.SecretTypeServiceAccountToken:
		// The token and the account's uid come later, from a controller.
		if s.Annotations[corev1.ServiceAccountNameKey] == "" {
			errs = append(errs, field.Required(field.NewPath("metadata", "annotations").Key(corev1.ServiceAccountNameKey), ""))
		}
	case corev1.SecretTypeDockercfg:
		wellFormedJSON(corev1.DockerConfigKey)
	case corev1.SecretTypeDockerConfigJson:
		wellFormedJSON(corev1.DockerConfigJsonKey)
	case corev1.SecretTypeBasicAuth:
		// Either may be empty, but one of them must be there.
		_, user := s.Data[corev1.BasicAuthUsernameKey]
		_, password := s.Data[corev1.BasicAuthPasswordKey]
		if !user && !password {
			required(corev1.BasicAuthUsernameKey)
			required(corev1.BasicAuthPasswordKey)
		}
	case corev1.SecretTypeSSHAuth:
		if len(s.Data[corev1.SSHAuthPrivateKey]) == 0 {
			required(corev1.SSHAuthPrivateKey)
		}
	case corev1.SecretTypeTLS:
		if _, ok := s.Data[corev1.TLSCertKey]; !ok {
			required(corev1.TLSCertKey)
		}
		if _, ok := s.Data[corev1.TLSPrivateKeyKey]; !ok {
			required(corev1.TLSPrivateKeyKey)
		}
	}
	return errs
}

var secretTable = &rest.TableSpec{
	Columns: []metav1.TableColumnDefinition{
		rest.NameColumn,
		{Name: "Type", Type: "string", Description: corev1.Secret{}.SwaggerDoc()["type"]},
		{Name: "Data", Type: "string", Description: corev1.Secret{}.SwaggerDoc()["data"]},
		rest.AgeColumn,
	},
	Cells: func(obj runtime.Object, now time.Time) []interface{} {
		s := obj.(*corev1.Secret)
		return []interface{}{s.Name, string(s.Type), int64(len(s.Data)), rest.Age(s.CreationTimestamp, now)}
	},
}
