package webhook

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"time"

	jsonpatch "github.com/evanphx/json-patch"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/klog/v2"
	sigsjson "sigs.k8s.io/json"

	"github.com/cronplane/cronplane/pkg/admission"
	"github.com/cronplane/cronplane/pkg/audit"
	"github.com/cronplane/cronplane/pkg/warning"
)

// Mutating is the MutatingAdmissionWebhook plugin.
type Mutating struct{ *dispatcher }

// Admit calls the matching mutating webhooks in order (configurations by
// name, webhooks as listed), applying each one's patch before the next
// is called. As kube's, a second round calls once more each webhook with
// reinvocationPolicy IfNeeded that a later webhook's change came after.
func (m *Mutating) Admit(ctx context.Context, a *admission.Attributes) error {
	if exempt(a.Resource) {
		return nil
	}
	hooks, err := m.mutatingHooks(ctx)
	if err != nil {
		return apierrors.NewInternalError(err)
	}
	reinvoke := map[int]bool{}
	var invokedIfNeeded []int
	for i := range hooks {
		invoked, changed, err := m.callMutating(ctx, 0, i, &hooks[i], a)
		if err != nil {
			return err
		}
		if changed {
			for _, j := range invokedIfNeeded {
				reinvoke[j] = true
			}
		}
		if invoked && hooks[i].reinvoke {
			invokedIfNeeded = append(invokedIfNeeded, i)
		}
	}
	for i := range hooks {
		if !reinvoke[i] {
			continue
		}
		if _, _, err := m.callMutating(ctx, 1, i, &hooks[i], a); err != nil {
			return err
		}
	}
	return nil
}

// mutationAnnotation is the audit annotation of one mutating call.
type mutationAnnotation struct {
	Configuration string          `json:"configuration"`
	Webhook       string          `json:"webhook"`
	Mutated       *bool           `json:"mutated,omitempty"`
	Patch         json.RawMessage `json:"patch,omitempty"`
	PatchType     string          `json:"patchType,omitempty"`
}

func annotate(ctx context.Context, key string, v mutationAnnotation) {
	b, err := json.Marshal(v)
	if err == nil {
		audit.AddAnnotation(ctx, key, string(b))
	}
}

// callMutating calls one webhook if it matches, and applies its patch to
// a.Object in place; the failure policy decides on a call error.
func (m *Mutating) callMutating(ctx context.Context, round, index int, h *hook, a *admission.Attributes) (invoked, changed bool, err error) {
	inv, err := m.match(ctx, h, index, a)
	if err != nil || inv == nil {
		return false, false, err
	}
	start := time.Now()
	invoked, changed, err = m.mutate(ctx, round, inv, a)
	if invoked || err != nil {
		m.metrics.observe(h.name, "admit", string(a.Operation), time.Since(start), err)
	}
	var ce *callError
	if !errors.As(err, &ce) {
		return invoked, changed, err
	}
	if h.failurePolicy == admissionregistrationv1.Ignore {
		klog.FromContext(ctx).Info("Failed calling webhook, failing open", "webhook", h.name, "err", err)
		m.metrics.failOpen.WithLabelValues(h.name, "admit").Inc()
		audit.AddAnnotation(ctx, fmt.Sprintf("failed-open.mutation.webhook.admission.k8s.io/round_%d_index_%d", round, index), h.name)
		return true, false, nil
	}
	return true, false, apierrors.NewInternalError(err)
}

// mutate evaluates the match conditions, calls the webhook and applies
// its answer; invoked says whether it was called.
func (m *Mutating) mutate(ctx context.Context, round int, inv *invocation, a *admission.Attributes) (invoked, changed bool, err error) {
	h := inv.hook
	obj, req, err := prepare(ctx, inv, a)
	if err != nil || req == nil {
		return false, false, err
	}
	resp, err := m.call(ctx, h, req)
	if err != nil {
		return true, false, err
	}
	for k, v := range resp.AuditAnnotations {
		audit.AddAnnotation(ctx, h.name+"/"+k, v)
	}
	for _, w := range resp.Warnings {
		warning.Add(ctx, w)
	}
	if !resp.Allowed {
		return true, false, rejected(h.name, resp.Result)
	}
	key := fmt.Sprintf("round_%d_index_%d", round, inv.index)
	if len(resp.Patch) == 0 {
		annotate(ctx, "mutation.webhook.admission.k8s.io/"+key, mutationAnnotation{Configuration: h.configuration, Webhook: h.name, Mutated: new(bool)})
		return true, false, nil
	}
	if a.Object == nil {
		return true, false, apierrors.NewInternalError(fmt.Errorf("admission webhook %q attempted to modify the object, which is not supported for this operation", h.name))
	}
	patched, err := applyPatch(resp.Patch, req.Object.Raw, obj)
	if err != nil {
		return true, false, apierrors.NewInternalError(err)
	}
	if e := inv.equivalent; e != nil {
		if patched, err = e.From(patched); err != nil {
			return true, false, apierrors.NewInternalError(err)
		}
	}
	m.Resources.Default(a.Resource, patched)
	patched.GetObjectKind().SetGroupVersionKind(a.Object.GetObjectKind().GroupVersionKind())
	changed = !equality.Semantic.DeepEqual(a.Object, patched)
	reflect.ValueOf(a.Object).Elem().Set(reflect.ValueOf(patched).Elem())
	annotate(ctx, "mutation.webhook.admission.k8s.io/"+key, mutationAnnotation{Configuration: h.configuration, Webhook: h.name, Mutated: &changed})
	annotate(ctx, "patch.webhook.admission.k8s.io/"+key, mutationAnnotation{Configuration: h.configuration, Webhook: h.name, Patch: resp.Patch, PatchType: "JSONPatch"})
	return true, changed, nil
}

// applyPatch applies a JSON patch to raw, the JSON of like, and decodes
// the result into a new object of like's type.
func applyPatch(patch, raw []byte, like runtime.Object) (runtime.Object, error) {
	p, err := jsonpatch.DecodePatch(patch)
	if err != nil {
		return nil, err
	}
	out, err := p.Apply(raw)
	if err != nil {
		return nil, err
	}
	obj := reflect.New(reflect.TypeOf(like).Elem()).Interface().(runtime.Object)
	if err := sigsjson.UnmarshalCaseSensitivePreserveInts(out, obj); err != nil {
		return nil, err
	}
	return obj, nil
}

func convert(f func(runtime.Object) (runtime.Object, error), obj runtime.Object) (runtime.Object, error) {
	if obj == nil {
		return nil, nil
	}
	return f(obj)
}

// requestMap is the request as CEL's request variable sees it.
func requestMap(r interface{}) map[string]interface{} {
	b, err := json.Marshal(r)
	if err != nil {
		return nil
	}
	var m map[string]interface{}
	if json.Unmarshal(b, &m) != nil {
		return nil
	}
	return m
}
