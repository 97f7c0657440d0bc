package handlers

import (
	"context"
	"encoding/json"
	"fmt"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"time"

	jsonpatch "github.com/evanphx/json-patch"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	sigsjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"

	"github.com/cronplane/cronplane/pkg/registry"
)

// patchTypes are the PATCH content types served.
var patchTypes = []string{string(types.JSONPatchType), string(types.MergePatchType), string(types.StrategicMergePatchType), string(types.ApplyPatchType)}

// patch applies a JSON, merge or strategic merge patch to the current
// object inside the store's update loop, so that a concurrent write makes
// it re-apply to the new state; the result goes through the same checks as
// a PUT.
func (c *call) patch() {
	dryRun, err := registry.IsDryRun(c.r.URL.Query()["dryRun"])
	if err != nil {
		c.fail(err)
		return
	}
	mt, _, err := mime.ParseMediaType(c.r.Header.Get("Content-Type"))
	if err != nil || !contains(patchTypes, mt) {
		c.fail(errUnsupportedMediaType(c.r.Header.Get("Content-Type"), patchTypes...))
		return
	}
	patch, err := readBody(c.r)
	if err != nil {
		c.fail(err)
		return
	}
	wo := registry.WriteOptions{DryRun: dryRun}
	if wo.FieldManager, err = c.fieldManager(); err != nil {
		c.fail(err)
		return
	}
	force, err := c.force(types.PatchType(mt))
	if err != nil {
		c.fail(err)
		return
	}
	update := func(_ context.Context, current runtime.Object) (runtime.Object, error) {
		if current == nil {
			return nil, apierrors.NewNotFound(c.store.Resource.GroupResource(), c.info.Name)
		}
		return c.applyPatch(types.PatchType(mt), current, patch)
	}
	if types.PatchType(mt) == types.ApplyPatchType {
		if c.r.URL.Query().Get("fieldManager") == "" {
			c.fail(apierrors.NewBadRequest("PATCH requests with apply content type must specify fieldManager"))
			return
		}
		if c.store.Fields == nil {
			c.fail(errUnsupportedMediaType(mt, patchTypes[:3]...))
			return
		}
		config, err := c.applyConfiguration(patch)
		if err != nil {
			c.fail(err)
			return
		}
		wo.Applied = true
		update = func(_ context.Context, current runtime.Object) (runtime.Object, error) {
			empty := c.store.Resource.New()
			m, _ := meta.Accessor(empty)
			m.SetName(c.info.Name)
			m.SetNamespace(c.namespace)
			return c.store.Fields.Apply(current, empty, config, wo.FieldManager, c.info.Subresource, force, time.Now())
		}
	}
	out, created, err := c.store.Update(c.r.Context(), c.namespace, c.info.Name, c.info.Subresource, update, wo)
	if err != nil {
		c.fail(err)
		return
	}
	code := http.StatusOK
	if created {
		code = http.StatusCreated
	}
	c.respond(code, out)
}

// force reads ?force, which only an apply may set.
func (c *call) force(pt types.PatchType) (bool, error) {
	v := c.r.URL.Query().Get("force")
	if v == "" {
		return false, nil
	}
	force, err := strconv.ParseBool(v)
	if err != nil {
		return false, apierrors.NewBadRequest(fmt.Sprintf("invalid force %q", v))
	}
	if force && pt != types.ApplyPatchType {
		return false, apierrors.NewBadRequest("force: Forbidden: may not be specified for non-apply patch")
	}
	return force, nil
}

// applyConfiguration reads an apply body (YAML or JSON) into the fields it
// sets, checked against the type: wrong types are a 400, unknown fields
// are reported per fieldValidation and left out.
func (c *call) applyConfiguration(body []byte) (map[string]interface{}, error) {
	data, err := yaml.YAMLToJSON(body)
	if err != nil {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("error decoding YAML: %v", err))
	}
	var raw map[string]interface{}
	if err := sigsjson.UnmarshalCaseSensitivePreserveInts(data, &raw); err != nil || raw == nil {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("error decoding apply configuration: %v", err))
	}
	if md, ok := raw["metadata"].(map[string]interface{}); ok {
		if _, ok := md["managedFields"]; ok {
			return nil, apierrors.NewBadRequest("metadata.managedFields must be nil")
		}
	}
	obj, err := c.decodeJSON(data, yamlDuplicates(body)...)
	if err != nil {
		return nil, err
	}
	typedMap, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, apierrors.NewBadRequest(err.Error())
	}
	out, _ := intersect(raw, typedMap).(map[string]interface{})
	return out, nil
}

// intersect keeps the fields of typed that the client wrote in raw: the
// client's intent in the type's own representation, without unknown
// fields and without the zero values a round trip through the type adds.
func intersect(raw, typed interface{}) interface{} {
	switch r := raw.(type) {
	case map[string]interface{}:
		t, ok := typed.(map[string]interface{})
		if !ok {
			return typed
		}
		out := make(map[string]interface{}, len(r))
		for k, rv := range r {
			if tv, ok := t[k]; ok {
				out[k] = intersect(rv, tv)
			} else if rv == nil {
				out[k] = nil
			}
		}
		return out
	case []interface{}:
		t, ok := typed.([]interface{})
		if !ok || len(t) != len(r) {
			return typed
		}
		out := make([]interface{}, len(r))
		for i := range r {
			out[i] = intersect(r[i], t[i])
		}
		return out
	}
	return typed
}

// fieldManager is ?fieldManager, or else the User-Agent's first word, as
// kube derives it.
func (c *call) fieldManager() (string, error) {
	m := c.r.URL.Query().Get("fieldManager")
	if len(m) > 128 {
		return "", apierrors.NewBadRequest("fieldManager: Invalid value: must be no more than 128 characters")
	}
	if m == "" {
		m = strings.Split(c.r.UserAgent(), "/")[0]
		if len(m) > 128 {
			m = m[:128]
		}
	}
	return m, nil
}

func (c *call) applyPatch(pt types.PatchType, current runtime.Object, patch []byte) (runtime.Object, error) {
	original, err := json.Marshal(current)
	if err != nil {
		return nil, err
	}
	var patched []byte
	switch pt {
	case types.JSONPatchType:
		p, err := jsonpatch.DecodePatch(patch)
		if err != nil {
			return nil, apierrors.NewBadRequest(err.Error())
		}
		if patched, err = p.Apply(original); err != nil {
			return nil, apierrors.NewGenericServerResponse(http.StatusUnprocessableEntity, "", c.store.Resource.GroupResource(), c.info.Name, err.Error(), 0, false)
		}
	case types.MergePatchType:
		if patched, err = jsonpatch.MergePatch(original, patch); err != nil {
			return nil, apierrors.NewBadRequest(err.Error())
		}
	case types.StrategicMergePatchType:
		if patched, err = strategicpatch.StrategicMergePatch(original, patch, c.store.Resource.New()); err != nil {
			return nil, apierrors.NewBadRequest(err.Error())
		}
	default:
		return nil, fmt.Errorf("unsupported patch type %s", pt)
	}
	return c.decodeJSON(patched)
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}
