// Package admission owns the checks and mutations a write passes between
// decoding and storage, in two phases as kube runs them: mutating plugins
// see the decoded, defaulted object first (their changes are then
// validated and recorded in managedFields), validating plugins see the
// final object after the strategy has prepared and validated it. Each
// plugin lives in its own package under plugin/; the chain is built from
// a list in one place (admissionChain in pkg/apiserver).
package admission

import (
	"context"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/cronplane/cronplane/pkg/auth/user"
)

// Operation is the kind of write being admitted.
type Operation string

const (
	Create Operation = "CREATE"
	Update Operation = "UPDATE"
	Delete Operation = "DELETE"
)

// Attributes describe one write.
type Attributes struct {
	Operation   Operation
	Resource    schema.GroupVersionResource
	Kind        schema.GroupVersionKind
	Subresource string
	Namespace   string
	Name        string
	// Object is the object to be stored (nil on delete); OldObject the
	// stored one (nil on create). A mutating plugin may change Object.
	Object    runtime.Object
	OldObject runtime.Object
	DryRun    bool
	// Options are the request's options: *metav1.CreateOptions,
	// *metav1.UpdateOptions or *metav1.DeleteOptions.
	Options runtime.Object
	// User is who writes.
	User *user.Info
}

// Interface is an admission plugin; Handles says which operations it
// looks at. A plugin implements MutationInterface, ValidationInterface or
// both.
type Interface interface {
	Handles(op Operation) bool
}

// MutationInterface is a plugin of the mutating phase. It returns an API
// error (k8s.io/apimachinery/pkg/api/errors) to refuse the write.
type MutationInterface interface {
	Interface
	Admit(ctx context.Context, a *Attributes) error
}

// ValidationInterface is a plugin of the validating phase; it must not
// change the object.
type ValidationInterface interface {
	Interface
	Validate(ctx context.Context, a *Attributes) error
}

// Chain runs plugins in order, each phase on its own; the first error
// ends a phase.
type Chain []Interface

// Admit runs the mutating phase.
func (c Chain) Admit(ctx context.Context, a *Attributes) error {
	for _, p := range c {
		if m, ok := p.(MutationInterface); ok && m.Handles(a.Operation) {
			if err := m.Admit(ctx, a); err != nil {
				return err
			}
		}
	}
	return nil
}

// Validate runs the validating phase.
func (c Chain) Validate(ctx context.Context, a *Attributes) error {
	for _, p := range c {
		if v, ok := p.(ValidationInterface); ok && v.Handles(a.Operation) {
			if err := v.Validate(ctx, a); err != nil {
				return err
			}
		}
	}
	return nil
}
