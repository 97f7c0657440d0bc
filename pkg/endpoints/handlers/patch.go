package handlers

import (
	"context"
	"encoding/json"
	"fmt"
	"mime"
	"net/http"
	"slices"
	"sort"
	"time"

	jsonpatch "github.com/evanphx/json-patch"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/mergepatch"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"k8s.io/apimachinery/pkg/util/validation/field"
	sigsjson "sigs.k8s.io/json"
	"sigs.k8s.io/structured-merge-diff/v4/typed"
	"sigs.k8s.io/yaml"

	"github.com/cronplane/cronplane/pkg/apply"
	"github.com/cronplane/cronplane/pkg/registry/rest"
)

// Limits that bound the work and memory of a patch, kube's own: the
// number of JSON patch operations, and the bytes its copy operations may
// add in all (each copy could otherwise double the document).
const (
	maxJSONPatchOperations = 10000
	maxJSONPatchCopyBytes  = 3 * 1024 * 1024
)

func init() {
	jsonpatch.AccumulatedCopySizeLimit = maxJSONPatchCopyBytes
}

// patchTypes are the PATCH content types served.
var patchTypes = []string{string(types.JSONPatchType), string(types.MergePatchType), string(types.StrategicMergePatchType), string(types.ApplyPatchType)}

// errPatchMediaType is kube's 415 for a PATCH of a type it does not take,
// which kube's router words on its own.
func errPatchMediaType() error {
	return &apierrors.StatusError{ErrStatus: metav1.Status{
		Status:  metav1.StatusFailure,
		Code:    http.StatusUnsupportedMediaType,
		Reason:  metav1.StatusReasonUnsupportedMediaType,
		Message: "415: Unsupported Media Type",
		Details: &metav1.StatusDetails{},
	}}
}

// patch applies a patch to the current object inside the storage's update
// loop, so that a concurrent write makes it re-apply to the new state; the
// result goes through the same checks as a PUT.
func (c *call) patch(p rest.Patcher) (int, runtime.Object, error) {
	mt, _, err := mime.ParseMediaType(c.r.Header.Get("Content-Type"))
	if err != nil || !slices.Contains(patchTypes, mt) {
		return 0, nil, errPatchMediaType()
	}
	pt := types.PatchType(mt)
	if served := c.entry.PatchTypes(); !slices.Contains(served, mt) {
		// kube names what the resource takes, for a custom resource's
		// subresources (its Scale) too.
		return 0, nil, errUnsupportedMediaType(served...)
	}
	opts, err := patchOptions(c.query, pt)
	if err != nil {
		return 0, nil, err
	}
	body, err := readBody(c.r)
	if err != nil {
		return 0, nil, err
	}
	validation := opts.FieldValidation
	if validation == "" {
		validation = metav1.FieldValidationWarn
	}
	manager := managerOrUserAgent(opts.FieldManager, c.r.UserAgent())
	var mutate func(current runtime.Object) (runtime.Object, error)
	switch pt {
	case types.JSONPatchType, types.MergePatchType:
		mutate = func(current runtime.Object) (runtime.Object, error) {
			return c.jsonPatch(pt, body, validation, current)
		}
	case types.StrategicMergePatchType:
		mutate = func(current runtime.Object) (runtime.Object, error) {
			return c.strategicPatch(body, validation, current)
		}
	case types.ApplyPatchType:
		fields := c.entry.Fields
		if fields == nil {
			return 0, nil, errPatchMediaType()
		}
		config, err := c.applyConfiguration(body, validation)
		if err != nil {
			return 0, nil, err
		}
		force := opts.Force != nil && *opts.Force
		mutate = func(current runtime.Object) (runtime.Object, error) {
			empty := c.res.New()
			m := metaOf(empty)
			m.SetName(c.info.Name)
			m.SetNamespace(c.namespace)
			out, err := fields.Apply(current, empty, config, manager, c.info.Subresource, force, time.Now())
			if err != nil {
				return nil, err
			}
			// Apply works on fields; defaults come back as a decode would
			// bring them.
			c.res.Defaults(out)
			return out, nil
		}
	}
	info := &updatedObject{transform: func(_ context.Context, current runtime.Object) (runtime.Object, error) {
		if current == nil && pt != types.ApplyPatchType {
			return nil, apierrors.NewNotFound(c.entry.GroupResource(), c.info.Name)
		}
		out, err := mutate(current)
		if err != nil {
			return nil, err
		}
		if err := checkName(out, c.info.Name); err != nil {
			return nil, err
		}
		return out, nil
	}}
	updateOpts := &metav1.UpdateOptions{DryRun: opts.DryRun, FieldManager: manager, FieldValidation: opts.FieldValidation}
	return c.updateWith(p, info, pt == types.ApplyPatchType, updateOpts)
}

// jsonPatchOp is one operation of a JSON patch, read strictly to find
// unknown fields.
type jsonPatchOp struct {
	Op    string      `json:"op"`
	Path  string      `json:"path"`
	From  string      `json:"from"`
	Value interface{} `json:"value"`
}

// jsonPatch applies a JSON patch or a merge patch to current.
func (c *call) jsonPatch(pt types.PatchType, patch []byte, validation string, current runtime.Object) (runtime.Object, error) {
	original, err := json.Marshal(current)
	if err != nil {
		return nil, err
	}
	var strict []error
	var patched []byte
	switch pt {
	case types.JSONPatchType:
		if validation != metav1.FieldValidationIgnore {
			var ops []jsonPatchOp
			if strict, err = sigsjson.UnmarshalStrict(patch, &ops); err != nil {
				return nil, apierrors.NewBadRequest(fmt.Sprintf("error decoding patch: %v", err))
			}
			for i, e := range strict {
				strict[i] = fmt.Errorf("json patch %v", e)
			}
		}
		ops, err := jsonpatch.DecodePatch(patch)
		if err != nil {
			return nil, apierrors.NewBadRequest(err.Error())
		}
		if len(ops) > maxJSONPatchOperations {
			return nil, apierrors.NewRequestEntityTooLargeError(fmt.Sprintf("The allowed maximum operations in a JSON patch is %d, got %d", maxJSONPatchOperations, len(ops)))
		}
		if patched, err = ops.Apply(original); err != nil {
			return nil, apierrors.NewGenericServerResponse(http.StatusUnprocessableEntity, "", schema.GroupResource{}, "", err.Error(), 0, false)
		}
	default:
		if validation != metav1.FieldValidationIgnore {
			var v map[string]interface{}
			if strict, err = sigsjson.UnmarshalStrict(patch, &v); err != nil {
				return nil, apierrors.NewBadRequest(fmt.Sprintf("error decoding patch: %v", err))
			}
		}
		if patched, err = jsonpatch.MergePatch(original, patch); err != nil {
			return nil, apierrors.NewBadRequest(err.Error())
		}
	}
	obj, decodeStrict, err := c.unmarshal(patched)
	if err == nil {
		err = checkKind(obj, c.res.GroupVersionKind)
	}
	if err != nil {
		return nil, invalidPatch(string(patched), err)
	}
	if err := c.patchStrictErrors(validation, append(strict, decodeStrict...)); err != nil {
		return nil, err
	}
	c.res.Defaults(obj)
	return obj, nil
}

// strategicPatch applies a strategic merge patch to current, on maps as
// kube does, so that a patch of the wrong type fails as kube's fails.
func (c *call) strategicPatch(patch []byte, validation string, current runtime.Object) (runtime.Object, error) {
	original, err := runtime.DefaultUnstructuredConverter.ToUnstructured(current)
	if err != nil {
		return nil, err
	}
	patchMap := map[string]interface{}{}
	var strict []error
	if validation != metav1.FieldValidationIgnore {
		strict, err = sigsjson.UnmarshalStrict(patch, &patchMap)
	} else {
		err = sigsjson.UnmarshalCaseSensitivePreserveInts(patch, &patchMap)
	}
	if err != nil {
		return nil, apierrors.NewBadRequest(err.Error())
	}
	patched, err := strategicpatch.StrategicMergeMapPatch(original, patchMap, c.res.New())
	if err != nil {
		return nil, strategicPatchError(err)
	}
	obj := c.res.New()
	err = runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(patched, obj, validation != metav1.FieldValidationIgnore)
	if decodeStrict, isStrict := runtime.AsStrictDecodingError(err); isStrict {
		strict, err = append(strict, decodeStrict.Errors()...), nil
	}
	if err == nil {
		err = checkKind(obj, c.res.GroupVersionKind)
	}
	if err != nil {
		return nil, invalidPatch(fmt.Sprintf("%+v", patchMap), err)
	}
	if err := c.patchStrictErrors(validation, strict); err != nil {
		return nil, err
	}
	c.res.Defaults(obj)
	return obj, nil
}

// strategicPatchError gives the strategic merge library's errors kube's
// codes: a malformed patch is a 400, one that cannot apply a 422.
func strategicPatchError(err error) error {
	switch err {
	case mergepatch.ErrBadJSONDoc, mergepatch.ErrBadPatchFormatForPrimitiveList, mergepatch.ErrBadPatchFormatForRetainKeys,
		mergepatch.ErrBadPatchFormatForSetElementOrderList, mergepatch.ErrUnsupportedStrategicMergePatchFormat:
		return apierrors.NewBadRequest(err.Error())
	case mergepatch.ErrNoListOfLists, mergepatch.ErrPatchContentNotMatchRetainKeys:
		return apierrors.NewGenericServerResponse(http.StatusUnprocessableEntity, "", schema.GroupResource{}, "", err.Error(), 0, false)
	}
	return apierrors.NewBadRequest(err.Error())
}

// invalidPatch is kube's 422 for a patch whose result is not an object of
// the type: it quotes the result and the decoder's complaint.
func invalidPatch(result string, err error) error {
	return apierrors.NewInvalid(schema.GroupKind{}, "", field.ErrorList{field.Invalid(field.NewPath("patch"), result, err.Error())})
}

// checkKind refuses a patched object whose kind or apiVersion the patch
// changed.
func checkKind(obj runtime.Object, want schema.GroupVersionKind) error {
	gvk := obj.GetObjectKind().GroupVersionKind()
	if gvk.Kind != "" && gvk.Kind != want.Kind {
		return fmt.Errorf("the kind in the data (%s) does not match the expected kind (%s)", gvk.Kind, want.Kind)
	}
	if (gvk.Group != "" || gvk.Version != "") && gvk.GroupVersion() != want.GroupVersion() {
		return fmt.Errorf("the API version in the data (%s) does not match the expected API version (%s)", gvk.GroupVersion(), want.GroupVersion())
	}
	obj.GetObjectKind().SetGroupVersionKind(want)
	return nil
}

// patchStrictErrors applies fieldValidation to the unknown and duplicate
// fields of a patch and its result: warnings by default, a 400 naming
// them all under Strict, as SPEC.md has it.
func (c *call) patchStrictErrors(validation string, strict []error) error {
	if len(strict) == 0 {
		return nil
	}
	res := c.res
	if err := c.strictErrors(validation, strict); err != nil {
		return apierrors.NewBadRequest(fmt.Sprintf("%s in version %q cannot be handled as a %s: %v", res.Kind, res.Version, res.Kind, err))
	}
	return nil
}

// applyConfiguration reads an apply body (YAML or JSON) into the fields it
// sets, checked against the type: the body must be an object of the
// resource's kind and version; wrong types are a 400; unknown fields are
// reported per fieldValidation (under Strict in kube's field manager's
// words) and left out of its Fields; duplicate keys are reported as kube
// reports them in an apply.
func (c *call) applyConfiguration(body []byte, validation string) (apply.Configuration, error) {
	var none apply.Configuration
	raw, data, duplicates, err := applyBody(body)
	if err != nil {
		return none, apierrors.NewBadRequest(fmt.Sprintf("error decoding YAML: %v", err))
	}
	apiVersion, _ := raw["apiVersion"].(string)
	kind, _ := raw["kind"].(string)
	gv, _ := schema.ParseGroupVersion(apiVersion)
	if gvk := gv.WithKind(kind); gvk != c.res.GroupVersionKind {
		return none, apierrors.NewBadRequest(fmt.Sprintf("invalid object type: %v", gvk))
	}
	if md, ok := raw["metadata"].(map[string]interface{}); ok {
		if _, ok := md["managedFields"]; ok {
			return none, apierrors.NewBadRequest("metadata.managedFields must be nil")
		}
	}
	if validation == metav1.FieldValidationStrict {
		// kube's field manager names the fields its type does not
		// declare before anything else reads the body.
		if _, unknown, err := c.unmarshal(data); err == nil && len(unknown) > 0 {
			return none, apierrors.NewBadRequest(fmt.Sprintf("failed to create typed patch object (%s; %s): %v", sentName(raw), c.res.GroupVersionKind, undeclared(unknown)))
		}
		if len(duplicates) > 0 {
			return none, apierrors.NewBadRequest(fmt.Sprintf("error strict decoding YAML: error converting YAML to JSON: %v", duplicates[0]))
		}
	}
	if err := c.strictErrors(validation, duplicates); err != nil {
		return none, err
	}
	obj, err := c.decodeJSON(data, body, validation)
	if err != nil {
		return none, err
	}
	m := metaOf(obj)
	if ns := m.GetNamespace(); c.entry.Namespaced && ns != "" && ns != c.namespace {
		return none, apierrors.NewBadRequest("the namespace of the provided object does not match the namespace sent on the request")
	}
	typedMap, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return none, apierrors.NewBadRequest(err.Error())
	}
	fields, _ := intersect(raw, typedMap).(map[string]interface{})
	return apply.Configuration{Fields: fields, Sent: raw}, nil
}

// undeclared words the unknown fields an apply sets as kube's field
// manager does: ".spec.x: field not declared in schema", several one per
// line after "errors:", by path (the field manager's order follows map
// iteration). The field manager names list items by their keys, the
// decoder by their index.
func undeclared(unknown []error) error {
	var errs typed.ValidationErrors
	for _, e := range unknown {
		if f, ok := e.(interface{ FieldPath() string }); ok {
			errs = append(errs, typed.ValidationError{Path: "." + f.FieldPath(), ErrorMessage: "field not declared in schema"})
		}
	}
	sort.Slice(errs, func(i, j int) bool { return errs[i].Path < errs[j].Path })
	return errs
}

// sentName is the namespace and name an apply configuration gives, as
// kube names it in errors ("ns/name", "/name" without a namespace).
func sentName(raw map[string]interface{}) string {
	md, _ := raw["metadata"].(map[string]interface{})
	ns, _ := md["namespace"].(string)
	name, _ := md["name"].(string)
	return ns + "/" + name
}

// applyBody reads an apply configuration, YAML or JSON: as a map, as the
// JSON its YAML form converts to, and the duplicate keys found in it.
// A JSON body of plain ASCII without escapes or duplicate keys, as
// client-go and kubectl send, is read once as JSON, which the YAML parser
// reads alike but several times slower; anything else goes through the
// YAML parser, which refuses some valid JSON (the escape \/, surrogate
// pairs, some characters) as kube refuses it.
func applyBody(body []byte) (raw map[string]interface{}, data []byte, duplicates []error, err error) {
	if plainASCII(body) {
		if strict, err := sigsjson.UnmarshalStrict(body, &raw); err == nil && len(strict) == 0 && raw != nil {
			if data, err := json.Marshal(raw); err == nil {
				return raw, data, nil, nil
			}
		}
	}
	raw = map[string]interface{}{}
	if err := yaml.Unmarshal(body, &raw); err != nil {
		return nil, nil, nil, err
	}
	if data, err = yaml.YAMLToJSON(body); err != nil {
		return nil, nil, nil, err
	}
	return raw, data, yamlDuplicates(body), nil
}

// plainASCII tells whether b is ASCII without a backslash.
func plainASCII(b []byte) bool {
	for _, c := range b {
		if c >= 0x80 || c == '\\' {
			return false
		}
	}
	return true
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
