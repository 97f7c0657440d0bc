// Package admission owns the checks and mutations that run on a write after
// decoding and defaulting and before storage: plugins see the operation,
// the resource, the new and the old object, and may reject the request.
// Plugins are chained in order; the first error ends the chain.
package admission

import (
	"context"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
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
	// stored one (nil on create).
	Object    runtime.Object
	OldObject runtime.Object
	DryRun    bool
}

// Interface is an admission plugin. Admit returns an API error (from
// k8s.io/apimachinery/pkg/api/errors) to reject the request.
type Interface interface {
	Admit(ctx context.Context, a *Attributes) error
}

// Chain runs plugins in order.
type Chain []Interface

func (c Chain) Admit(ctx context.Context, a *Attributes) error {
	for _, p := range c {
		if err := p.Admit(ctx, a); err != nil {
			return err
		}
	}
	return nil
}
