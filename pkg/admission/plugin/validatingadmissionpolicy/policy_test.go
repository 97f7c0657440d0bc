package validatingadmissionpolicy

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"k8s.io/api/admissionregistration/v1beta1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/cronplane/cronplane/pkg/admission"
	"github.com/cronplane/cronplane/pkg/auth/authorizer"
	"github.com/cronplane/cronplane/pkg/auth/user"
	"github.com/cronplane/cronplane/pkg/warning"
)

// source is a Source over fixed objects; params are ConfigMaps.
type source struct {
	policies   []*v1beta1.ValidatingAdmissionPolicy
	bindings   []*v1beta1.ValidatingAdmissionPolicyBinding
	namespaces map[string]map[string]string
	params     []*corev1.ConfigMap
}

func (s *source) Policies(context.Context) ([]*v1beta1.ValidatingAdmissionPolicy, error) {
	return s.policies, nil
}

func (s *source) Bindings(context.Context) ([]*v1beta1.ValidatingAdmissionPolicyBinding, error) {
	return s.bindings, nil
}

func (s *source) GetNamespace(_ context.Context, name string) (*corev1.Namespace, error) {
	return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: s.namespaces[name]}}, nil
}

func (s *source) ParamNamespaced(apiVersion, kind string) (bool, error) {
	if apiVersion != "v1" || kind != "ConfigMap" {
		return false, fmt.Errorf("unknown")
	}
	return true, nil
}

func paramOf(cm *corev1.ConfigMap) map[string]interface{} {
	data := map[string]interface{}{}
	for k, v := range cm.Data {
		data[k] = v
	}
	return map[string]interface{}{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]interface{}{"name": cm.Name}, "data": data}
}

func (s *source) GetParam(_ context.Context, _, _, namespace, name string) (map[string]interface{}, error) {
	for _, cm := range s.params {
		if cm.Namespace == namespace && cm.Name == name {
			return paramOf(cm), nil
		}
	}
	return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "configmaps"}, name)
}

func (s *source) ListParams(_ context.Context, _, _, namespace string, sel labels.Selector) ([]map[string]interface{}, error) {
	var out []map[string]interface{}
	for _, cm := range s.params {
		if cm.Namespace == namespace && sel.Matches(labels.Set(cm.Labels)) {
			out = append(out, paramOf(cm))
		}
	}
	return out, nil
}

// allowPods lets its user create pods and nothing else.
type allowPods struct{}

func (allowPods) Authorize(_ context.Context, a authorizer.Attributes) (authorizer.Decision, string, error) {
	if a.Resource == "pods" && a.Verb == "create" {
		return authorizer.Allow, "", nil
	}
	return authorizer.NoOpinion, "no", nil
}

var cronJobRule = v1beta1.NamedRuleWithOperations{RuleWithOperations: v1beta1.RuleWithOperations{
	Operations: []v1beta1.OperationType{"CREATE", "UPDATE"},
	Rule:       v1beta1.Rule{APIGroups: []string{"batch"}, APIVersions: []string{"v1"}, Resources: []string{"cronjobs"}},
}}

func policy(mutate func(*v1beta1.ValidatingAdmissionPolicySpec)) *v1beta1.ValidatingAdmissionPolicy {
	fail := v1beta1.Fail
	p := &v1beta1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "p", UID: "p-uid", ResourceVersion: "1"},
		Spec: v1beta1.ValidatingAdmissionPolicySpec{
			FailurePolicy:    &fail,
			MatchConstraints: &v1beta1.MatchResources{ResourceRules: []v1beta1.NamedRuleWithOperations{cronJobRule}},
		},
	}
	mutate(&p.Spec)
	return p
}

func binding(mutate func(*v1beta1.ValidatingAdmissionPolicyBindingSpec)) *v1beta1.ValidatingAdmissionPolicyBinding {
	b := &v1beta1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "b"},
		Spec:       v1beta1.ValidatingAdmissionPolicyBindingSpec{PolicyName: "p", ValidationActions: []v1beta1.ValidationAction{v1beta1.Deny}},
	}
	if mutate != nil {
		mutate(&b.Spec)
	}
	return b
}

func validations(exprs ...string) func(*v1beta1.ValidatingAdmissionPolicySpec) {
	return func(s *v1beta1.ValidatingAdmissionPolicySpec) {
		for _, e := range exprs {
			s.Validations = append(s.Validations, v1beta1.Validation{Expression: e})
		}
	}
}

func cronJobWrite(name, schedule string, lbls map[string]string) *admission.Attributes {
	cj := &batchv1.CronJob{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", Labels: lbls}, Spec: batchv1.CronJobSpec{Schedule: schedule}}
	return &admission.Attributes{
		Operation: admission.Create,
		Resource:  batchv1.SchemeGroupVersion.WithResource("cronjobs"),
		Kind:      batchv1.SchemeGroupVersion.WithKind("CronJob"),
		Namespace: "default", Name: name, Object: cj,
		Options: &metav1.CreateOptions{},
		User:    &user.Info{Name: "alice", Groups: []string{"dev"}},
	}
}

func ptr[T any](v T) *T { return &v }

func TestValidate_EvaluatesBindingsAsKube(t *testing.T) {
	cm := func(name string, lbls map[string]string, max string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", Labels: lbls}, Data: map[string]string{"max": max}}
	}
	withParams := func(s *v1beta1.ValidatingAdmissionPolicySpec) {
		s.ParamKind = &v1beta1.ParamKind{APIVersion: "v1", Kind: "ConfigMap"}
		s.Validations = []v1beta1.Validation{{Expression: "size(object.metadata.name) <= int(params.data.max)", MessageExpression: "'too long for ' + params.metadata.name"}}
	}
	for _, tc := range []struct {
		name     string
		policy   *v1beta1.ValidatingAdmissionPolicy
		binding  *v1beta1.ValidatingAdmissionPolicyBinding
		params   []*corev1.ConfigMap
		nsLabels map[string]string
		write    *admission.Attributes
		// wantErr is the denial's message after "denied request: ", and
		// wantCode its code; "" admits.
		wantErr  string
		wantCode int32
		warnings []string
	}{{
		name:   "a passing validation admits",
		policy: policy(validations("object.spec.schedule != '* * * * *'")),
		write:  cronJobWrite("a", "*/5 * * * *", nil),
	}, {
		name:    "a failed validation without a message names its expression",
		policy:  policy(validations("true", "object.spec.schedule != '* * * * *'")),
		write:   cronJobWrite("a", "* * * * *", nil),
		wantErr: "failed expression: object.spec.schedule != '* * * * *'", wantCode: 422,
	}, {
		name: "the message, reason and code of the first failed validation",
		policy: policy(func(s *v1beta1.ValidatingAdmissionPolicySpec) {
			s.Validations = []v1beta1.Validation{
				{Expression: "object.metadata.name != 'a'", Message: "not a", Reason: ptr(metav1.StatusReasonForbidden)},
				{Expression: "false", Message: "second"},
			}
		}),
		write:   cronJobWrite("a", "* * * * *", nil),
		wantErr: "not a", wantCode: 403,
	}, {
		name: "messageExpression, and the message when it fails",
		policy: policy(func(s *v1beta1.ValidatingAdmissionPolicySpec) {
			s.Validations = []v1beta1.Validation{
				{Expression: "false", MessageExpression: "'name ' + object.metadata.name"},
				{Expression: "false", MessageExpression: "object.nope + ''", Message: "fallback"},
			}
		}),
		binding: binding(func(s *v1beta1.ValidatingAdmissionPolicyBindingSpec) {
			s.ValidationActions = []v1beta1.ValidationAction{v1beta1.Warn}
		}),
		write:    cronJobWrite("a", "* * * * *", nil),
		warnings: []string{"Validation failed for ValidatingAdmissionPolicy 'p' with binding 'b': name a", "Validation failed for ValidatingAdmissionPolicy 'p' with binding 'b': fallback"},
	}, {
		name: "variables are evaluated when read",
		policy: policy(func(s *v1beta1.ValidatingAdmissionPolicySpec) {
			s.Variables = []v1beta1.Variable{{Name: "sched", Expression: "object.spec.schedule"}, {Name: "broken", Expression: "object.nope"}}
			s.Validations = []v1beta1.Validation{{Expression: "variables.sched != '* * * * *'"}}
		}),
		write:   cronJobWrite("a", "* * * * *", nil),
		wantErr: "failed expression: variables.sched != '* * * * *'", wantCode: 422,
	}, {
		name: "a variable has its expression's type, so a bool variable is a validation",
		policy: policy(func(s *v1beta1.ValidatingAdmissionPolicySpec) {
			s.Variables = []v1beta1.Variable{{Name: "sched", Expression: "object.spec.schedule"}, {Name: "notEveryMinute", Expression: "variables.sched != '* * * * *'"}}
			s.Validations = []v1beta1.Validation{{Expression: "variables.notEveryMinute"}}
		}),
		write:   cronJobWrite("a", "* * * * *", nil),
		wantErr: "failed expression: variables.notEveryMinute", wantCode: 422,
	}, {
		name: "a false matchCondition skips the policy, even beside an error",
		policy: policy(func(s *v1beta1.ValidatingAdmissionPolicySpec) {
			s.MatchConditions = []v1beta1.MatchCondition{{Name: "e", Expression: "object.nope == 1"}, {Name: "f", Expression: "object.metadata.name == 'other'"}}
			s.Validations = []v1beta1.Validation{{Expression: "false"}}
		}),
		write: cronJobWrite("a", "* * * * *", nil),
	}, {
		name: "matchCondition errors fail the policy",
		policy: policy(func(s *v1beta1.ValidatingAdmissionPolicySpec) {
			s.MatchConditions = []v1beta1.MatchCondition{{Name: "e", Expression: "object.nope == 1"}, {Name: "e2", Expression: "object.nope2 == 1"}}
			s.Validations = []v1beta1.Validation{{Expression: "true"}}
		}),
		write:   cronJobWrite("a", "* * * * *", nil),
		wantErr: "[expression 'object.nope == 1' resulted in error: no such key: nope, expression 'object.nope2 == 1' resulted in error: no such key: nope2]", wantCode: 422,
	}, {
		name:    "an evaluation error under failurePolicy Fail denies",
		policy:  policy(validations("object.spec.nope == 1")),
		write:   cronJobWrite("a", "* * * * *", nil),
		wantErr: "expression 'object.spec.nope == 1' resulted in error: no such key: nope", wantCode: 422,
	}, {
		name: "an evaluation error under failurePolicy Ignore admits",
		policy: policy(func(s *v1beta1.ValidatingAdmissionPolicySpec) {
			s.FailurePolicy = ptr(v1beta1.Ignore)
			s.Validations = []v1beta1.Validation{{Expression: "object.spec.nope == 1"}}
		}),
		write: cronJobWrite("a", "* * * * *", nil),
	}, {
		name:   "params by name",
		policy: policy(withParams),
		binding: binding(func(s *v1beta1.ValidatingAdmissionPolicyBindingSpec) {
			s.ParamRef = &v1beta1.ParamRef{Name: "limits", ParameterNotFoundAction: ptr(v1beta1.DenyAction)}
		}),
		params:  []*corev1.ConfigMap{cm("limits", nil, "3")},
		write:   cronJobWrite("longname", "* * * * *", nil),
		wantErr: "too long for limits", wantCode: 422,
	}, {
		name:   "params by selector: each is evaluated",
		policy: policy(withParams),
		binding: binding(func(s *v1beta1.ValidatingAdmissionPolicyBindingSpec) {
			s.ParamRef = &v1beta1.ParamRef{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"limit": "yes"}}, ParameterNotFoundAction: ptr(v1beta1.DenyAction)}
		}),
		params:  []*corev1.ConfigMap{cm("big", map[string]string{"limit": "yes"}, "30"), cm("small", map[string]string{"limit": "yes"}, "2"), cm("other", nil, "1")},
		write:   cronJobWrite("abc", "* * * * *", nil),
		wantErr: "too long for small", wantCode: 422,
	}, {
		name:   "missing params with Deny fail the binding",
		policy: policy(withParams),
		binding: binding(func(s *v1beta1.ValidatingAdmissionPolicyBindingSpec) {
			s.ParamRef = &v1beta1.ParamRef{Name: "nosuch", ParameterNotFoundAction: ptr(v1beta1.DenyAction)}
		}),
		write:   cronJobWrite("abc", "* * * * *", nil),
		wantErr: "failed to configure binding: no params found for policy binding with `Deny` parameterNotFoundAction", wantCode: 422,
	}, {
		name:   "missing params with Allow admit",
		policy: policy(withParams),
		binding: binding(func(s *v1beta1.ValidatingAdmissionPolicyBindingSpec) {
			s.ParamRef = &v1beta1.ParamRef{Name: "nosuch", ParameterNotFoundAction: ptr(v1beta1.AllowAction)}
		}),
		write: cronJobWrite("abc", "* * * * *", nil),
	}, {
		name: "a binding that names no params gives null params",
		policy: policy(func(s *v1beta1.ValidatingAdmissionPolicySpec) {
			withParams(s)
			s.Validations[0].Expression = "params == null"
		}),
		write: cronJobWrite("abc", "* * * * *", nil),
	}, {
		name:   "Deny and Warn together",
		policy: policy(validations("false")),
		binding: binding(func(s *v1beta1.ValidatingAdmissionPolicyBindingSpec) {
			s.ValidationActions = []v1beta1.ValidationAction{v1beta1.Audit, v1beta1.Warn}
		}),
		write:    cronJobWrite("a", "* * * * *", nil),
		warnings: []string{"Validation failed for ValidatingAdmissionPolicy 'p' with binding 'b': failed expression: false"},
	}, {
		name:     "the request, the namespace and the authorizer",
		policy:   policy(validations("request.userInfo.username == 'alice' && request.operation == 'CREATE' && request.options.kind == 'CreateOptions' && !has(request.subResource)", "namespaceObject.metadata.labels.team == 'x'", "authorizer.group('').resource('pods').check('create').allowed()", "!authorizer.requestResource.check('create').allowed()", "authorizer.serviceAccount('ns', 'sa').group('').resource('pods').check('create').allowed()")),
		nsLabels: map[string]string{"team": "x"},
		write:    cronJobWrite("a", "* * * * *", nil),
	}, {
		name:     "the per-call cost limit",
		policy:   policy(validations("[1,2,3,4,5,6,7,8,9,10].all(a, [1,2,3,4,5,6,7,8,9,10].all(b, [1,2,3,4,5,6,7,8,9,10].all(c, [1,2,3,4,5,6,7,8,9,10].all(d, [1,2,3,4,5,6,7,8,9,10].all(e, [1,2,3,4,5,6,7,8,9,10].all(f, true))))))")),
		write:    cronJobWrite("a", "* * * * *", nil),
		wantErr:  "expression '[1,2,3,4,5,6,7,8,9,10].all(a, [1,2,3,4,5,6,7,8,9,10].all(b, [1,2,3,4,5,6,7,8,9,10].all(c, [1,2,3,4,5,6,7,8,9,10].all(d, [1,2,3,4,5,6,7,8,9,10].all(e, [1,2,3,4,5,6,7,8,9,10].all(f, true))))))' resulted in error: operation cancelled: actual cost limit exceeded",
		wantCode: 422,
	}, {
		name:   "other operations are not matched",
		policy: policy(validations("false")),
		write: func() *admission.Attributes {
			a := cronJobWrite("a", "", nil)
			a.Operation = admission.Delete
			a.OldObject, a.Object = a.Object, nil
			return a
		}(),
	}, {
		name: "excluded resources are not matched",
		policy: policy(func(s *v1beta1.ValidatingAdmissionPolicySpec) {
			s.MatchConstraints.ExcludeResourceRules = []v1beta1.NamedRuleWithOperations{cronJobRule}
			s.Validations = []v1beta1.Validation{{Expression: "false"}}
		}),
		write: cronJobWrite("a", "", nil),
	}, {
		name: "the policy's namespace selector",
		policy: policy(func(s *v1beta1.ValidatingAdmissionPolicySpec) {
			s.MatchConstraints.NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"team": "y"}}
			s.Validations = []v1beta1.Validation{{Expression: "false"}}
		}),
		nsLabels: map[string]string{"team": "x"},
		write:    cronJobWrite("a", "", nil),
	}, {
		name:   "the binding's object selector",
		policy: policy(validations("false")),
		binding: binding(func(s *v1beta1.ValidatingAdmissionPolicyBindingSpec) {
			s.MatchResources = &v1beta1.MatchResources{ObjectSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"checked": "yes"}}}
		}),
		write: cronJobWrite("a", "", map[string]string{"checked": "no"}),
	}, {
		name:   "the binding's resource rules narrow the policy's",
		policy: policy(validations("false")),
		binding: binding(func(s *v1beta1.ValidatingAdmissionPolicyBindingSpec) {
			s.MatchResources = &v1beta1.MatchResources{ResourceRules: []v1beta1.NamedRuleWithOperations{{ResourceNames: []string{"b"}, RuleWithOperations: cronJobRule.RuleWithOperations}}}
		}),
		write: cronJobWrite("a", "", nil),
	}} {
		t.Run(tc.name, func(t *testing.T) {
			b := tc.binding
			if b == nil {
				b = binding(nil)
			}
			src := &source{policies: []*v1beta1.ValidatingAdmissionPolicy{tc.policy}, bindings: []*v1beta1.ValidatingAdmissionPolicyBinding{b},
				namespaces: map[string]map[string]string{"default": tc.nsLabels}, params: tc.params}
			rec := &warning.Recorder{}
			ctx := warning.WithRecorder(context.Background(), rec)
			err := New(src, allowPods{}).Validate(ctx, tc.write)
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("denied: %v", err)
				}
			} else {
				status, ok := err.(*apierrors.StatusError)
				if !ok {
					t.Fatalf("got %v, want a denial", err)
				}
				want := fmt.Sprintf("cronjobs.batch %q is forbidden: ValidatingAdmissionPolicy 'p' with binding 'b' denied request: %s", tc.write.Name, tc.wantErr)
				if status.ErrStatus.Message != want || status.ErrStatus.Code != tc.wantCode {
					t.Fatalf("got %d %q\nwant %d %q", status.ErrStatus.Code, status.ErrStatus.Message, tc.wantCode, want)
				}
			}
			if got := strings.Join(rec.Texts(), "\n"); got != strings.Join(tc.warnings, "\n") {
				t.Errorf("warnings:\n%s\nwant\n%s", got, strings.Join(tc.warnings, "\n"))
			}
		})
	}
}
