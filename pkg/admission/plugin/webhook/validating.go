package webhook

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/klog/v2"

	"github.com/cronplane/cronplane/pkg/admission"
	"github.com/cronplane/cronplane/pkg/audit"
	"github.com/cronplane/cronplane/pkg/warning"
)

// Validating is the ValidatingAdmissionWebhook plugin.
type Validating struct{ *dispatcher }

// Validate calls the matching validating webhooks in parallel; the
// first refusal in their order is the answer.
func (v *Validating) Validate(ctx context.Context, a *admission.Attributes) error {
	if exempt(a.Resource) {
		return nil
	}
	hooks, err := v.validatingHooks(ctx)
	if err != nil {
		return apierrors.NewInternalError(err)
	}
	var invs []*invocation
	for i := range hooks {
		inv, err := v.match(ctx, &hooks[i], i, a)
		if err != nil {
			return err
		}
		if inv != nil {
			invs = append(invs, inv)
		}
	}
	if len(invs) == 1 {
		// Nothing to run beside it: a goroutine would only cost a new
		// stack, grown again by the encoding.
		return v.validate(ctx, invs[0], a)
	}
	errs := make([]error, len(invs))
	var wg sync.WaitGroup
	for i, inv := range invs {
		wg.Add(1)
		go func(i int, inv *invocation) {
			defer wg.Done()
			errs[i] = v.validate(ctx, inv, a)
		}(i, inv)
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// validate calls one webhook; the failure policy decides on a call
// error.
func (v *Validating) validate(ctx context.Context, inv *invocation, a *admission.Attributes) error {
	h := inv.hook
	start := time.Now()
	invoked, err := v.callValidating(ctx, inv, a)
	if invoked || err != nil {
		v.metrics.observe(h.name, "validating", string(a.Operation), time.Since(start), err)
	}
	var ce *callError
	if !errors.As(err, &ce) {
		return err
	}
	if h.failurePolicy == admissionregistrationv1.Ignore {
		klog.FromContext(ctx).Info("Failed calling webhook, failing open", "webhook", h.name, "err", err)
		v.metrics.failOpen.WithLabelValues(h.name, "validating").Inc()
		audit.AddAnnotation(ctx, fmt.Sprintf("failed-open.validating.webhook.admission.k8s.io/round_0_index_%d", inv.index), h.name)
		return nil
	}
	return apierrors.NewInternalError(err)
}

func (v *Validating) callValidating(ctx context.Context, inv *invocation, a *admission.Attributes) (bool, error) {
	h := inv.hook
	_, req, err := prepare(ctx, inv, a)
	if err != nil || req == nil {
		return false, err
	}
	resp, err := v.call(ctx, h, req)
	if err != nil {
		return true, err
	}
	for k, val := range resp.AuditAnnotations {
		audit.AddAnnotation(ctx, h.name+"/"+k, val)
	}
	for _, w := range resp.Warnings {
		warning.Add(ctx, w)
	}
	if !resp.Allowed {
		return true, rejected(h.name, resp.Result)
	}
	return true, nil
}
