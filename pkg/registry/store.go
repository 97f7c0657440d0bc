package registry

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/cronplane/cronplane/pkg/admission"
	"github.com/cronplane/cronplane/pkg/apply"
	"github.com/cronplane/cronplane/pkg/endpoints/responsewriters"
	"github.com/cronplane/cronplane/pkg/storage"
	"github.com/cronplane/cronplane/pkg/warning"
)

// tooLargeRVWait is how long a read for a resourceVersion the store has not
// reached yet waits before it gives up, as kube does.
const tooLargeRVWait = 3 * time.Second

// OptimisticLockErrorMsg is kube's message for a write based on a stale
// resourceVersion.
const OptimisticLockErrorMsg = "the object has been modified; please apply your changes to the latest version and try again"

// Store serves every verb of one Resource over a storage.Interface. Its
// methods take and return the resource's served type and report failures
// as API errors (k8s.io/apimachinery/pkg/api/errors) ready for the wire.
type Store struct {
	Resource *Resource
	Storage  storage.Interface
	// KeyRoot is the storage prefix, such as "/registry".
	KeyRoot   string
	Admission admission.Interface
	// Fields maintains metadata.managedFields; nil leaves it alone.
	Fields *apply.Manager
	// Now returns the current time; nil means time.Now.
	Now func() time.Time
}

// WriteOptions apply to every write.
type WriteOptions struct {
	DryRun bool
	// FieldManager is who writes, for metadata.managedFields.
	FieldManager string
	// Applied marks a server-side apply, whose update function has set
	// managedFields itself; an apply may also create the object.
	Applied bool
	// UID, when set, must be the stored object's uid (a 409 otherwise):
	// a PUT's body names the object it means to replace.
	UID types.UID
}

// UpdateFunc computes the object to store from the current one; current is
// nil when the object does not exist.
type UpdateFunc func(ctx context.Context, current runtime.Object) (runtime.Object, error)

func (s *Store) clock() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}

// trackFields records a non-apply write's field ownership.
func (s *Store) trackFields(live, obj runtime.Object, subresource string, opts WriteOptions) error {
	if s.Fields == nil || opts.Applied {
		return nil
	}
	return s.Fields.Update(live, obj, opts.FieldManager, subresource, s.clock())
}

func (s *Store) now() metav1.Time {
	if s.Now != nil {
		return metav1.NewTime(s.Now().Truncate(time.Second))
	}
	return metav1.NewTime(time.Now().Truncate(time.Second))
}

// StoragePrefix is the key prefix under which a resource's objects are
// stored, such as "/registry/cronjobs/".
func StoragePrefix(root string, res *Resource) string {
	return root + "/" + res.storageResource() + "/"
}

// prefix is the key prefix of a collection; namespace "" on a namespaced
// resource means all namespaces.
func (s *Store) prefix(namespace string) string {
	p := StoragePrefix(s.KeyRoot, s.Resource)
	if s.Resource.Namespaced && namespace != "" {
		p += namespace + "/"
	}
	return p
}

func (s *Store) key(namespace, name string) string {
	return s.prefix(namespace) + name
}

func (s *Store) toStorage(obj runtime.Object) (runtime.Object, error) {
	if s.Resource.Conversion == nil {
		return obj, nil
	}
	return s.Resource.Conversion.ToStorage(obj)
}

func (s *Store) fromStorage(obj runtime.Object) (runtime.Object, error) {
	if s.Resource.Conversion == nil || obj == nil {
		return obj, nil
	}
	return s.Resource.Conversion.FromStorage(storage.Unwrap(obj))
}

// mutable returns a private copy of an object read from storage, which may
// be shared with other readers.
func mutable(obj runtime.Object) runtime.Object {
	if s, ok := obj.(*storage.SharedObject); ok {
		return s.DeepCopyObject()
	}
	return obj
}

// apiError turns a storage error into the API error the client sees.
func (s *Store) apiError(err error, name string) error {
	gr := s.Resource.GroupResource()
	var se *storage.Error
	if !errors.As(err, &se) {
		var apiStatus apierrors.APIStatus
		if errors.As(err, &apiStatus) {
			return err
		}
		return apierrors.NewInternalError(err)
	}
	switch se.Code {
	case storage.ErrCodeNotFound:
		return apierrors.NewNotFound(gr, name)
	case storage.ErrCodeAlreadyExists:
		return apierrors.NewAlreadyExists(gr, name)
	case storage.ErrCodeConflict:
		msg := se.Msg
		if msg == "" {
			msg = OptimisticLockErrorMsg
		}
		return apierrors.NewConflict(gr, name, errors.New(msg))
	case storage.ErrCodeExpired:
		return apierrors.NewResourceExpired(se.Error())
	case storage.ErrCodeInvalidContinue:
		return apierrors.NewBadRequest("invalid continue token: " + se.Error())
	case storage.ErrCodeTooLargeResourceVersion:
		return newTooLargeResourceVersionError(se.Revision)
	}
	return apierrors.NewInternalError(err)
}

func newTooLargeResourceVersionError(current int64) error {
	err := apierrors.NewTimeoutError(fmt.Sprintf("Too large resource version: current %d", current), 1)
	err.ErrStatus.Details.Causes = []metav1.StatusCause{{
		Type:    metav1.CauseTypeResourceVersionTooLarge,
		Message: "Too large resource version",
	}}
	return err
}

// parseResourceVersion reads a client's resourceVersion; "" and "0" are 0.
func parseResourceVersion(rv string) (int64, error) {
	if rv == "" || rv == "0" {
		return 0, nil
	}
	v, err := strconv.ParseInt(rv, 10, 64)
	if err != nil || v <= 0 {
		return 0, apierrors.NewBadRequest(fmt.Sprintf("invalid resource version %q", rv))
	}
	return v, nil
}

// getOptions maps a get's resourceVersion onto a read: unset is the most
// recent state, "0" any state, another value a state not older than it.
func getOptions(rv string) (storage.GetOptions, error) {
	n, err := parseResourceVersion(rv)
	switch {
	case err != nil:
		return storage.GetOptions{}, err
	case rv == "":
		return storage.GetOptions{Mode: storage.ReadMostRecent}, nil
	case n == 0:
		return storage.GetOptions{Mode: storage.ReadAny}, nil
	}
	return storage.GetOptions{Mode: storage.ReadNotOlderThan, ResourceVersion: n}, nil
}

// listOptions maps a list's resourceVersion, resourceVersionMatch, limit and
// continue onto a read, cell by cell of the table in the API conventions.
func listOptions(opts metav1.ListOptions, pred storage.SelectionPredicate) (storage.ListOptions, error) {
	rv, err := parseResourceVersion(opts.ResourceVersion)
	if err != nil {
		return storage.ListOptions{}, err
	}
	limit := opts.Limit
	if limit < 0 {
		limit = 0
	}
	out := storage.ListOptions{Limit: limit, Continue: opts.Continue, Predicate: pred, ResourceVersion: rv}
	if opts.Continue != "" {
		if _, _, err := storage.DecodeContinue(opts.Continue, ""); err != nil {
			return out, apierrors.NewBadRequest("invalid continue token: " + err.Error())
		}
	}
	unset, zero := opts.ResourceVersion == "", opts.ResourceVersion == "0"
	switch opts.ResourceVersionMatch {
	case "":
		switch {
		case opts.Continue != "" && !unset && !zero:
			return out, apierrors.NewBadRequest("specifying resource version is not allowed when using continue")
		case unset:
			out.Mode = storage.ReadMostRecent
		case zero:
			out.Mode = storage.ReadAny
		case limit > 0:
			out.Mode = storage.ReadExact
		default:
			out.Mode = storage.ReadNotOlderThan
		}
	case metav1.ResourceVersionMatchExact:
		switch {
		case unset:
			return out, apierrors.NewBadRequest("resourceVersionMatch is forbidden unless resourceVersion is provided")
		case zero:
			return out, apierrors.NewBadRequest(`resourceVersionMatch "Exact" is forbidden for resourceVersion "0"`)
		case opts.Continue != "":
			return out, apierrors.NewBadRequest("resourceVersionMatch is forbidden when continue is provided")
		}
		out.Mode = storage.ReadExact
	case metav1.ResourceVersionMatchNotOlderThan:
		switch {
		case unset:
			return out, apierrors.NewBadRequest("resourceVersionMatch is forbidden unless resourceVersion is provided")
		case opts.Continue != "":
			return out, apierrors.NewBadRequest("resourceVersionMatch is forbidden when continue is provided")
		case zero:
			out.Mode = storage.ReadAny
		default:
			out.Mode = storage.ReadNotOlderThan
		}
	default:
		return out, apierrors.NewBadRequest(fmt.Sprintf("resourceVersionMatch: Unsupported value: %q: supported values: %q, %q", opts.ResourceVersionMatch, metav1.ResourceVersionMatchExact, metav1.ResourceVersionMatchNotOlderThan))
	}
	return out, nil
}

// waitForResourceVersion retries read while the store has not reached the
// requested revision yet, for up to tooLargeRVWait.
func waitForResourceVersion[T any](ctx context.Context, read func() (T, error)) (T, error) {
	deadline := time.Now().Add(tooLargeRVWait)
	for {
		v, err := read()
		if !storage.IsTooLargeResourceVersion(err) || time.Now().After(deadline) {
			return v, err
		}
		select {
		case <-ctx.Done():
			return v, err
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// Get reads one object.
func (s *Store) Get(ctx context.Context, namespace, name string, opts metav1.GetOptions) (runtime.Object, error) {
	gopts, err := getOptions(opts.ResourceVersion)
	if err != nil {
		return nil, err
	}
	obj, err := waitForResourceVersion(ctx, func() (runtime.Object, error) {
		return s.Storage.Get(ctx, s.key(namespace, name), gopts)
	})
	if err != nil {
		return nil, s.apiError(err, name)
	}
	return s.fromStorage(obj)
}

// Predicate builds the storage predicate of a label and a field selector,
// rejecting field labels the resource does not support.
func (s *Store) Predicate(label labels.Selector, field fields.Selector) (storage.SelectionPredicate, error) {
	p := storage.SelectionPredicate{Label: label, Field: field, GetAttrs: s.attrs}
	if field == nil {
		return p, nil
	}
	supported := s.fieldSet(nil)
	for _, req := range field.Requirements() {
		if _, ok := supported[req.Field]; !ok {
			names := make([]string, 0, len(supported))
			for name := range supported {
				if name != "metadata.name" && name != "metadata.namespace" {
					names = append(names, strconv.Quote(name))
				}
			}
			sort.Strings(names)
			names = append([]string{`"metadata.name"`, `"metadata.namespace"`}, names...)
			return p, apierrors.NewBadRequest(fmt.Sprintf("%q is not a known field selector: only %s", req.Field, strings.Join(names, ", ")))
		}
	}
	return p, nil
}

// fieldSet returns the selectable fields of a stored object; with nil, the
// set of supported field names.
func (s *Store) fieldSet(obj runtime.Object) fields.Set {
	set := fields.Set{"metadata.name": "", "metadata.namespace": ""}
	if obj != nil {
		m, _ := meta.Accessor(obj)
		set["metadata.name"] = m.GetName()
		set["metadata.namespace"] = m.GetNamespace()
	}
	if s.Resource.SelectableFields != nil {
		if obj == nil {
			obj = s.newStorageObject()
		}
		for k, v := range s.Resource.SelectableFields(obj) {
			set[k] = v
		}
	}
	return set
}

func (s *Store) newStorageObject() runtime.Object {
	obj := s.Resource.New()
	if s.Resource.Conversion != nil {
		if o, err := s.Resource.Conversion.ToStorage(obj); err == nil {
			return o
		}
	}
	return obj
}

func (s *Store) attrs(obj runtime.Object) (labels.Set, fields.Set, error) {
	m, err := meta.Accessor(obj)
	if err != nil {
		return nil, nil, err
	}
	return labels.Set(m.GetLabels()), s.fieldSet(obj), nil
}

// List reads a collection.
func (s *Store) List(ctx context.Context, namespace string, opts metav1.ListOptions, pred storage.SelectionPredicate) (*List, error) {
	lopts, err := listOptions(opts, pred)
	if err != nil {
		return nil, err
	}
	res, err := waitForResourceVersion(ctx, func() (*storage.ListResult, error) {
		return s.Storage.List(ctx, s.prefix(namespace), lopts)
	})
	if err != nil {
		return nil, s.apiError(err, "")
	}
	items := res.Items
	if s.Resource.Conversion != nil {
		items = make([]runtime.Object, len(res.Items))
		for i, it := range res.Items {
			if items[i], err = s.fromStorage(it); err != nil {
				return nil, err
			}
		}
	}
	apiVersion, kind := s.Resource.ListGVK().ToAPIVersionAndKind()
	return &List{
		TypeMeta: metav1.TypeMeta{APIVersion: apiVersion, Kind: kind},
		ListMeta: metav1.ListMeta{
			ResourceVersion:    strconv.FormatInt(res.ResourceVersion, 10),
			Continue:           res.Continue,
			RemainingItemCount: res.RemainingItemCount,
		},
		Items: items,
	}, nil
}

// Watch streams changes of a collection, per the resourceVersion table of
// the API conventions; the watch ends with ctx.
func (s *Store) Watch(ctx context.Context, namespace string, opts metav1.ListOptions, pred storage.SelectionPredicate) (watch.Interface, error) {
	rv, err := parseResourceVersion(opts.ResourceVersion)
	if err != nil {
		return nil, err
	}
	wopts := storage.WatchOptions{ResourceVersion: rv, Mode: storage.ReadAny, Recursive: true, Predicate: pred, ProgressNotify: opts.AllowWatchBookmarks}
	if opts.ResourceVersion == "" {
		wopts.Mode = storage.ReadMostRecent
	}
	if sie := opts.SendInitialEvents; sie != nil {
		wopts.SendInitialEvents = *sie
		wopts.SkipInitialState = !*sie
		if *sie && rv > 0 {
			wopts.Mode = storage.ReadNotOlderThan
		}
	}
	w, err := s.Storage.Watch(ctx, s.prefix(namespace), wopts)
	if err != nil {
		return nil, s.apiError(err, "")
	}
	if s.Resource.Conversion == nil {
		return w, nil
	}
	return watch.Filter(w, func(e watch.Event) (watch.Event, bool) {
		if e.Type == watch.Error {
			return e, true
		}
		obj, err := s.fromStorage(e.Object)
		if err != nil {
			return watch.Event{Type: watch.Error, Object: responsewriters.ErrorToStatus(err)}, true
		}
		e.Object = obj
		return e, true
	}), nil
}

// validateMeta validates the metadata of a new object.
func (s *Store) validateMeta(obj runtime.Object) field.ErrorList {
	m, _ := meta.Accessor(obj)
	nameFn := apivalidation.NameIsDNSSubdomain
	if s.Resource.NameValidation != nil {
		nameFn = s.Resource.NameValidation
	}
	return apivalidation.ValidateObjectMetaAccessor(m, s.Resource.Namespaced, nameFn, field.NewPath("metadata"))
}

// ensureNamespace makes an object's namespace the request's: an empty one
// is filled in, a cluster-scoped object's cleared, another one refused.
func (s *Store) ensureNamespace(namespace string, m metav1.Object) error {
	want := ""
	if s.Resource.Namespaced {
		want = namespace
	}
	switch got := m.GetNamespace(); {
	case got == want:
	case got == "" || want == "":
		m.SetNamespace(want)
	default:
		return apierrors.NewBadRequest("the namespace of the provided object does not match the namespace sent on the request")
	}
	return nil
}

// beforeCreate fills the system fields of a new object, lets the strategy
// prepare it, and validates and admits it. The object comes defaulted
// (as decoded), with its managedFields recorded.
func (s *Store) beforeCreate(ctx context.Context, namespace string, obj runtime.Object, strategy Strategy, opts WriteOptions) error {
	m, err := meta.Accessor(obj)
	if err != nil {
		return apierrors.NewBadRequest(err.Error())
	}
	if err := s.ensureNamespace(namespace, m); err != nil {
		return err
	}
	if m.GetName() == "" && m.GetGenerateName() != "" {
		m.SetName(generateName(m.GetGenerateName()))
	}
	m.SetUID(uuid.NewUUID())
	m.SetCreationTimestamp(s.now())
	m.SetDeletionTimestamp(nil)
	m.SetDeletionGracePeriodSeconds(nil)
	m.SetResourceVersion("")
	m.SetSelfLink("")
	strategy.PrepareForCreate(obj)
	obj.GetObjectKind().SetGroupVersionKind(s.Resource.GroupVersionKind)
	errs := append(s.validateMeta(obj), strategy.Validate(obj)...)
	if len(errs) > 0 {
		return apierrors.NewInvalid(s.Resource.GroupVersionKind.GroupKind(), m.GetName(), errs)
	}
	if w, ok := strategy.(WarningStrategy); ok {
		for _, text := range w.WarningsOnCreate(obj) {
			warning.Add(ctx, text)
		}
	}
	return s.admit(ctx, admission.Create, "", obj, nil, opts.DryRun)
}

func (s *Store) admit(ctx context.Context, op admission.Operation, subresource string, obj, old runtime.Object, dryRun bool) error {
	if s.Admission == nil {
		return nil
	}
	var m metav1.Object
	if obj != nil {
		m, _ = meta.Accessor(obj)
	} else {
		m, _ = meta.Accessor(old)
	}
	return s.Admission.Admit(ctx, &admission.Attributes{
		Operation:   op,
		Resource:    s.Resource.GroupVersion().WithResource(s.Resource.Plural),
		Kind:        s.Resource.GroupVersionKind,
		Subresource: subresource,
		Namespace:   m.GetNamespace(),
		Name:        m.GetName(),
		Object:      obj,
		OldObject:   old,
		DryRun:      dryRun,
	})
}

// generateName appends five random characters to base, trimmed so that the
// result stays a valid name.
func generateName(base string) string {
	const maxNameLength, randomLength = 63, 5
	if len(base) > maxNameLength-randomLength {
		base = base[:maxNameLength-randomLength]
	}
	return base + rand.String(randomLength)
}

// Create stores a new object, as decoded (with its defaults). Its
// managedFields record what the writer set, before the strategy fills in
// anything of its own.
func (s *Store) Create(ctx context.Context, namespace string, obj runtime.Object, opts WriteOptions) (runtime.Object, error) {
	m, err := meta.Accessor(obj)
	if err != nil {
		return nil, apierrors.NewBadRequest(err.Error())
	}
	if m.GetResourceVersion() != "" {
		return nil, apierrors.NewBadRequest("resourceVersion should not be set on objects to be created")
	}
	if err := s.trackFields(nil, obj, "", opts); err != nil {
		return nil, err
	}
	if err := s.beforeCreate(ctx, namespace, obj, s.Resource.Strategy, opts); err != nil {
		return nil, err
	}
	if opts.DryRun {
		return obj, s.checkAbsent(ctx, namespace, m.GetName())
	}
	stored, err := s.toStorage(obj)
	if err != nil {
		return nil, err
	}
	out, err := s.Storage.Create(ctx, s.key(namespace, m.GetName()), stored)
	if err != nil {
		return nil, s.apiError(err, m.GetName())
	}
	return s.fromStorage(out)
}

// checkAbsent gives the AlreadyExists a real create would give, for dry runs.
func (s *Store) checkAbsent(ctx context.Context, namespace, name string) error {
	_, err := s.Storage.Get(ctx, s.key(namespace, name), storage.GetOptions{})
	switch {
	case err == nil:
		return apierrors.NewAlreadyExists(s.Resource.GroupResource(), name)
	case storage.IsNotFound(err):
		return nil
	}
	return s.apiError(err, name)
}

func (s *Store) strategyFor(subresource string) (Strategy, error) {
	if subresource == "" {
		return s.Resource.Strategy, nil
	}
	st, ok := s.Resource.Subresources[subresource]
	if !ok {
		return nil, apierrors.NewNotFound(s.Resource.GroupResource(), subresource)
	}
	return st, nil
}

// Update computes and stores the new state of an object through one
// endpoint (subresource "" for the main resource). It reports whether the
// object was created.
func (s *Store) Update(ctx context.Context, namespace, name, subresource string, update UpdateFunc, opts WriteOptions) (runtime.Object, bool, error) {
	strategy, err := s.strategyFor(subresource)
	if err != nil {
		return nil, false, err
	}
	key := s.key(namespace, name)
	var created bool
	var result runtime.Object
	// deleteAfter marks an update that removed the last finalizer of an
	// object being deleted: the object is then removed.
	var deleteAfter bool
	tryUpdate := func(currentStored runtime.Object) (runtime.Object, error) {
		created, deleteAfter = false, false
		current, err := s.fromStorage(mutable(currentStored))
		if err != nil {
			return nil, err
		}
		obj, err := update(ctx, current)
		if err != nil {
			return nil, err
		}
		m, err := meta.Accessor(obj)
		if err != nil {
			return nil, apierrors.NewBadRequest(err.Error())
		}
		if m.GetName() != name {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("the name of the object (%s) does not match the name on the URL (%s)", m.GetName(), name))
		}
		if current == nil {
			if subresource != "" || !(strategy.AllowCreateOnUpdate() || opts.Applied) {
				return nil, apierrors.NewNotFound(s.Resource.GroupResource(), name)
			}
			if m.GetResourceVersion() != "" {
				// A version of an object that does not exist.
				return nil, apierrors.NewConflict(s.Resource.GroupResource(), name, errors.New(OptimisticLockErrorMsg))
			}
			if err := s.trackFields(nil, obj, subresource, opts); err != nil {
				return nil, err
			}
			if err := s.beforeCreate(ctx, namespace, obj, strategy, opts); err != nil {
				return nil, err
			}
			created, result = true, obj
			return s.toStorage(obj)
		}
		if err := s.trackFields(current, obj, subresource, opts); err != nil {
			return nil, err
		}
		if err := s.beforeUpdate(ctx, namespace, subresource, obj, current, strategy, opts); err != nil {
			return nil, err
		}
		if s.Fields != nil {
			apply.KeepManagedFieldsTimes(obj, current)
		}
		if m.GetDeletionTimestamp() != nil && len(m.GetFinalizers()) == 0 && !s.keepOnDelete(obj) {
			deleteAfter = true
		}
		result = obj
		return s.toStorage(obj)
	}
	var preconditions *storage.Preconditions
	if opts.UID != "" {
		preconditions = &storage.Preconditions{UID: &opts.UID}
	}
	if opts.DryRun {
		current, err := s.Storage.Get(ctx, key, storage.GetOptions{})
		if err != nil && !storage.IsNotFound(err) {
			return nil, false, s.apiError(err, name)
		}
		if current != nil && preconditions != nil {
			if err := s.checkUID(storage.Unwrap(current), opts.UID); err != nil {
				return nil, false, err
			}
		}
		if _, err := tryUpdate(current); err != nil {
			return nil, false, s.apiError(err, name)
		}
		return result, created, nil
	}
	out, err := s.Storage.GuaranteedUpdate(ctx, key, preconditions, tryUpdate)
	if err != nil {
		return nil, false, s.apiError(err, name)
	}
	if deleteAfter {
		m, _ := meta.Accessor(out)
		rv := m.GetResourceVersion()
		out, err = s.Storage.Delete(ctx, key, &storage.Preconditions{ResourceVersion: &rv}, nil)
		if err != nil && !storage.IsNotFound(err) && !storage.IsConflict(err) {
			return nil, false, s.apiError(err, name)
		}
		if err != nil {
			obj, err := s.Get(ctx, namespace, name, metav1.GetOptions{})
			return obj, false, err
		}
	}
	obj, err := s.fromStorage(out)
	return obj, created, err
}

// beforeUpdate carries over what the client may not change, lets the
// strategy prepare the new object, and validates and admits it against the
// current one. The object comes defaulted, with its managedFields recorded.
func (s *Store) beforeUpdate(ctx context.Context, namespace, subresource string, obj, old runtime.Object, strategy Strategy, opts WriteOptions) error {
	m, err := meta.Accessor(obj)
	if err != nil {
		return apierrors.NewBadRequest(err.Error())
	}
	om, err := meta.Accessor(old)
	if err != nil {
		return apierrors.NewInternalError(err)
	}
	if rv := m.GetResourceVersion(); rv != "" && rv != om.GetResourceVersion() {
		return apierrors.NewConflict(s.Resource.GroupResource(), m.GetName(), errors.New(OptimisticLockErrorMsg))
	}
	if err := s.ensureNamespace(namespace, m); err != nil {
		return err
	}
	m.SetGeneration(om.GetGeneration())
	strategy.PrepareForUpdate(obj, old)
	if m.GetUID() == "" {
		m.SetUID(om.GetUID())
	}
	m.SetCreationTimestamp(om.GetCreationTimestamp())
	if om.GetDeletionTimestamp() != nil {
		m.SetDeletionTimestamp(om.GetDeletionTimestamp())
		m.SetDeletionGracePeriodSeconds(om.GetDeletionGracePeriodSeconds())
	} else {
		m.SetDeletionTimestamp(nil)
		m.SetDeletionGracePeriodSeconds(nil)
	}
	m.SetResourceVersion(om.GetResourceVersion())
	m.SetSelfLink("")
	obj.GetObjectKind().SetGroupVersionKind(s.Resource.GroupVersionKind)
	errs := apivalidation.ValidateObjectMetaAccessorUpdate(m, om, field.NewPath("metadata"))
	errs = append(errs, s.validateMeta(obj)...)
	errs = append(errs, strategy.ValidateUpdate(obj, old)...)
	if len(errs) > 0 {
		return apierrors.NewInvalid(s.Resource.GroupVersionKind.GroupKind(), m.GetName(), errs)
	}
	if w, ok := strategy.(WarningStrategy); ok {
		for _, text := range w.WarningsOnUpdate(obj, old) {
			warning.Add(ctx, text)
		}
	}
	return s.admit(ctx, admission.Update, subresource, obj, old, opts.DryRun)
}

// checkUID is the uid precondition of a dry run, worded as storage words
// it for a real write.
func (s *Store) checkUID(current runtime.Object, uid types.UID) error {
	m, err := meta.Accessor(current)
	if err != nil {
		return apierrors.NewInternalError(err)
	}
	if m.GetUID() != uid {
		return apierrors.NewConflict(s.Resource.GroupResource(), m.GetName(), fmt.Errorf("Precondition failed: UID in precondition: %v, UID in object meta: %v", uid, m.GetUID()))
	}
	return nil
}

func (s *Store) keepOnDelete(obj runtime.Object) bool {
	ds, ok := s.Resource.Strategy.(DeletionStrategy)
	return ok && ds.PrepareForDelete(obj.DeepCopyObject())
}

// Delete deletes one object in two phases: an object with finalizers (or
// one its strategy keeps) gets a deletionTimestamp and stays; anything else
// is removed. It reports whether the object was removed. The returned
// object is the kept object, or for a removed one the last state when the
// resource returns deleted objects, else a Success Status.
func (s *Store) Delete(ctx context.Context, namespace, name string, opts *metav1.DeleteOptions, wo WriteOptions) (runtime.Object, bool, error) {
	key := s.key(namespace, name)
	for attempt := 0; ; attempt++ {
		currentStored, err := s.Storage.Get(ctx, key, storage.GetOptions{})
		if err != nil {
			return nil, false, s.apiError(err, name)
		}
		current, err := s.fromStorage(mutable(currentStored))
		if err != nil {
			return nil, false, err
		}
		m, _ := meta.Accessor(current)
		if err := s.checkDeletePreconditions(m, opts.Preconditions); err != nil {
			return nil, false, err
		}
		if err := s.admit(ctx, admission.Delete, "", nil, current, wo.DryRun); err != nil {
			return nil, false, err
		}
		finalizers := s.deletionFinalizers(m.GetFinalizers(), opts)
		changed := !sets.New(finalizers...).Equal(sets.New(m.GetFinalizers()...))
		strategyKeeps := false
		if ds, ok := s.Resource.Strategy.(DeletionStrategy); ok && m.GetDeletionTimestamp() == nil {
			strategyKeeps = ds.PrepareForDelete(current)
		} else if ok {
			strategyKeeps = ds.PrepareForDelete(current.DeepCopyObject())
		}
		keep := strategyKeeps || len(finalizers) > 0
		if keep {
			if m.GetDeletionTimestamp() != nil && !changed {
				return current, false, nil
			}
			m.SetFinalizers(finalizers)
			if m.GetDeletionTimestamp() == nil {
				now := s.now()
				m.SetDeletionTimestamp(&now)
				// A kind whose strategy keeps it (a namespace) is deleted
				// its own way; anything else waits for finalizers with no
				// grace period, and tells its controllers by a new
				// generation.
				if !strategyKeeps {
					zero := int64(0)
					m.SetDeletionGracePeriodSeconds(&zero)
					if g := m.GetGeneration(); g > 0 {
						m.SetGeneration(g + 1)
					}
				}
			}
			if wo.DryRun {
				return current, false, nil
			}
			rv := m.GetResourceVersion()
			out, err := s.Storage.GuaranteedUpdate(ctx, key, &storage.Preconditions{ResourceVersion: &rv}, func(runtime.Object) (runtime.Object, error) {
				return s.toStorage(current)
			})
			if storage.IsConflict(err) && attempt < 10 {
				continue
			}
			if err != nil {
				return nil, false, s.apiError(err, name)
			}
			obj, err := s.fromStorage(out)
			return obj, false, err
		}
		if wo.DryRun {
			return s.deletedResult(current), true, nil
		}
		rv := m.GetResourceVersion()
		out, err := s.Storage.Delete(ctx, key, &storage.Preconditions{ResourceVersion: &rv}, nil)
		if storage.IsConflict(err) && attempt < 10 {
			continue
		}
		if err != nil {
			return nil, false, s.apiError(err, name)
		}
		last, err := s.fromStorage(out)
		if err != nil {
			return nil, false, err
		}
		return s.deletedResult(last), true, nil
	}
}

// deletionFinalizers returns an object's finalizers for a delete request:
// the garbage collector's "orphan" finalizer when dependents are to be
// orphaned first, "foregroundDeletion" when they are to be deleted first,
// neither for background deletion. An explicit orphanDependents or
// propagationPolicy decides; without one, a finalizer already set (by an
// earlier delete) does; then the resource's default.
func (s *Store) deletionFinalizers(current []string, opts *metav1.DeleteOptions) []string {
	policy := metav1.DeletePropagationBackground
	if s.Resource.OrphanByDefault {
		policy = metav1.DeletePropagationOrphan
	}
	for _, f := range current {
		switch f {
		case metav1.FinalizerOrphanDependents:
			policy = metav1.DeletePropagationOrphan
		case metav1.FinalizerDeleteDependents:
			policy = metav1.DeletePropagationForeground
		}
	}
	//nolint:staticcheck // OrphanDependents is deprecated but still honoured, as kube does.
	if o := opts.OrphanDependents; o != nil {
		policy = metav1.DeletePropagationBackground
		if *o {
			policy = metav1.DeletePropagationOrphan
		}
	} else if p := opts.PropagationPolicy; p != nil {
		policy = *p
	}
	out := make([]string, 0, len(current)+1)
	for _, f := range current {
		if f != metav1.FinalizerOrphanDependents && f != metav1.FinalizerDeleteDependents {
			out = append(out, f)
		}
	}
	switch policy {
	case metav1.DeletePropagationOrphan:
		out = append(out, metav1.FinalizerOrphanDependents)
	case metav1.DeletePropagationForeground:
		out = append(out, metav1.FinalizerDeleteDependents)
	}
	return out
}

func (s *Store) deletedResult(last runtime.Object) runtime.Object {
	if s.Resource.ReturnDeletedObject {
		return last
	}
	m, _ := meta.Accessor(last)
	return &metav1.Status{
		TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
		Status:   metav1.StatusSuccess,
		Details: &metav1.StatusDetails{
			Name:  m.GetName(),
			Group: s.Resource.Group,
			Kind:  s.Resource.Plural,
			UID:   m.GetUID(),
		},
	}
}

// checkDeletePreconditions words a failed precondition of a delete as kube
// does, naming the kind.
func (s *Store) checkDeletePreconditions(m metav1.Object, p *metav1.Preconditions) error {
	if p == nil {
		return nil
	}
	gk := schema.GroupResource{Group: s.Resource.Group, Resource: s.Resource.Kind}
	if p.UID != nil && *p.UID != m.GetUID() {
		return apierrors.NewConflict(gk, m.GetName(), fmt.Errorf("the UID in the precondition (%s) does not match the UID in record (%s). The object might have been deleted and then recreated", *p.UID, m.GetUID()))
	}
	if p.ResourceVersion != nil && *p.ResourceVersion != m.GetResourceVersion() {
		return apierrors.NewConflict(gk, m.GetName(), fmt.Errorf("the ResourceVersion in the precondition (%s) does not match the ResourceVersion in record (%s). The object might have been modified", *p.ResourceVersion, m.GetResourceVersion()))
	}
	return nil
}

// DeleteCollection deletes every object of a collection that the
// predicate selects, and returns them as a list.
func (s *Store) DeleteCollection(ctx context.Context, namespace string, listOpts metav1.ListOptions, pred storage.SelectionPredicate, opts *metav1.DeleteOptions, wo WriteOptions) (runtime.Object, error) {
	list, err := s.List(ctx, namespace, listOpts, pred)
	if err != nil {
		return nil, err
	}
	deleted := make([]runtime.Object, 0, len(list.Items))
	for _, it := range list.Items {
		m, _ := meta.Accessor(storage.Unwrap(it))
		obj, _, err := s.Delete(ctx, m.GetNamespace(), m.GetName(), opts, wo)
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return nil, err
		}
		if _, isStatus := obj.(*metav1.Status); isStatus {
			obj = it
		}
		deleted = append(deleted, obj)
	}
	list.Items = deleted
	return list, nil
}
