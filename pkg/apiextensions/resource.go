// Package apiextensions turns CustomResourceDefinitions into served
// resources and keeps their status, as the controllers inside
// kube-apiserver do: Resources builds the generic.Resource of each served
// version (schema, strategy, storage as JSON under the group, Table
// columns, the scale subresource, deprecation), and Controller decides
// the NamesAccepted, Established and Terminating conditions and deletes a
// definition's objects before the definition goes. The server
// (pkg/apiserver) installs what Resources returns.
package apiextensions

import (
	"context"
	"fmt"
	"reflect"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apimachinery/pkg/version"

	apiextensionsv1 "github.com/cronplane/cronplane/pkg/apis/apiextensions/v1"
	"github.com/cronplane/cronplane/pkg/codec"
	"github.com/cronplane/cronplane/pkg/jsonpath"
	"github.com/cronplane/cronplane/pkg/registry/generic"
	"github.com/cronplane/cronplane/pkg/registry/rest"
	cronschema "github.com/cronplane/cronplane/pkg/schema"
	"github.com/cronplane/cronplane/pkg/storage"
)

// Resources returns the resources crd serves, one per served version,
// all stored under <group>/<plural> in the storage version, validated as
// with kube's default feature gates. Creates are refused if crd is
// terminating; the Controller's Resources also refuses them once the
// definition starts terminating later.
func Resources(crd *apiextensionsv1.CustomResourceDefinition) ([]*generic.Resource, error) {
	terminating := crd.Status.IsTrue(apiextensionsv1.Terminating)
	return resources(crd, func() bool { return terminating }, false)
}

// resources builds the served versions' resources; terminating tells,
// at each create, whether the definition is being deleted; ratcheting is
// kube's CRDValidationRatcheting gate (see versionSchema).
func resources(crd *apiextensionsv1.CustomResourceDefinition, terminating func() bool, ratcheting bool) ([]*generic.Resource, error) {
	storageVersion := crd.Spec.StorageVersion()
	// Every version's schema, served or not: objects stored in any of
	// them are read with it.
	schemas := map[string]*versionSchema{}
	structural := map[string]*cronschema.Structural{}
	for i := range crd.Spec.Versions {
		v := &crd.Spec.Versions[i]
		if v.Schema == nil || v.Schema.OpenAPIV3Schema == nil {
			continue
		}
		vs, err := newVersionSchema(v.Schema.OpenAPIV3Schema, v.Served, ratcheting)
		if err != nil {
			if !v.Served && v.Name != storageVersion {
				continue
			}
			return nil, fmt.Errorf("schema of %s %s: %w", crd.Name, v.Name, err)
		}
		// A legacy definition keeps every field, as kube keeps them.
		vs.st.KeepUnknownFields = crd.Spec.PreserveUnknownFields
		schemas[v.Name], structural[v.Name] = vs, vs.st
	}
	gk := schema.GroupKind{Group: crd.Spec.Group, Kind: crd.Spec.Names.Kind}
	stored := storedCodec{Codec: codec.JSON(gk), schemas: structural}
	var out []*generic.Resource
	for i := range crd.Spec.Versions {
		v := &crd.Spec.Versions[i]
		if !v.Served {
			continue
		}
		out = append(out, versionResource(crd, v, storageVersion, schemas, stored, terminating))
	}
	return out, nil
}

// storedCodec reads custom objects as kube does from etcd: fitted to the
// schema of the version they were stored in (fields it does not name
// pruned) and defaulted by it, so that a default added after an object
// was written shows when it is read. The server reads a definition's
// objects anew when the definition changes.
type storedCodec struct {
	storage.Codec
	schemas map[string]*cronschema.Structural
}

func (c storedCodec) Decode(data []byte) (runtime.Object, error) {
	obj, err := c.Codec.Decode(data)
	if err != nil {
		return nil, err
	}
	u := obj.(*unstructured.Unstructured)
	if st := c.schemas[u.GroupVersionKind().Version]; st != nil {
		// An embedded resource's metadata that is not ObjectMeta was
		// refused when written; an object written elsewhere keeps it.
		if err := st.PruneStored(u.Object); err == nil {
			st.Default(u.Object)
		}
	}
	return u, nil
}

func versionResource(crd *apiextensionsv1.CustomResourceDefinition, v *apiextensionsv1.CustomResourceDefinitionVersion, storageVersion string,
	schemas map[string]*versionSchema, stored storedCodec, terminating func() bool) *generic.Resource {
	names := crd.Spec.Names
	gvk := schema.GroupVersionKind{Group: crd.Spec.Group, Version: v.Name, Kind: names.Kind}
	storageGVK := gvk
	storageGVK.Version = storageVersion
	vs := schemas[v.Name]
	if vs == nil {
		vs = &versionSchema{st: &cronschema.Structural{Root: &cronschema.Schema{Type: "object", PreserveUnknownFields: true}}}
	}
	// Kube applies defaults to every body it decodes and every object it
	// reads from storage.
	defaults := func(obj runtime.Object) {
		if u, ok := obj.(*unstructured.Unstructured); ok {
			vs.st.Default(u.Object)
		}
	}
	hasStatus := v.Subresources != nil && v.Subresources.Status != nil
	res := &generic.Resource{
		Resource: rest.Resource{
			GroupVersionKind: gvk,
			Plural:           names.Plural,
			Singular:         names.Singular,
			ShortNames:       names.ShortNames,
			Categories:       names.Categories,
			Namespaced:       crd.Spec.Scope == apiextensionsv1.NamespaceScoped,
			New: func() runtime.Object {
				u := &unstructured.Unstructured{}
				u.SetGroupVersionKind(gvk)
				return u
			},
			NewList: func() runtime.Object {
				l := &unstructured.UnstructuredList{}
				l.SetGroupVersionKind(gvk.GroupVersion().WithKind(names.ListKind))
				return l
			},
			Table: table(v.AdditionalPrinterColumns),
			// kube lists a custom resource's status before its scale.
			SubresourceOrder: []string{"status", "scale"},
			Schema:           vs.st,
			Default:          defaults,
		},
		StorageResource: crd.Spec.Group + "/" + names.Plural,
		StorageGVK:      storageGVK,
		Codec:           stored,
		Strategy:        strategy{hasStatus: hasStatus, schema: vs},

		UpdatesNeedResourceVersion: true,
		// kube's conversion of a custom resource's field labels refuses
		// all but the metadata's in its own words.
		FieldLabels: generic.SupportedFieldLabels("metadata.name", "metadata.namespace"),
		Conversion: &generic.Conversion{
			StorageCodec: stored,
			ToStorage:    convert(storageGVK, stored.schemas[storageVersion]),
			FromStorage:  convert(gvk, stored.schemas[v.Name]),
		},
	}
	if hasStatus {
		res.Subresources = map[string]generic.Strategy{"status": generic.StatusStrategy{
			KeepMetadata: true,
			ValidateStatus: func(obj, old runtime.Object) field.ErrorList {
				return vs.validateStatus(obj.(*unstructured.Unstructured).Object, old.(*unstructured.Unstructured).Object)
			},
		}}
	}
	if v.Deprecated {
		msg := defaultDeprecationWarning(crd, v.Name)
		if v.DeprecationWarning != nil && *v.DeprecationWarning != "" {
			msg = *v.DeprecationWarning
		}
		res.Deprecated = &rest.Deprecation{Message: msg}
	}
	var scale *apiextensionsv1.CustomResourceSubresourceScale
	if v.Subresources != nil && v.Subresources.Scale != nil {
		paths := *v.Subresources.Scale
		scale = &paths
	}
	gr := schema.GroupResource{Group: crd.Spec.Group, Resource: names.Plural}
	res.Serve = func(s *generic.Store) (rest.Storage, map[string]rest.Storage) {
		subs := map[string]rest.Storage{}
		if hasStatus {
			subs["status"] = s.Subresource("status")
		}
		if scale != nil {
			subs["scale"] = &ScaleStorage{store: s, paths: *scale, fields: scaleFields(crd, v.Name)}
		}
		return &customStore{Store: s, resource: gr, terminating: terminating}, subs
	}
	return res
}

// customStore serves a custom resource: the generic store, except that,
// as in kube, a create (POST) is refused while the definition is
// terminating. kube refuses it before it reads the body; here the store
// refuses it, so a body that does not decode, or a namespace that
// admission refuses, is answered first.
type customStore struct {
	*generic.Store
	resource    schema.GroupResource
	terminating func() bool
}

// crVerbs are a custom resource's verbs in the order kube's discovery
// lists them.
var crVerbs = []string{"delete", "deletecollection", "get", "list", "patch", "create", "update", "watch"}

func (s *customStore) DiscoveryVerbs() []string { return append([]string(nil), crVerbs...) }

func (s *customStore) Create(ctx context.Context, namespace string, obj runtime.Object, validate rest.ValidateObjectFunc, opts *metav1.CreateOptions) (runtime.Object, error) {
	if s.terminating() {
		err := apierrors.NewMethodNotSupported(s.resource, "create")
		err.ErrStatus.Message = "create not allowed while custom resource definition is terminating"
		return nil, err
	}
	return s.Store.Create(ctx, namespace, obj, validate, opts)
}

// defaultDeprecationWarning is kube's warning for a deprecated version
// without its own: the replacement named is the most preferred served
// version that is not deprecated and is newer than the deprecated one.
func defaultDeprecationWarning(crd *apiextensionsv1.CustomResourceDefinition, deprecated string) string {
	msg := fmt.Sprintf("%s/%s %s is deprecated", crd.Spec.Group, deprecated, crd.Spec.Names.Kind)
	replacement := ""
	for _, v := range crd.Spec.Versions {
		if !v.Served || v.Deprecated || version.CompareKubeAwareVersionStrings(deprecated, v.Name) >= 0 {
			continue
		}
		if replacement == "" || version.CompareKubeAwareVersionStrings(v.Name, replacement) > 0 {
			replacement = v.Name
		}
	}
	if replacement == "" {
		return msg
	}
	return fmt.Sprintf("%s; use %s/%s %s", msg, crd.Spec.Group, replacement, crd.Spec.Names.Kind)
}

// convert is conversion None to gvk: apiVersion rewritten, and, as kube
// fits a converted object to its new version's schema st (nil: none),
// the fields st does not name pruned.
func convert(gvk schema.GroupVersionKind, st *cronschema.Structural) func(runtime.Object) (runtime.Object, error) {
	return func(obj runtime.Object) (runtime.Object, error) {
		u, ok := obj.(*unstructured.Unstructured)
		if !ok {
			return nil, fmt.Errorf("custom resource is %T, not unstructured", obj)
		}
		if u.GroupVersionKind() == gvk {
			return u, nil
		}
		out := u.DeepCopy()
		out.SetGroupVersionKind(gvk)
		if st != nil {
			if _, err := st.Prune(out.Object); err != nil {
				return nil, err
			}
		}
		return out, nil
	}
}

// strategy is a custom resource's main-resource strategy. With a status
// subresource the status is the subresource's and generation counts
// changes outside metadata and status; without, generation counts every
// change outside metadata.
type strategy struct {
	generic.DefaultStrategy
	hasStatus bool
	schema    *versionSchema
}

// Validate checks the object against the version's schema and rules;
// metadata is the store's.
func (s strategy) Validate(obj runtime.Object) field.ErrorList {
	return s.schema.validate(context.Background(), obj.(*unstructured.Unstructured).Object, nil)
}

func (s strategy) ValidateUpdate(obj, old runtime.Object) field.ErrorList {
	return s.ValidateUpdateContext(context.Background(), obj, old)
}

// ValidateUpdateContext is ValidateUpdate warning the client of ctx of
// the violations validation ratcheting forgives.
func (s strategy) ValidateUpdateContext(ctx context.Context, obj, old runtime.Object) field.ErrorList {
	return s.schema.validate(ctx, obj.(*unstructured.Unstructured).Object, old.(*unstructured.Unstructured).Object)
}

func (s strategy) PrepareForCreate(obj runtime.Object) {
	if s.hasStatus {
		generic.SpecStatusStrategy{}.PrepareForCreate(obj)
		return
	}
	if m, err := meta.Accessor(obj); err == nil {
		m.SetGeneration(1)
	}
}

func (s strategy) ResetsField(name string) bool { return s.hasStatus && name == "status" }

func (s strategy) PrepareForUpdate(obj, old runtime.Object) {
	if s.hasStatus {
		generic.SpecStatusStrategy{}.PrepareForUpdate(obj, old)
		return
	}
	n, o := obj.(*unstructured.Unstructured), old.(*unstructured.Unstructured)
	if !reflect.DeepEqual(withoutMetadata(n.Object), withoutMetadata(o.Object)) {
		n.SetGeneration(o.GetGeneration() + 1)
	}
}

func withoutMetadata(obj map[string]interface{}) map[string]interface{} {
	out := make(map[string]interface{}, len(obj))
	for k, v := range obj {
		if k != "metadata" {
			out[k] = v
		}
	}
	return out
}

// ageColumn is what kube shows of a version without printer columns.
var ageColumn = apiextensionsv1.CustomResourceColumnDefinition{Name: "Age", Type: "date",
	Description: metav1.ObjectMeta{}.SwaggerDoc()["creationTimestamp"], JSONPath: ".metadata.creationTimestamp"}

// column is a printer column with its parsed path.
type column struct {
	def  apiextensionsv1.CustomResourceColumnDefinition
	path *jsonpath.JSONPath
}

// table renders a version's printer columns after the name, as kube's
// Table for custom resources: without columns, the age; with columns,
// those up to the first whose path does not parse.
func table(defs []apiextensionsv1.CustomResourceColumnDefinition) *rest.TableSpec {
	if len(defs) == 0 {
		defs = []apiextensionsv1.CustomResourceColumnDefinition{ageColumn}
	}
	headers := []metav1.TableColumnDefinition{rest.NameColumn}
	var columns []column
	for _, c := range defs {
		path, err := jsonpath.Parse("{" + c.JSONPath + "}")
		if err != nil {
			break
		}
		path.AllowMissingKeys(true)
		desc := c.Description
		if desc == "" {
			desc = "Custom resource definition column (in JSONPath format): " + c.JSONPath
		}
		headers = append(headers, metav1.TableColumnDefinition{Name: c.Name, Type: c.Type, Format: c.Format, Description: desc, Priority: c.Priority})
		columns = append(columns, column{def: c, path: path})
	}
	return &rest.TableSpec{
		Columns: headers,
		Cells: func(obj runtime.Object, now time.Time) []interface{} {
			u := obj.(*unstructured.Unstructured)
			cells := []interface{}{u.GetName()}
			for _, c := range columns {
				cells = append(cells, cell(u.Object, c, now))
			}
			return cells
		},
	}
}

// cell is a column's value: the first value its path finds, as the
// column's type shows it; nil when the path finds nothing, fails, or
// finds a value of another type.
func cell(obj map[string]interface{}, c column, now time.Time) interface{} {
	results, err := c.path.FindResults(obj)
	if err != nil || len(results) == 0 || len(results[0]) == 0 {
		return nil
	}
	v := results[0][0]
	if c.def.Type == "string" {
		s, err := jsonpath.Text(v)
		if err != nil {
			return nil
		}
		return s
	}
	switch c.def.Type {
	case "integer":
		switch v := v.(type) {
		case int64:
			return v
		case float64:
			return int64(v)
		}
	case "number":
		switch v := v.(type) {
		case int64:
			return float64(v)
		case float64:
			return v
		}
	case "boolean":
		if b, ok := v.(bool); ok {
			return b
		}
	case "date":
		if s, ok := v.(string); ok {
			var t metav1.Time
			if err := t.UnmarshalQueryParameter(s); err != nil {
				return "<invalid>"
			}
			return rest.Age(t, now)
		}
	}
	return nil
}
