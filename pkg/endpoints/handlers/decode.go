package handlers

import (
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"unicode"
	"unicode/utf8"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	sigsjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"

	"github.com/cronplane/cronplane/pkg/audit"
	"github.com/cronplane/cronplane/pkg/codec"
	"github.com/cronplane/cronplane/pkg/endpoints/kubescheme"
	"github.com/cronplane/cronplane/pkg/endpoints/negotiation"
	"github.com/cronplane/cronplane/pkg/endpoints/request"
	"github.com/cronplane/cronplane/pkg/storage"
	"github.com/cronplane/cronplane/pkg/warning"
)

// maxBodyBytes bounds a request body, as kube's 3 MiB object limit does.
const maxBodyBytes = 3 * 1024 * 1024

// metaOf returns the metadata of an object of a served type, which always
// has it.
func metaOf(obj runtime.Object) metav1.Object {
	m, err := meta.Accessor(storage.Unwrap(obj))
	if err != nil {
		panic(fmt.Sprintf("handlers: %T has no object metadata", obj))
	}
	return m
}

// errUnsupportedMediaType is kube's 415 for a body it cannot read.
func errUnsupportedMediaType(accepted ...string) error {
	return &apierrors.StatusError{ErrStatus: metav1.Status{
		Status:  metav1.StatusFailure,
		Code:    http.StatusUnsupportedMediaType,
		Reason:  metav1.StatusReasonUnsupportedMediaType,
		Message: fmt.Sprintf("the body of the request was in an unknown format - accepted media types include: %s", strings.Join(accepted, ", ")),
	}}
}

func readBody(r *http.Request) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r.Body, maxBodyBytes+1))
	if err != nil {
		return nil, apierrors.NewBadRequest(err.Error())
	}
	if len(data) > maxBodyBytes {
		return nil, apierrors.NewRequestEntityTooLargeError(fmt.Sprintf("limit is %d", maxBodyBytes))
	}
	return data, nil
}

// decode reads the request body, in JSON, YAML or protobuf, as an object
// of the served type, with the type's defaults applied, as kube's decoder
// applies them. Unknown and duplicate fields are handled per
// fieldValidation; a body of another kind or version is refused as kube
// refuses it (see bodyKind).
func (c *call) decode(validation string) (runtime.Object, error) {
	mt, ok := negotiation.ContentType(c.r.Header.Get("Content-Type"))
	if !ok || (mt == negotiation.Protobuf && !protobufCapable(c.res)) {
		return nil, errUnsupportedMediaType(negotiation.Supported...)
	}
	data, err := readBody(c.r)
	if err != nil {
		return nil, err
	}
	obj, err := c.decodeBody(mt, data, validation)
	if err != nil {
		if c.customScale() {
			// kube's scale of a custom resource cannot name its own type
			// when a body fails to decode, so every failure reads alike.
			return nil, apierrors.NewBadRequest(`no kind is registered for the type v1.Scale in scheme "pkg/runtime/scheme.go:100"`)
		}
		return nil, err
	}
	c.res.Defaults(obj)
	audit.LogRequestObject(c.r.Context(), obj)
	return obj, nil
}

func (c *call) decodeBody(mt string, data []byte, validation string) (runtime.Object, error) {
	res := c.res
	switch mt {
	case negotiation.Protobuf:
		u, err := codec.OpenEnvelope(data)
		if err != nil {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("%s in version %q cannot be handled as a %s: %v", res.Kind, res.Version, res.Kind, err))
		}
		gvk, err := c.bodyKind(u.APIVersion, u.Kind, data)
		if err != nil {
			return nil, err
		}
		obj := res.New()
		if err := obj.(codec.ProtoMessage).Unmarshal(u.Raw); err != nil {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("%s in version %q cannot be handled as a %s: %v", gvk.Kind, gvk.Version, res.Kind, err))
		}
		obj.GetObjectKind().SetGroupVersionKind(res.GroupVersionKind)
		return obj, nil
	case negotiation.YAML:
		dups := yamlDuplicates(data)
		converted, err := yaml.YAMLToJSON(data)
		if err != nil {
			return nil, unrecognized(res.Kind, err, data)
		}
		return c.decodeJSON(converted, data, validation, dups...)
	}
	return c.decodeJSON(data, data, validation)
}

// customResource tells whether the request is for a custom resource (or
// one of its subresources), which kube reads without a scheme.
func (c *call) customResource() bool {
	_, ok := c.entry.New().(*unstructured.Unstructured)
	return ok
}

// customScale tells whether the request is for a custom resource's scale.
func (c *call) customScale() bool {
	return c.customResource() && c.res.GroupVersionKind == autoscalingv1.SchemeGroupVersion.WithKind("Scale")
}

// bodyKind resolves the kind and version a body declares (raw, as it
// came) as kube's decoder for the served resource does, and refuses in
// kube's words one it could not read as the served kind. A built-in kind
// is read with kube's scheme (a definition with apiextensions'): a body
// without apiVersion or kind is of the served one; a kind the scheme knows
// cannot be converted, one it does not know is not registered, and the
// served kind in another version is of the wrong API version. A custom
// resource's body must say both, and its version must be the served one;
// its kind is checked with the object (see decodeJSON).
func (c *call) bodyKind(apiVersion, kind string, raw []byte) (schema.GroupVersionKind, error) {
	res := c.res
	unrecognized := func(err error) error {
		return apierrors.NewBadRequest(fmt.Sprintf("the object provided is unrecognized (must be of type %s): %v (%s)", res.Kind, err, summarize(raw)))
	}
	wrongVersion := func(gv schema.GroupVersion) error {
		return apierrors.NewBadRequest(fmt.Sprintf("the API version in the data (%s) does not match the expected API version (%s)", gv, res.GroupVersion()))
	}
	if c.customResource() && !c.customScale() {
		gv, err := schema.ParseGroupVersion(apiVersion)
		if err != nil {
			return schema.GroupVersionKind{}, unrecognized(err)
		}
		if kind == "" {
			return schema.GroupVersionKind{}, unrecognized(fmt.Errorf("Object 'Kind' is missing in '%s'", raw))
		}
		if gv != res.GroupVersion() {
			return schema.GroupVersionKind{}, wrongVersion(gv)
		}
		return gv.WithKind(kind), nil
	}
	gv := res.GroupVersion()
	if apiVersion != "" {
		var err error
		if gv, err = schema.ParseGroupVersion(apiVersion); err != nil {
			return schema.GroupVersionKind{}, unrecognized(err)
		}
	}
	if kind == "" {
		kind = res.Kind
	}
	gvk := gv.WithKind(kind)
	scheme := kubescheme.Legacy
	if res.Group == "apiextensions.k8s.io" {
		scheme = kubescheme.APIExtensions
	}
	if err := scheme.Decode(gvk, res.GroupVersionKind, kubescheme.InternalType(res.GroupKind())); err != nil {
		return gvk, apierrors.NewBadRequest(fmt.Sprintf("%s in version %q cannot be handled as a %s: %v", gvk.Kind, gvk.Version, res.Kind, err))
	}
	if gv != res.GroupVersion() {
		return gvk, wrongVersion(gv)
	}
	return gvk, nil
}

// yamlDuplicates reports the duplicate keys of a YAML document, which the
// conversion to JSON silently resolves: none, or one yamlDuplicateKeys.
func yamlDuplicates(data []byte) []error {
	_, err := yaml.YAMLToJSONStrict(data)
	if err == nil {
		return nil
	}
	var keys yamlDuplicateKeys
	for _, line := range strings.Split(err.Error(), "\n") {
		if line = strings.TrimSpace(line); strings.Contains(line, "already set in map") {
			keys = append(keys, line)
		}
	}
	if len(keys) == 0 {
		return nil
	}
	return []error{keys}
}

// yamlDuplicateKeys are the duplicate keys of a YAML document, one
// `line N: key "k" already set in map` each. As kube, Strict names them
// in one error, in the YAML library's words, and Warn warns of each.
type yamlDuplicateKeys []string

func (d yamlDuplicateKeys) Error() string {
	return "yaml: unmarshal errors:\n  " + strings.Join(d, "\n  ")
}

// typeMeta is what a body is first read as to learn its kind: an
// anonymous struct, as kube's decoder uses, so that the errors read alike.
type typeMeta = struct {
	APIVersion string `json:"apiVersion,omitempty"`
	Kind       string `json:"kind,omitempty"`
}

// decodeJSON decodes a JSON body (raw is the body as it came, JSON or
// YAML); extra are problems found in the body's original form (duplicate
// YAML keys), reported with the JSON ones. Errors name the body's kind and
// version as kube's do.
func (c *call) decodeJSON(data, raw []byte, validation string, extra ...error) (runtime.Object, error) {
	res := c.res
	// A Go type reads apiVersion and kind as the first pass would: when
	// the body decodes, they are taken from the object rather than from a
	// pass of their own over the whole body. Errors come as kube's
	// decoder gives them, the kind's first.
	obj, strict, err := c.unmarshal(data)
	var tm typeMeta
	if read, ok := typeMetaOf(obj); err == nil && ok {
		tm = read
	} else if err := sigsjson.UnmarshalCaseSensitivePreserveInts(data, &tm); err != nil {
		return nil, unrecognized(res.Kind, fmt.Errorf("couldn't get version/kind; json parse error: %w", err), raw)
	}
	gvk, kindErr := c.bodyKind(tm.APIVersion, tm.Kind, raw)
	if kindErr != nil {
		return nil, kindErr
	}
	cannot := func(err error) error {
		return apierrors.NewBadRequest(fmt.Sprintf("%s in version %q cannot be handled as a %s: %v", gvk.Kind, gvk.Version, res.Kind, err))
	}
	if err != nil {
		return nil, cannot(err)
	}
	if err := c.strictErrors(validation, append(extra, strict...)); err != nil {
		return nil, cannot(err)
	}
	if gvk.Kind != res.Kind {
		// A custom resource of its version's other kind: kube reads it,
		// and its validation refuses it, before any other check.
		return nil, apierrors.NewInvalid(gvk.GroupKind(), metaOf(obj).GetName(), field.ErrorList{field.Invalid(field.NewPath("kind"), gvk.Kind, "must be "+res.Kind)})
	}
	obj.GetObjectKind().SetGroupVersionKind(res.GroupVersionKind)
	return obj, nil
}

// typeMetaOf returns apiVersion and kind as a Go object decoded them, if
// obj is one.
func typeMetaOf(obj runtime.Object) (typeMeta, bool) {
	if obj == nil {
		return typeMeta{}, false
	}
	t, ok := obj.GetObjectKind().(*metav1.TypeMeta)
	if !ok {
		return typeMeta{}, false
	}
	return typeMeta{APIVersion: t.APIVersion, Kind: t.Kind}, true
}

// unmarshal reads JSON as an object of the served type. The unknown and
// duplicate fields it finds come back as strict errors: for a Go type
// those the type does not have; for an unstructured object those its
// schema does not name, which are pruned.
func (c *call) unmarshal(data []byte) (runtime.Object, []error, error) {
	obj := c.res.New()
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		strict, err := sigsjson.UnmarshalStrict(data, obj, sigsjson.DisallowDuplicateFields, sigsjson.DisallowUnknownFields)
		return obj, strict, err
	}
	strict, err := sigsjson.UnmarshalStrict(data, &u.Object, sigsjson.DisallowDuplicateFields)
	if err != nil {
		return nil, nil, err
	}
	if u.Object == nil {
		return nil, nil, errors.New("Object 'Kind' is missing in 'null'")
	}
	unknown, err := c.res.Schema.Prune(u.Object)
	if err != nil {
		return nil, nil, err
	}
	for _, path := range unknown {
		strict = append(strict, unknownField(path))
	}
	return u, strict, nil
}

// unknownField is a field of an unstructured object its schema does not
// name, at a path; it reads as the JSON decoder's strict errors read.
type unknownField string

func (f unknownField) Error() string { return fmt.Sprintf("unknown field %q", string(f)) }

// FieldPath is the field's path, as the JSON decoder's strict errors
// give theirs.
func (f unknownField) FieldPath() string { return string(f) }

// unrecognized is kube's 400 for a body that is not an object at all,
// quoting the start of the body as sent.
func unrecognized(kind string, err error, body []byte) error {
	return apierrors.NewBadRequest(fmt.Sprintf("the object provided is unrecognized (must be of type %s): %v (%s)", kind, err, summarize(body)))
}

// summarize is how kube quotes an unreadable body: <empty>, the start of
// an object as it came, or anything else hex-encoded.
func summarize(data []byte) string {
	const max = 30
	switch {
	case len(data) == 0:
		return "<empty>"
	case data[0] == '{':
		if len(data) > max {
			return string(data[:max]) + " ..."
		}
		return string(data)
	case len(data) > max:
		return hex.EncodeToString(data[:max]) + " ..."
	}
	return hex.EncodeToString(data)
}

// strictErrors applies fieldValidation to the unknown and duplicate fields
// found while decoding: Strict refuses them all at once, Warn (the
// default) turns each into a warning, Ignore drops them.
func (c *call) strictErrors(validation string, strict []error) error {
	if len(strict) == 0 || validation == metav1.FieldValidationIgnore {
		return nil
	}
	if validation == metav1.FieldValidationStrict {
		msgs := make([]string, len(strict))
		for i, e := range strict {
			msgs[i] = e.Error()
		}
		return fmt.Errorf("strict decoding error: %s", strings.Join(msgs, ", "))
	}
	for _, e := range strict {
		if keys, ok := e.(yamlDuplicateKeys); ok {
			for _, k := range keys {
				warning.Add(c.r.Context(), k)
			}
			continue
		}
		warning.Add(c.r.Context(), e.Error())
	}
	return nil
}

// selectors parses a list's label and field selectors; a request for one
// named object (a watch of it) selects it by name.
func selectors(opts metav1.ListOptions, info *request.RequestInfo) (labels.Selector, fields.Selector, error) {
	ls, err := labels.Parse(opts.LabelSelector)
	if err != nil {
		return nil, nil, apierrors.NewBadRequest(err.Error())
	}
	fs, err := fields.ParseSelector(opts.FieldSelector)
	if err != nil {
		return nil, nil, apierrors.NewBadRequest(err.Error())
	}
	if len(info.Parts) >= 2 {
		if name, ok := fs.RequiresExactMatch("metadata.name"); !fs.Empty() && (!ok || name != info.Name) {
			return nil, nil, apierrors.NewBadRequest("fieldSelector metadata.name doesn't match requested name")
		}
		fs = fields.OneTermEqualSelector("metadata.name", info.Name)
	}
	return ls, fs, nil
}

// deleteOptions reads DeleteOptions from the query and then the body (of
// kind DeleteOptions in any version, JSON, YAML or protobuf), which wins
// where it says something. Unlike kube, a dryRun in the query is kept
// when the body has a say too: a client that asked for a dry run never
// deletes.
func (c *call) deleteOptions() (*metav1.DeleteOptions, error) {
	opts := &metav1.DeleteOptions{}
	if err := decodeParams(c.query, opts); err != nil {
		return nil, err
	}
	data, err := readBody(c.r)
	if err != nil {
		return nil, err
	}
	if len(bytes.TrimSpace(data)) > 0 {
		queryDryRun := opts.DryRun
		if err := decodeDeleteOptions(data, c.r.Header.Get("Content-Type"), opts); err != nil {
			return nil, err
		}
		opts.DryRun = append(queryDryRun, opts.DryRun...)
	}
	errs := metav1validation.ValidateDeleteOptions(opts)
	if len(errs) > 0 {
		return nil, optionErrors("DeleteOptions", errs)
	}
	return opts, nil
}

// decodeDeleteOptions reads a DeleteOptions body as kube does, with meta's
// scheme: DeleteOptions of any group version, meta.k8s.io/v1 if it names
// none. What kube cannot read it answers with its decoder's own words (and
// a 500, where SPEC.md has a client's mistake a 400).
func decodeDeleteOptions(data []byte, contentType string, opts *metav1.DeleteOptions) error {
	mt, ok := negotiation.ContentType(contentType)
	if !ok {
		return errUnsupportedMediaType(negotiation.Supported...)
	}
	var body metav1.DeleteOptions
	switch mt {
	case negotiation.Protobuf:
		u, err := codec.OpenEnvelope(data)
		if err != nil {
			return apierrors.NewBadRequest(err.Error())
		}
		if err := checkDeleteOptionsKind(u.APIVersion, u.Kind); err != nil {
			return err
		}
		if err := body.Unmarshal(u.Raw); err != nil {
			return apierrors.NewBadRequest(err.Error())
		}
	default:
		if mt == negotiation.YAML {
			var err error
			if data, err = yaml.YAMLToJSON(data); err != nil {
				return apierrors.NewBadRequest(err.Error())
			}
		}
		var tm typeMeta
		if err := sigsjson.UnmarshalCaseSensitivePreserveInts(data, &tm); err != nil {
			return apierrors.NewBadRequest(fmt.Sprintf("couldn't get version/kind; json parse error: %v", err))
		}
		if err := checkDeleteOptionsKind(tm.APIVersion, tm.Kind); err != nil {
			return err
		}
		if err := sigsjson.UnmarshalCaseSensitivePreserveInts(data, &body); err != nil {
			return apierrors.NewBadRequest(err.Error())
		}
	}
	query := *opts
	*opts = body
	if opts.GracePeriodSeconds == nil {
		opts.GracePeriodSeconds = query.GracePeriodSeconds
	}
	if opts.Preconditions == nil {
		opts.Preconditions = query.Preconditions
	}
	//nolint:staticcheck // OrphanDependents is deprecated but still honoured, as kube does.
	if opts.OrphanDependents == nil && opts.PropagationPolicy == nil {
		opts.OrphanDependents, opts.PropagationPolicy = query.OrphanDependents, query.PropagationPolicy
	}
	return nil
}

// checkDeleteOptionsKind refuses, in kube's words, a DeleteOptions body
// that declares a kind meta's scheme cannot read as DeleteOptions.
func checkDeleteOptionsKind(apiVersion, kind string) error {
	deleteOptions := metav1.SchemeGroupVersion.WithKind("DeleteOptions")
	gv := deleteOptions.GroupVersion()
	if apiVersion != "" {
		var err error
		if gv, err = schema.ParseGroupVersion(apiVersion); err != nil {
			return apierrors.NewBadRequest(err.Error())
		}
	}
	if kind == "" {
		kind = deleteOptions.Kind
	}
	if err := kubescheme.MetaInternal.Decode(gv.WithKind(kind), deleteOptions, "v1.DeleteOptions"); err != nil {
		return apierrors.NewBadRequest(err.Error())
	}
	return nil
}

// managerOrUserAgent is the field manager of a write: ?fieldManager, or
// else the User-Agent's product, printable characters only, at most 128
// bytes, as kube derives it.
func managerOrUserAgent(manager, userAgent string) string {
	if manager != "" {
		return manager
	}
	var b strings.Builder
	for _, r := range strings.Split(userAgent, "/")[0] {
		if !unicode.IsPrint(r) {
			continue
		}
		if b.Len()+utf8.RuneLen(r) > metav1validation.FieldManagerMaxLength {
			break
		}
		b.WriteRune(r)
	}
	if b.Len() == 0 {
		// kube's name for a writer that gave none.
		return "unknown"
	}
	return b.String()
}
