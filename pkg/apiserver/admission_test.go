package apiserver_test

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/cronplane/cronplane/pkg/admission"
	"github.com/cronplane/cronplane/pkg/apiserver"
	"github.com/cronplane/cronplane/pkg/apiserver/apiservertest"
)

// labeller is a mutating plugin: every CronJob it admits gets the label
// admitted=yes; one labelled break=yes gets a schedule the strategy
// refuses.
type labeller struct{}

func (labeller) Handles(op admission.Operation) bool {
	return op == admission.Create || op == admission.Update
}

func (labeller) Admit(_ context.Context, a *admission.Attributes) error {
	cj, ok := a.Object.(*batchv1.CronJob)
	if !ok || a.Subresource != "" {
		return nil
	}
	if cj.Labels == nil {
		cj.Labels = map[string]string{}
	}
	cj.Labels["admitted"] = "yes"
	if cj.Labels["break"] == "yes" {
		cj.Spec.Schedule = "not a schedule"
	}
	return nil
}

// observer is a validating plugin that keeps the attributes it saw.
type observer struct {
	mu   sync.Mutex
	seen []admission.Attributes
}

func (*observer) Handles(admission.Operation) bool { return true }

func (o *observer) Validate(_ context.Context, a *admission.Attributes) error {
	if a.Resource.Resource != "cronjobs" {
		return nil
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	o.seen = append(o.seen, *a)
	return nil
}

func (o *observer) last(t *testing.T) admission.Attributes {
	t.Helper()
	o.mu.Lock()
	defer o.mu.Unlock()
	if len(o.seen) == 0 {
		t.Fatal("the validating plugin saw nothing")
	}
	return o.seen[len(o.seen)-1]
}

// Mutating admission runs before the strategy validates, and its changes
// are recorded under the writer's manager; validating admission sees the
// final object with the user, the operation, the old object, the
// subresource, dryRun and the options.
func TestAdmission_MutationsAreValidatedAndOwnedValidationSeesTheFinalObject(t *testing.T) {
	obs := &observer{}
	s := apiservertest.Start(t, func(o *apiserver.Options) { o.Admission.Plugins = []admission.Interface{labeller{}, obs} })
	ctx := context.Background()
	cjs := s.Client.BatchV1().CronJobs("default")

	created, err := cjs.Create(ctx, cronJob("admitted"), metav1.CreateOptions{FieldManager: "writer"})
	if err != nil {
		t.Fatal(err)
	}
	if created.Labels["admitted"] != "yes" {
		t.Fatalf("labels %v: the mutation was not stored", created.Labels)
	}
	if mf := created.ManagedFields; len(mf) != 1 || mf[0].Manager != "writer" || !strings.Contains(string(mf[0].FieldsV1.Raw), `"f:admitted":{}`) {
		t.Fatalf("managedFields %+v: the mutation is not the writer's", mf)
	}
	a := obs.last(t)
	final, ok := a.Object.(*batchv1.CronJob)
	if a.Operation != admission.Create || !ok || final.UID == "" || final.Labels["admitted"] != "yes" || final.Spec.ConcurrencyPolicy != batchv1.AllowConcurrent {
		t.Fatalf("validating phase saw %s %+v, want the prepared, defaulted object", a.Operation, a.Object)
	}
	if a.User == nil || !slices.Contains(a.User.Groups, "system:masters") || a.DryRun || a.OldObject != nil {
		t.Fatalf("attributes: user %+v dryRun %v old %v", a.User, a.DryRun, a.OldObject)
	}
	if opts, ok := a.Options.(*metav1.CreateOptions); !ok || opts.FieldManager != "writer" {
		t.Fatalf("options %#v", a.Options)
	}

	created.Spec.Schedule = "*/7 * * * *"
	if _, err := cjs.Update(ctx, created, metav1.UpdateOptions{FieldManager: "writer", DryRun: []string{metav1.DryRunAll}}); err != nil {
		t.Fatal(err)
	}
	a = obs.last(t)
	old, ok := a.OldObject.(*batchv1.CronJob)
	if obj, _ := a.Object.(*batchv1.CronJob); a.Operation != admission.Update || !a.DryRun || !ok || old.Spec.Schedule != "*/5 * * * *" || obj == nil || obj.Spec.Schedule != "*/7 * * * *" {
		t.Fatalf("dry-run update: %s dryRun %v old %+v", a.Operation, a.DryRun, a.OldObject)
	}
	if _, err := cjs.Patch(ctx, "admitted", types.MergePatchType, []byte(`{"status":{"lastScheduleTime":"2026-01-01T00:00:00Z"}}`), metav1.PatchOptions{}, "status"); err != nil {
		t.Fatal(err)
	}
	if a = obs.last(t); a.Subresource != "status" || a.Operation != admission.Update {
		t.Fatalf("status patch: subresource %q operation %s", a.Subresource, a.Operation)
	}

	broken := cronJob("broken")
	broken.Labels = map[string]string{"break": "yes"}
	_, err = cjs.Create(ctx, broken, metav1.CreateOptions{})
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "spec.schedule") {
		t.Fatalf("a mutation the strategy refuses: %v, want 422 on spec.schedule", err)
	}
}
