package apply

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/klog/v2"
	"sigs.k8s.io/structured-merge-diff/v4/fieldpath"
	"sigs.k8s.io/structured-merge-diff/v4/merge"
	"sigs.k8s.io/structured-merge-diff/v4/typed"
	"sigs.k8s.io/structured-merge-diff/v4/value"

	"github.com/cronplane/cronplane/pkg/schema"
)

// Manager maintains the field ownership of one resource's objects.
type Manager struct {
	pt         *typed.ParseableType
	apiVersion string
	// updaters per subresource ("" is the main resource); each ignores the
	// fields its endpoint may not change.
	updaters map[string]*merge.Updater
	// empty is the typed value of an empty object, the live state a new
	// object is compared with.
	empty *typed.TypedValue
}

// stripped are never owned: the server sets them.
var stripped = []fieldpath.Path{
	fieldpath.MakePathOrDie("apiVersion"),
	fieldpath.MakePathOrDie("kind"),
	fieldpath.MakePathOrDie("metadata", "name"),
	fieldpath.MakePathOrDie("metadata", "namespace"),
	fieldpath.MakePathOrDie("metadata", "creationTimestamp"),
	fieldpath.MakePathOrDie("metadata", "selfLink"),
	fieldpath.MakePathOrDie("metadata", "uid"),
	fieldpath.MakePathOrDie("metadata", "generation"),
	fieldpath.MakePathOrDie("metadata", "managedFields"),
	fieldpath.MakePathOrDie("metadata", "resourceVersion"),
	fieldpath.MakePathOrDie("metadata", "deletionTimestamp"),
	fieldpath.MakePathOrDie("metadata", "deletionGracePeriodSeconds"),
}

// NewManager builds the manager of objects of schema st served as
// apiVersion; empty is an empty object of the type, the live state new
// objects are compared with.
// reset lists, per subresource, the top-level fields that endpoint resets
// (status on the main resource, spec on /status): nobody owns them there.
func NewManager(st *schema.Structural, empty runtime.Object, apiVersion string, reset map[string][]string) (*Manager, error) {
	m := &Manager{pt: ParseableType(st), apiVersion: apiVersion, updaters: map[string]*merge.Updater{}}
	var err error
	if m.empty, err = m.toTyped(empty); err != nil {
		return nil, err
	}
	if _, ok := reset[""]; !ok {
		reset = mergeReset(reset, "", nil)
	}
	for sub, fields := range reset {
		ignored := fieldpath.NewSet(stripped...)
		for _, f := range fields {
			ignored.Insert(fieldpath.MakePathOrDie(f))
		}
		m.updaters[sub] = (&merge.UpdaterBuilder{
			Converter:     identity{},
			IgnoredFields: map[fieldpath.APIVersion]*fieldpath.Set{fieldpath.APIVersion(apiVersion): ignored},
		}).BuildUpdater()
	}
	return m, nil
}

func mergeReset(r map[string][]string, sub string, fields []string) map[string][]string {
	out := map[string][]string{sub: fields}
	for k, v := range r {
		out[k] = v
	}
	return out
}

type identity struct{}

func (identity) Convert(v *typed.TypedValue, _ fieldpath.APIVersion) (*typed.TypedValue, error) {
	return v, nil
}
func (identity) IsMissingVersionError(error) bool { return false }

func (m *Manager) updater(subresource string) *merge.Updater {
	if u, ok := m.updaters[subresource]; ok {
		return u
	}
	return m.updaters[""]
}

// toTyped converts an object to a typed value for a comparison, which
// walks it once: a Go object is read in place through reflection, as
// kube reads it, without building its unstructured form; its
// managedFields are among the fields every updater ignores.
//
// Unlike kube, which validates it first, a Go object is compared as it
// is: its schema is derived from its Go type, so the only thing validation
// could find (a keyed list item without its key) fails the comparison
// too, and validating walked the object once more by reflection, the
// costliest part of recording a write.
func (m *Manager) toTyped(obj runtime.Object) (*typed.TypedValue, error) {
	if _, ok := obj.(runtime.Unstructured); ok {
		return m.toTypedUnstructured(obj)
	}
	v, err := value.NewValueReflect(obj)
	if err != nil {
		return nil, err
	}
	// Deprecated on the grounds that validation became cheap; for a
	// CronJob's update it is still half the time and half the
	// allocations (BenchmarkUpdate_CronJob: 190 µs and 791 allocations
	// validated, 72–96 µs and 420 without).
	return typed.AsTypedUnvalidated(v, m.pt.Schema, m.pt.TypeRef), nil //nolint:staticcheck
}

// toTypedUnstructured converts an object, without its managedFields, to a
// typed value over its unstructured form, which leaves out empty optional
// fields (such as a null creationTimestamp) as kube does, and which an
// apply, walking the live object many times, reads faster than a Go
// object through reflection.
func (m *Manager) toTypedUnstructured(obj runtime.Object) (*typed.TypedValue, error) {
	var u map[string]interface{}
	if uo, ok := obj.(runtime.Unstructured); ok {
		u = withoutManagedFields(uo.UnstructuredContent())
	} else {
		var err error
		if u, err = runtime.DefaultUnstructuredConverter.ToUnstructured(obj); err != nil {
			return nil, err
		}
		if md, ok := u["metadata"].(map[string]interface{}); ok {
			delete(md, "managedFields")
		}
	}
	return m.pt.FromUnstructured(u, typed.AllowDuplicates)
}

// withoutManagedFields is content without metadata.managedFields, sharing
// everything else with it.
func withoutManagedFields(content map[string]interface{}) map[string]interface{} {
	md, ok := content["metadata"].(map[string]interface{})
	if !ok {
		return content
	}
	if _, has := md["managedFields"]; !has {
		return content
	}
	stripped := make(map[string]interface{}, len(md))
	for k, v := range md {
		if k != "managedFields" {
			stripped[k] = v
		}
	}
	out := make(map[string]interface{}, len(content))
	for k, v := range content {
		out[k] = v
	}
	out["metadata"] = stripped
	return out
}

// identity of a managedFields entry, the key of the merge library's map.
type entryID struct {
	Manager     string                            `json:"manager"`
	Operation   metav1.ManagedFieldsOperationType `json:"operation"`
	APIVersion  string                            `json:"apiVersion"`
	Subresource string                            `json:"subresource,omitempty"`
}

func (id entryID) key() string {
	b, _ := json.Marshal(id)
	return string(b)
}

func parseKey(key string) entryID {
	var id entryID
	_ = json.Unmarshal([]byte(key), &id)
	return id
}

// managed is the decoded form of metadata.managedFields.
type managed struct {
	fields fieldpath.ManagedFields
	times  map[string]*metav1.Time
	// decoded are the decoded sets of the entries read, by key: an entry
	// whose set has not changed is written back as it was encoded.
	decoded map[string]*fieldSet
}

func decodeManaged(entries []metav1.ManagedFieldsEntry) (managed, error) {
	return decodeManagedBy(entries, func(e metav1.ManagedFieldsEntry) string {
		return entryID{e.Manager, e.Operation, e.APIVersion, e.Subresource}.key()
	})
}

// decodeManagedBy decodes entries under the keys key gives them; of two
// entries under one key, the later is kept.
func decodeManagedBy(entries []metav1.ManagedFieldsEntry, key func(metav1.ManagedFieldsEntry) string) (managed, error) {
	out := managed{fields: fieldpath.ManagedFields{}, times: map[string]*metav1.Time{}, decoded: map[string]*fieldSet{}}
	for _, e := range entries {
		key := key(e)
		set := fieldpath.NewSet()
		if e.FieldsV1 != nil {
			f, err := decodeFieldSet(e.FieldsV1.Raw)
			if err != nil {
				return out, fmt.Errorf("decoding managedFields of %q: %w", e.Manager, err)
			}
			set, out.decoded[key] = f.set, f
		}
		out.fields[key] = fieldpath.NewVersionedSet(set, fieldpath.APIVersion(e.APIVersion), e.Operation == metav1.ManagedFieldsOperationApply)
		out.times[key] = e.Time
	}
	return out, nil
}

func (mf managed) encode() ([]metav1.ManagedFieldsEntry, error) {
	var out []metav1.ManagedFieldsEntry
	for key, vs := range mf.fields {
		if vs.Set().Empty() {
			continue
		}
		var raw []byte
		var err error
		if f := mf.decoded[key]; f != nil && (f.set == vs.Set() || f.set.Equals(vs.Set())) {
			raw, err = f.encoded()
		} else {
			raw, err = encodeFieldSet(vs.Set())
		}
		if err != nil {
			return nil, err
		}
		id := parseKey(key)
		out = append(out, metav1.ManagedFieldsEntry{
			Manager: id.Manager, Operation: id.Operation, APIVersion: string(vs.APIVersion()),
			Time: mf.times[key], FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: raw}, Subresource: id.Subresource,
		})
	}
	sort.Slice(out, func(i, j int) bool {
		p, q := out[i], out[j]
		if p.Operation != q.Operation {
			return p.Operation < q.Operation
		}
		var ps, qs int64
		if p.Time != nil {
			ps = p.Time.Unix()
		}
		if q.Time != nil {
			qs = q.Time.Unix()
		}
		if ps != qs {
			return ps < qs
		}
		if p.Manager != q.Manager {
			return p.Manager < q.Manager
		}
		if p.APIVersion != q.APIVersion {
			return p.APIVersion < q.APIVersion
		}
		return p.Subresource < q.Subresource
	})
	return out, nil
}

// isReset reports whether a write asks to clear managedFields: an empty
// list (not a missing one), or a list holding one empty entry.
func isReset(entries []metav1.ManagedFieldsEntry) bool {
	if len(entries) == 0 {
		return entries != nil
	}
	return len(entries) == 1 && entries[0].Manager == "" && entries[0].Operation == "" && entries[0].APIVersion == "" &&
		entries[0].FieldsType == "" && entries[0].FieldsV1 == nil && entries[0].Time == nil && entries[0].Subresource == ""
}

// Update records a non-apply write: manager owns what it changed from live
// (nil on create) to obj, whose managedFields it sets. It never conflicts.
//
// As in kube, the writer may set managedFields through the main resource
// (or clear them), not through a subresource, whose writes keep live's;
// managedFields that do not decode count as not set; and an existing
// object that has none keeps none: only a create or an apply starts
// tracking its fields.
func (m *Manager) Update(live, obj runtime.Object, manager, subresource string, now time.Time) error {
	om, err := meta.Accessor(obj)
	if err != nil {
		return err
	}
	var liveEntries []metav1.ManagedFieldsEntry
	if live != nil {
		lm, err := meta.Accessor(live)
		if err != nil {
			return err
		}
		liveEntries = lm.GetManagedFields()
	}
	entries := om.GetManagedFields()
	switch {
	case subresource != "" && live != nil:
		entries = liveEntries
	case isReset(entries):
		entries = nil
	case len(entries) == 0:
		entries = liveEntries
	}
	mf, err := decodeManaged(entries)
	if err != nil {
		// As kube, managedFields written that do not decode are dropped
		// for live's; and when those do not either, the object is left
		// without any, rather than the write refused.
		if mf, err = decodeManaged(liveEntries); err != nil {
			om.SetManagedFields(nil)
			return nil
		}
	}
	if len(mf.fields) == 0 && live != nil {
		om.SetManagedFields(nil)
		return nil
	}
	key := entryID{manager, metav1.ManagedFieldsOperationUpdate, m.apiVersion, subresource}.key()
	// As kube does, the write is first recorded under a manager of its
	// own: only when it changed something does the writer's entry take
	// those fields and a new time.
	liveTyped, newTyped, err := m.pair(live, obj)
	var fields fieldpath.ManagedFields
	if err == nil {
		_, fields, err = m.updater(subresource).Update(liveTyped, newTyped, fieldpath.APIVersion(m.apiVersion), mf.fields, currentOperation)
	}
	if err != nil {
		// As kube does, an object without a typed form (a map-list item
		// without its key, a value of another type than the schema's)
		// keeps no managedFields, and the write goes on: validation, not
		// field ownership, answers for what is wrong with it.
		logDropped(err, om)
		om.SetManagedFields(nil)
		return nil
	}
	changed, took := fields[currentOperation]
	if took {
		delete(fields, currentOperation)
		set := changed.Set()
		if prev, ok := fields[key]; ok {
			set = set.Union(prev.Set())
		}
		// Nobody owns metadata itself (a new custom object's metadata is
		// new), only what is inside, as in kube.
		fields[key] = fieldpath.NewVersionedSet(set.Difference(metadataNode), changed.APIVersion(), changed.Applied())
	}
	return m.store(om, mf, fields, key, now, took)
}

// currentOperation is the merge library's manager of the write being
// recorded, before its fields go to the writer's entry.
const currentOperation = "current-operation"

// pair converts the live object (nil for a create) and the new one to
// their typed forms.
func (m *Manager) pair(live, obj runtime.Object) (*typed.TypedValue, *typed.TypedValue, error) {
	newTyped, err := m.toTyped(obj)
	if err != nil {
		return nil, nil, err
	}
	if live == nil {
		// As kube does, a new object is compared with an empty one of its
		// type, so that fields set only by the type itself are not owned.
		return m.empty, newTyped, nil
	}
	liveTyped, err := m.toTyped(live)
	if err != nil {
		return nil, nil, err
	}
	return liveTyped, newTyped, nil
}

// metadataNode is the path of metadata itself, which nobody owns.
var metadataNode = fieldpath.NewSet(fieldpath.MakePathOrDie("metadata"))

// lastDropLog is when logDropped last logged, in Unix nanoseconds.
var lastDropLog atomic.Int64

// logDropped logs, at most once a second as kube does, that an object's
// managedFields were dropped.
func logDropped(err error, om metav1.Object) {
	now := time.Now().UnixNano()
	last := lastDropLog.Load()
	if now-last < int64(time.Second) || !lastDropLog.CompareAndSwap(last, now) {
		return
	}
	klog.ErrorS(err, "Failed to update managedFields; they are dropped", "namespace", om.GetNamespace(), "name", om.GetName())
}

// store writes the new ownership into the object, stamping the writer's
// entry with now when stamp is set.
func (m *Manager) store(om metav1.Object, before managed, after fieldpath.ManagedFields, key string, now time.Time, stamp bool) error {
	times := map[string]*metav1.Time{}
	for k := range after {
		times[k] = before.times[k]
	}
	if stamp {
		t := metav1.NewTime(now.UTC().Truncate(time.Second))
		times[key] = &t
	}
	entries, err := managed{fields: after, times: times, decoded: before.decoded}.encode()
	if err != nil {
		return apierrors.NewInternalError(err)
	}
	// No entries is no managedFields at all, as kube writes it (an
	// unstructured object would otherwise show an empty list).
	om.SetManagedFields(entries)
	return nil
}

// Apply merges an apply configuration into live (nil when the object
// does not exist; then empty is used) for manager, and returns the object
// to store with its managedFields set.
func (m *Manager) Apply(live, empty runtime.Object, patch Configuration, manager, subresource string, force bool, now time.Time) (runtime.Object, error) {
	base := live
	if base == nil {
		base = empty
	}
	bm, err := meta.Accessor(base)
	if err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	mf, err := decodeManaged(bm.GetManagedFields())
	if err != nil {
		return nil, apierrors.NewBadRequest(err.Error())
	}
	liveTyped, err := m.toTypedUnstructured(base)
	if err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	if live == nil {
		liveTyped = liveTyped.Empty()
	}
	config, err := m.pt.FromUnstructured(patch.Fields)
	if err != nil {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("error applying patch: %v", err))
	}
	key := entryID{manager, metav1.ManagedFieldsOperationApply, m.apiVersion, subresource}.key()
	updater, version := m.updater(subresource), fieldpath.APIVersion(m.apiVersion)
	merged, fields, err := updater.Apply(liveTyped, config, version, mf.fields, key, force)
	if conflicts, ok := err.(merge.Conflicts); ok && manager == kubectlManager {
		if allowed := m.clientSideApplied(bm.GetAnnotations(), liveTyped); allowed != nil {
			if rest := outside(conflicts, allowed); len(rest) > 0 {
				err = rest
			} else {
				merged, fields, err = updater.Apply(liveTyped, config, version, mf.fields, key, true)
			}
		}
	}
	if err != nil {
		if conflicts, ok := err.(merge.Conflicts); ok {
			return nil, conflictError(conflicts)
		}
		return nil, apierrors.NewBadRequest(fmt.Sprintf("error applying patch: %v", err))
	}
	// The merge library answers nil when the apply changes nothing; the
	// applier's entry then keeps its time, as kube keeps it.
	changed := merged != nil
	if !changed {
		merged = liveTyped
	}
	u, ok := merged.AsValue().Unstructured().(map[string]interface{})
	if !ok {
		u = map[string]interface{}{}
	}
	out := empty.DeepCopyObject()
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u, out); err != nil {
		return nil, apierrors.NewBadRequest(err.Error())
	}
	om, err := meta.Accessor(out)
	if err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	// The system fields of the stored object survive the merge, which
	// ignores them.
	om.SetUID(bm.GetUID())
	// A resourceVersion in the configuration is a precondition, as in
	// kube; else the stored one carries over.
	if om.GetResourceVersion() == "" {
		om.SetResourceVersion(bm.GetResourceVersion())
	}
	om.SetCreationTimestamp(bm.GetCreationTimestamp())
	om.SetGeneration(bm.GetGeneration())
	om.SetDeletionTimestamp(bm.GetDeletionTimestamp())
	if manager == kubectlManager {
		if err := recordLastApplied(om, patch.Sent); err != nil {
			return nil, apierrors.NewInternalError(err)
		}
	}
	if err := m.store(om, mf, fields, key, now, changed); err != nil {
		return nil, err
	}
	return out, nil
}

// KeepManagedFieldsTimes gives obj current's managedFields when the two
// objects differ in nothing but the times of those entries, so that a
// write that changes nothing stores nothing, as kube skips it.
func KeepManagedFieldsTimes(obj, current runtime.Object) {
	om, err := meta.Accessor(obj)
	if err != nil {
		return
	}
	cm, err := meta.Accessor(current)
	if err != nil {
		return
	}
	entries, old := om.GetManagedFields(), cm.GetManagedFields()
	if len(entries) != len(old) || len(entries) == 0 {
		return
	}
	timesDiffer := false
	for i := range entries {
		a, b := entries[i], old[i]
		if !a.Time.Equal(b.Time) {
			timesDiffer = true
		}
		a.Time, b.Time = nil, nil
		if !equality.Semantic.DeepEqualWithNilDifferentFromEmpty(a, b) {
			return
		}
	}
	if !timesDiffer {
		return
	}
	om.SetManagedFields(old)
	if !equality.Semantic.DeepEqualWithNilDifferentFromEmpty(obj, current) {
		om.SetManagedFields(entries)
	}
}

// conflictError words conflicts as kube does.
func conflictError(conflicts merge.Conflicts) error {
	causes := make([]metav1.StatusCause, 0, len(conflicts))
	for _, c := range conflicts {
		causes = append(causes, metav1.StatusCause{
			Type:    metav1.CauseTypeFieldManagerConflict,
			Message: fmt.Sprintf("conflict with %v", printManager(c.Manager)),
			Field:   c.Path.String(),
		})
	}
	var msg string
	if len(conflicts) == 1 {
		msg = fmt.Sprintf("Apply failed with 1 conflict: conflict with %v: %v", printManager(conflicts[0].Manager), conflicts[0].Path)
	} else {
		byManager := map[string][]string{}
		var managers []string
		for _, c := range conflicts {
			if _, ok := byManager[c.Manager]; !ok {
				managers = append(managers, c.Manager)
			}
			byManager[c.Manager] = append(byManager[c.Manager], c.Path.String())
		}
		sort.Strings(managers)
		var lines []string
		for _, mgr := range managers {
			lines = append(lines, fmt.Sprintf("conflicts with %v:", printManager(mgr)))
			for _, p := range byManager[mgr] {
				lines = append(lines, "- "+p)
			}
		}
		msg = fmt.Sprintf("Apply failed with %d conflicts: %s", len(conflicts), strings.Join(lines, "\n"))
	}
	return apierrors.NewApplyConflict(causes, msg)
}

func printManager(key string) string {
	id := parseKey(key)
	name := fmt.Sprintf("%q", id.Manager)
	if id.Subresource != "" {
		name = fmt.Sprintf("%s with subresource %q", name, id.Subresource)
	}
	if id.Operation == metav1.ManagedFieldsOperationUpdate {
		return fmt.Sprintf("%s using %v", name, id.APIVersion)
	}
	return name
}
