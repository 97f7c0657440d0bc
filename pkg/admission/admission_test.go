package admission_test

import (
	"context"
	"errors"
	"reflect"
	"testing"

	"github.com/cronplane/cronplane/pkg/admission"
)

// plugin records its calls into a shared log and fails when told to.
type plugin struct {
	name    string
	handles []admission.Operation
	fail    bool
	log     *[]string
}

func (p plugin) Handles(op admission.Operation) bool {
	for _, h := range p.handles {
		if h == op {
			return true
		}
	}
	return false
}

func (p plugin) call(phase string) error {
	*p.log = append(*p.log, phase+":"+p.name)
	if p.fail {
		return errors.New(p.name + " refused")
	}
	return nil
}

type mutating struct{ plugin }

func (m mutating) Admit(context.Context, *admission.Attributes) error { return m.call("admit") }

type validating struct{ plugin }

func (v validating) Validate(context.Context, *admission.Attributes) error { return v.call("validate") }

type both struct{ plugin }

func (b both) Admit(context.Context, *admission.Attributes) error    { return b.call("admit") }
func (b both) Validate(context.Context, *admission.Attributes) error { return b.call("validate") }

func TestChain_EachPhaseRunsItsPluginsInOrderUntilOneRefuses(t *testing.T) {
	all := []admission.Operation{admission.Create, admission.Update, admission.Delete}
	for _, tc := range []struct {
		name                    string
		op                      admission.Operation
		chain                   func(log *[]string) admission.Chain
		wantAdmit, wantValidate []string
		wantErr                 string
	}{
		{"phases apart, in order", admission.Create, func(log *[]string) admission.Chain {
			return admission.Chain{mutating{plugin{"m1", all, false, log}}, validating{plugin{"v1", all, false, log}}, both{plugin{"b", all, false, log}}, mutating{plugin{"m2", all, false, log}}}
		}, []string{"admit:m1", "admit:b", "admit:m2"}, []string{"validate:v1", "validate:b"}, ""},
		{"a plugin that does not handle the operation is skipped", admission.Delete, func(log *[]string) admission.Chain {
			return admission.Chain{mutating{plugin{"create-only", []admission.Operation{admission.Create}, false, log}}, both{plugin{"b", all, false, log}}}
		}, []string{"admit:b"}, []string{"validate:b"}, ""},
		{"the first refusal ends the phase", admission.Update, func(log *[]string) admission.Chain {
			return admission.Chain{mutating{plugin{"m1", all, true, log}}, mutating{plugin{"m2", all, false, log}}}
		}, []string{"admit:m1"}, nil, "m1 refused"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var log []string
			chain := tc.chain(&log)
			a := &admission.Attributes{Operation: tc.op}
			err := chain.Admit(context.Background(), a)
			if (err == nil) != (tc.wantErr == "") || (err != nil && err.Error() != tc.wantErr) {
				t.Fatalf("admit: %v, want %q", err, tc.wantErr)
			}
			if !reflect.DeepEqual(log, tc.wantAdmit) {
				t.Fatalf("admit ran %v, want %v", log, tc.wantAdmit)
			}
			if err != nil {
				return
			}
			log = nil
			if err := chain.Validate(context.Background(), a); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(log, tc.wantValidate) {
				t.Fatalf("validate ran %v, want %v", log, tc.wantValidate)
			}
		})
	}
}
