package handlers

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/cronplane/cronplane/pkg/admission"
	"github.com/cronplane/cronplane/pkg/auth/authorizer"
	"github.com/cronplane/cronplane/pkg/auth/user"
	"github.com/cronplane/cronplane/pkg/registry/rest"
)

// updatedObject is the rest.UpdatedObjectInfo of an update or a patch.
type updatedObject struct {
	preconditions *metav1.Preconditions
	transform     func(ctx context.Context, current runtime.Object) (runtime.Object, error)
}

func (u *updatedObject) Preconditions() *metav1.Preconditions { return u.preconditions }

func (u *updatedObject) UpdatedObject(ctx context.Context, current runtime.Object) (runtime.Object, error) {
	return u.transform(ctx, current)
}

func uidPrecondition(uid types.UID) *metav1.Preconditions {
	if uid == "" {
		return nil
	}
	return &metav1.Preconditions{UID: &uid}
}

// recordFields records in obj's managedFields what manager changed from
// live (nil for a new object), if the resource keeps them. Objects of a
// subresource's own kind (a TokenRequest) keep none.
func (c *call) recordFields(live, obj runtime.Object, manager string) error {
	if c.entry.Fields == nil || c.res != c.entry.Resource {
		return nil
	}
	return c.entry.Fields.Update(live, obj, manager, c.info.Subresource, time.Now())
}

// attributes describe a write of this request to admission.
func (c *call) attributes(op admission.Operation, obj, old runtime.Object, dryRun []string, options runtime.Object) *admission.Attributes {
	u, _ := user.From(c.r.Context())
	a := &admission.Attributes{
		Operation:   op,
		Resource:    c.entry.GroupVersionResource(),
		Kind:        c.res.GroupVersionKind,
		Subresource: c.info.Subresource,
		Namespace:   c.namespace,
		Name:        c.info.Name,
		Object:      obj,
		OldObject:   old,
		DryRun:      len(dryRun) > 0,
		Options:     options,
		User:        u,
	}
	if obj != nil && a.Name == "" {
		a.Name = metaOf(obj).GetName()
	}
	return a
}

// admit runs the mutating phase of admission on a create or an update.
func (c *call) admit(ctx context.Context, op admission.Operation, obj, old runtime.Object, dryRun []string, options runtime.Object) error {
	return c.h.Admission.Admit(ctx, c.attributes(op, obj, old, dryRun, options))
}

// admitDelete runs the mutating phase of admission on a delete.
func (c *call) admitDelete(ctx context.Context, opts *metav1.DeleteOptions) error {
	return c.h.Admission.Admit(ctx, c.attributes(admission.Delete, nil, nil, opts.DryRun, opts))
}

// validateObject is the validating phase of admission for a create (of
// obj) or a delete (of the stored obj), as the storage calls it.
func (c *call) validateObject(op admission.Operation, dryRun []string, options runtime.Object) rest.ValidateObjectFunc {
	return func(ctx context.Context, obj runtime.Object) error {
		if op == admission.Delete {
			a := c.attributes(op, nil, obj, dryRun, options)
			a.Name = metaOf(obj).GetName()
			return c.h.Admission.Validate(ctx, a)
		}
		return c.h.Admission.Validate(ctx, c.attributes(op, obj, nil, dryRun, options))
	}
}

// authorizedCreate wraps the validation of an update that turns out to
// create the object (a PUT of a missing object, an apply): as in kube,
// the user must also be allowed to create it.
func (c *call) authorizedCreate(validate rest.ValidateObjectFunc) rest.ValidateObjectFunc {
	if c.h.Authorizer == nil {
		return validate
	}
	return func(ctx context.Context, obj runtime.Object) error {
		u, _ := user.From(ctx)
		a := authorizer.Attributes{
			User: u, Verb: "create", ResourceRequest: true, Path: c.r.URL.Path,
			APIGroup: c.info.APIGroup, APIVersion: c.info.APIVersion, Resource: c.info.Resource,
			Subresource: c.info.Subresource, Namespace: c.namespace, Name: c.info.Name,
		}
		d, reason, err := c.h.Authorizer.Authorize(ctx, a)
		switch {
		case d == authorizer.Allow:
			return validate(ctx, obj)
		case err != nil:
			return apierrors.NewInternalError(err)
		}
		return apierrors.NewForbidden(schema.GroupResource{Group: a.APIGroup, Resource: a.Resource}, a.Name, fmt.Errorf("%s", reason))
	}
}

// validateUpdate is the validating phase of admission for an update.
func (c *call) validateUpdate(dryRun []string, options runtime.Object) rest.ValidateObjectUpdateFunc {
	return func(ctx context.Context, obj, old runtime.Object) error {
		return c.h.Admission.Validate(ctx, c.attributes(admission.Update, obj, old, dryRun, options))
	}
}

// restListOptions are list options with their selectors parsed; a request
// for one named object selects it by name.
func (c *call) restListOptions(opts metav1.ListOptions) (*rest.ListOptions, error) {
	ls, fs, err := selectors(opts, c.info)
	if err != nil {
		return nil, err
	}
	return &rest.ListOptions{ListOptions: opts, Label: ls, Field: fs}, nil
}
