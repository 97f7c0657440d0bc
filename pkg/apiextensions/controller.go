package apiextensions

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strings"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"

	apiextensionsv1 "github.com/cronplane/cronplane/pkg/apis/apiextensions/v1"
	apiextensionsregistry "github.com/cronplane/cronplane/pkg/registry/apiextensions"
	"github.com/cronplane/cronplane/pkg/registry/generic"
	cronschema "github.com/cronplane/cronplane/pkg/schema"
)

// Client is how the controller acts, as the server itself.
type Client interface {
	// UpdateStatus writes crd's status, unless crd changed since it was
	// read.
	UpdateStatus(ctx context.Context, crd *apiextensionsv1.CustomResourceDefinition) error
	// Update writes crd (its finalizers), unless it changed since it was
	// read.
	Update(ctx context.Context, crd *apiextensionsv1.CustomResourceDefinition) error
	// DeleteAll deletes every object of the resource in every namespace
	// and returns how many are left (kept by finalizers).
	DeleteAll(ctx context.Context, gvr schema.GroupVersionResource) (remaining int, err error)
}

// Controller keeps definitions' conditions and deletes a deleted
// definition's objects, as kube-apiserver's naming, establishing and
// finalizer controllers do. Every apiserver runs one; they agree through
// the definitions' resourceVersions (a write based on a stale read
// fails and the next event decides again).
type Controller struct {
	Client Client
	// Ratcheting is kube's CRDValidationRatcheting gate, for the
	// validation of custom objects (see versionSchema).
	Ratcheting bool

	mu sync.RWMutex
	// terminating holds the definitions (by uid) whose Terminating
	// condition was True when last seen; the resources built by
	// Resources look their definition up at each create.
	terminating map[types.UID]bool
}

// Resources is the package's Resources, for a definition this controller
// follows: creates are refused from the moment the controller sees the
// definition terminating, as kube-apiserver refuses them, without the
// resources being built again.
func (c *Controller) Resources(crd *apiextensionsv1.CustomResourceDefinition) ([]*generic.Resource, error) {
	c.observe(crd)
	uid := crd.UID
	return resources(crd, func() bool {
		c.mu.RLock()
		defer c.mu.RUnlock()
		return c.terminating[uid]
	}, c.Ratcheting)
}

// observe records that crd is terminating, if it is. A definition never
// stops terminating: an older copy of it read later changes nothing.
func (c *Controller) observe(crd *apiextensionsv1.CustomResourceDefinition) {
	if !crd.Status.IsTrue(apiextensionsv1.Terminating) {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.terminating == nil {
		c.terminating = map[types.UID]bool{}
	}
	c.terminating[crd.UID] = true
}

// forget drops what it knows of definitions that are gone: neither crd
// nor in all.
func (c *Controller) forget(crd *apiextensionsv1.CustomResourceDefinition, all []*apiextensionsv1.CustomResourceDefinition) {
	c.mu.Lock()
	defer c.mu.Unlock()
	live := make(map[types.UID]bool, len(all)+1)
	live[crd.UID] = true
	for _, o := range all {
		live[o.UID] = true
	}
	for uid := range c.terminating {
		if !live[uid] {
			delete(c.terminating, uid)
		}
	}
}

// Sync brings crd forward one step, given all definitions: its names
// accepted or refused, then Established; or, once it is being deleted,
// its objects deleted and then the cleanup finalizer removed.
func (c *Controller) Sync(ctx context.Context, crd *apiextensionsv1.CustomResourceDefinition, all []*apiextensionsv1.CustomResourceDefinition) error {
	c.forget(crd, all)
	c.observe(crd)
	if crd.DeletionTimestamp != nil {
		return c.finalize(ctx, crd)
	}
	status := crd.DeepCopy().Status
	names, accepted := acceptNames(crd, all)
	status.AcceptedNames = names
	status.SetCondition(accepted)
	established := status.Condition(apiextensionsv1.Established)
	switch {
	case established != nil && established.Status == apiextensionsv1.ConditionTrue:
	case accepted.Status == apiextensionsv1.ConditionTrue && crd.Status.IsTrue(apiextensionsv1.NamesAccepted):
		// The server installs the names it sees accepted before it calls
		// Sync: they are served now.
		status.SetCondition(apiextensionsv1.CustomResourceDefinitionCondition{Type: apiextensionsv1.Established,
			Status: apiextensionsv1.ConditionTrue, LastTransitionTime: metav1.Now(),
			Reason: "InitialNamesAccepted", Message: "the initial names have been accepted"})
	case accepted.Status == apiextensionsv1.ConditionTrue:
		// As kube, the names go out first and Established follows once
		// they are served, so that a client that waits for it never finds
		// the resource missing.
		status.SetCondition(apiextensionsv1.CustomResourceDefinitionCondition{Type: apiextensionsv1.Established,
			Status: apiextensionsv1.ConditionFalse, LastTransitionTime: metav1.Now(),
			Reason: "Installing", Message: "the initial names have been accepted"})
	default:
		status.SetCondition(apiextensionsv1.CustomResourceDefinitionCondition{Type: apiextensionsv1.Established,
			Status: apiextensionsv1.ConditionFalse, LastTransitionTime: metav1.Now(),
			Reason: "NotAccepted", Message: "not all names are accepted"})
	}
	setAPIApproval(&status, crd)
	setNonStructural(&status, crd)
	if statusEqual(status, crd.Status) {
		return nil
	}
	out := crd.DeepCopy()
	out.Status = status
	return c.Client.UpdateStatus(ctx, out)
}

// setAPIApproval sets, for a definition in a protected group (k8s.io,
// kubernetes.io), kube's condition on whether its api-approved
// annotation approves it, as kube's API approval controller does.
func setAPIApproval(status *apiextensionsv1.CustomResourceDefinitionStatus, crd *apiextensionsv1.CustomResourceDefinition) {
	if !apiextensionsregistry.IsProtectedGroup(crd.Spec.Group) {
		return
	}
	state, msg := apiextensionsregistry.APIApprovalState(crd.Annotations)
	cond := apiextensionsv1.CustomResourceDefinitionCondition{Type: apiextensionsv1.KubernetesAPIApprovalPolicyConformant, Status: apiextensionsv1.ConditionFalse, LastTransitionTime: metav1.Now(), Message: msg}
	switch state {
	case apiextensionsregistry.APIApproved:
		cond.Status, cond.Reason = apiextensionsv1.ConditionTrue, "ApprovedAnnotation"
	case apiextensionsregistry.APIApprovalBypassed:
		cond.Reason = "UnapprovedAnnotation"
	case apiextensionsregistry.APIApprovalInvalid:
		cond.Reason = "InvalidAnnotation"
	default:
		cond.Reason = "MissingAnnotation"
	}
	status.SetCondition(cond)
}

// setNonStructural sets kube's NonStructuralSchema condition on a legacy
// definition, stored with spec.preserveUnknownFields (its objects keep
// the fields their schema does not name) or with a schema that is not
// structural, which kube's older releases accepted; it removes the
// condition from a definition without either.
func setNonStructural(status *apiextensionsv1.CustomResourceDefinitionStatus, crd *apiextensionsv1.CustomResourceDefinition) {
	cond := apiextensionsv1.CustomResourceDefinitionCondition{Type: apiextensionsv1.NonStructural,
		Status: apiextensionsv1.ConditionTrue, LastTransitionTime: metav1.Now()}
	var violations field.ErrorList
	if crd.Spec.PreserveUnknownFields {
		violations = append(violations, field.Invalid(field.NewPath("spec", "preserveUnknownFields"), true, "must be false"))
	}
	for i, v := range crd.Spec.Versions {
		if v.Schema == nil || v.Schema.OpenAPIV3Schema == nil {
			continue
		}
		unreadable, errs := cronschema.StructuralViolations(v.Schema.OpenAPIV3Schema, field.NewPath("spec", "versions").Index(i).Child("schema", "openAPIV3Schema"))
		if unreadable != "" {
			cond.Status = apiextensionsv1.ConditionUnknown
			cond.Reason, cond.Message = "StructuralError", fmt.Sprintf("failed to check validation schema for version %s: %s", v.Name, unreadable)
			status.SetCondition(cond)
			return
		}
		violations = append(violations, errs...)
	}
	if len(violations) == 0 {
		status.RemoveCondition(apiextensionsv1.NonStructural)
		return
	}
	cond.Reason, cond.Message = "Violations", violations.ToAggregate().Error()
	status.SetCondition(cond)
}

// statusEqual compares statuses ignoring transition times.
func statusEqual(a, b apiextensionsv1.CustomResourceDefinitionStatus) bool {
	strip := func(s apiextensionsv1.CustomResourceDefinitionStatus) apiextensionsv1.CustomResourceDefinitionStatus {
		conds := make([]apiextensionsv1.CustomResourceDefinitionCondition, len(s.Conditions))
		for i, c := range s.Conditions {
			c.LastTransitionTime = metav1.Time{}
			conds[i] = c
		}
		s.Conditions = conds
		return s
	}
	return reflect.DeepEqual(strip(a), strip(b))
}

// acceptNames decides which of crd's names it may have: a name another
// definition of the group has accepted is refused (kube's reasons:
// PluralConflict, SingularConflict, ShortNamesConflict, KindConflict,
// ListKindConflict), and the definition keeps the names it had.
func acceptNames(crd *apiextensionsv1.CustomResourceDefinition, all []*apiextensionsv1.CustomResourceDefinition) (apiextensionsv1.CustomResourceDefinitionNames, apiextensionsv1.CustomResourceDefinitionCondition) {
	resources, kinds := map[string]bool{}, map[string]bool{}
	for _, o := range all {
		if o.Spec.Group != crd.Spec.Group || o.Name == crd.Name {
			continue
		}
		n := o.Status.AcceptedNames
		resources[n.Plural], resources[n.Singular] = true, true
		for _, s := range n.ShortNames {
			resources[s] = true
		}
		kinds[n.Kind], kinds[n.ListKind] = true, true
	}
	cond := apiextensionsv1.CustomResourceDefinitionCondition{Type: apiextensionsv1.NamesAccepted, Status: apiextensionsv1.ConditionTrue,
		LastTransitionTime: metav1.Now(), Reason: "NoConflicts", Message: "no conflicts found"}
	refuse := func(reason, msg string) {
		cond.Status, cond.Reason, cond.Message = apiextensionsv1.ConditionFalse, reason, msg
	}
	want, have := crd.Spec.Names, crd.Status.AcceptedNames
	out := have
	fresh := func(requested, accepted string, used map[string]bool) error {
		if requested == accepted || !used[requested] {
			return nil
		}
		return fmt.Errorf("%q is already in use", requested)
	}
	if err := fresh(want.Plural, have.Plural, resources); err != nil {
		refuse("PluralConflict", err.Error())
	} else {
		out.Plural = want.Plural
	}
	if err := fresh(want.Singular, have.Singular, resources); err != nil {
		refuse("SingularConflict", err.Error())
	} else {
		out.Singular = want.Singular
	}
	if !reflect.DeepEqual(want.ShortNames, have.ShortNames) {
		var msgs []string
		for _, s := range want.ShortNames {
			if err := fresh(s, "", resources); err != nil && !slices.Contains(have.ShortNames, s) {
				msgs = append(msgs, err.Error())
			}
		}
		if len(msgs) > 0 {
			sort.Strings(msgs)
			msg := strings.Join(msgs, ", ")
			if len(msgs) > 1 {
				msg = "[" + msg + "]"
			}
			refuse("ShortNamesConflict", msg)
		} else {
			out.ShortNames = want.ShortNames
		}
	}
	if err := fresh(want.Kind, have.Kind, kinds); err != nil {
		refuse("KindConflict", err.Error())
	} else {
		out.Kind = want.Kind
	}
	if err := fresh(want.ListKind, have.ListKind, kinds); err != nil {
		refuse("ListKindConflict", err.Error())
	} else {
		out.ListKind = want.ListKind
	}
	out.Categories = want.Categories
	return out, cond
}

// finalize deletes the objects of a definition being deleted, then
// lets it go by removing the cleanup finalizer.
func (c *Controller) finalize(ctx context.Context, crd *apiextensionsv1.CustomResourceDefinition) error {
	if !slices.Contains(crd.Finalizers, apiextensionsv1.CleanupFinalizer) {
		return nil
	}
	out := crd.DeepCopy()
	setTerminating := func(reason, msg string) error {
		prev := out.Status.Condition(apiextensionsv1.Terminating)
		if prev != nil && prev.Reason == reason && prev.Message == msg {
			return nil
		}
		out.Status.SetCondition(apiextensionsv1.CustomResourceDefinitionCondition{Type: apiextensionsv1.Terminating,
			Status: apiextensionsv1.ConditionTrue, LastTransitionTime: metav1.Now(), Reason: reason, Message: msg})
		if err := c.Client.UpdateStatus(ctx, out); err != nil {
			return err
		}
		c.observe(out)
		return nil
	}
	if crd.Status.IsTrue(apiextensionsv1.Established) {
		if err := setTerminating("InstanceDeletionInProgress", "CustomResource deletion is in progress"); err != nil {
			return err
		}
		gvr := schema.GroupVersionResource{Group: crd.Spec.Group, Version: crd.Spec.StorageVersion(), Resource: crd.Status.AcceptedNames.Plural}
		left, err := c.Client.DeleteAll(ctx, gvr)
		if err != nil {
			_ = setTerminating("InstanceDeletionFailed", fmt.Sprintf("could not issue all deletes: %v", err))
			return err
		}
		if left > 0 {
			return fmt.Errorf("%d objects of %s remain", left, gvr.GroupResource())
		}
		if err := setTerminating("InstanceDeletionCompleted", "removed all instances"); err != nil {
			return err
		}
	}
	latest := out.DeepCopy()
	var kept []string
	for _, f := range latest.Finalizers {
		if f != apiextensionsv1.CleanupFinalizer {
			kept = append(kept, f)
		}
	}
	latest.Finalizers = kept
	return c.Client.Update(ctx, latest)
}
