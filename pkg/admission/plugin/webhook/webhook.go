// Package webhook owns the admission webhooks users register with
// admissionregistration.k8s.io/v1: which webhooks a write matches (rules,
// matchPolicy, namespace and object selectors, matchConditions), the
// AdmissionReview v1 or v1beta1 sent to each over TLS, and what their
// answers do: the mutating webhooks patch the object in order (calling
// those with reinvocationPolicy IfNeeded once more when a later one
// changed it), the validating webhooks run in parallel and the first
// refusal wins. Answers go to the warnings, the audit log and the
// apiserver_admission_webhook_* metrics, with kube's names.
package webhook

import (
	"context"
	"slices"
	"sort"
	"sync/atomic"

	"github.com/google/cel-go/cel"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/cronplane/cronplane/pkg/admission"
	"github.com/cronplane/cronplane/pkg/metrics"
	"github.com/cronplane/cronplane/pkg/registry/admissionregistration"
)

// Source lists the stored webhook configurations; the apiserver reads
// them from its watch cache.
type Source interface {
	MutatingWebhookConfigurations(ctx context.Context) ([]*admissionregistrationv1.MutatingWebhookConfiguration, error)
	ValidatingWebhookConfigurations(ctx context.Context) ([]*admissionregistrationv1.ValidatingWebhookConfiguration, error)
}

// NamespaceGetter reads a namespace, for namespaceSelector; a missing one
// is an API NotFound error.
type NamespaceGetter interface {
	GetNamespace(ctx context.Context, name string, live bool) (*corev1.Namespace, error)
}

// ServiceResolver turns a clientConfig.service into the host:port to dial.
type ServiceResolver interface {
	ResolveService(ctx context.Context, namespace, name string, port int32) (string, error)
}

// Equivalent is another group version through which the same objects
// are served (events.k8s.io/v1 events for core/v1 ones), for
// matchPolicy Equivalent.
type Equivalent struct {
	Resource schema.GroupVersionResource
	Kind     schema.GroupVersionKind
	// To converts an object of the request's version to this one; From
	// converts back.
	To, From func(runtime.Object) (runtime.Object, error)
}

// Resources describes the served resources to the webhooks.
type Resources interface {
	// Equivalents lists the other versions of gvr's objects.
	Equivalents(gvr schema.GroupVersionResource) []Equivalent
	// Default applies the defaults of gvr's type to obj, as the decoder
	// does to an object a webhook patched.
	Default(gvr schema.GroupVersionResource, obj runtime.Object)
}

// Config is what both plugins need.
type Config struct {
	Source     Source
	Namespaces NamespaceGetter
	Services   ServiceResolver
	Resources  Resources
	Metrics    *metrics.Registry
}

// New returns the mutating and the validating plugin, sharing their
// HTTP clients and metrics.
func New(c Config) (*Mutating, *Validating) {
	d := &dispatcher{Config: c, clients: newClients(), metrics: newMetrics(c.Metrics)}
	return &Mutating{d}, &Validating{d}
}

// dispatcher holds what the plugins share.
type dispatcher struct {
	Config
	clients *clients
	metrics *webhookMetrics
	// The hooks last built, with the configurations they were built
	// from: rebuilt only when those change.
	mutating   atomic.Pointer[hookSet[admissionregistrationv1.MutatingWebhookConfiguration]]
	validating atomic.Pointer[hookSet[admissionregistrationv1.ValidatingWebhookConfiguration]]
}

// hookSet is the hooks of a list of configurations.
type hookSet[C any] struct {
	configs []*C
	hooks   []hook
}

// cachedHooks returns the hooks of configs, building them unless they
// were built from the same configurations last time. Stored objects are
// replaced, never changed, when updated: the same pointers are the same
// configurations.
func cachedHooks[C any](last *atomic.Pointer[hookSet[C]], configs []*C, build func([]*C) []hook) []hook {
	if set := last.Load(); set != nil && slices.Equal(set.configs, configs) {
		return set.hooks
	}
	set := &hookSet[C]{configs: configs, hooks: build(configs)}
	last.Store(set)
	return set.hooks
}

// Handles: webhooks may register for every operation.
func (d *dispatcher) Handles(admission.Operation) bool { return true }

// hook is one webhook of a configuration, mutating or validating.
type hook struct {
	configuration string
	name          string
	rules         []admissionregistrationv1.RuleWithOperations
	failurePolicy admissionregistrationv1.FailurePolicyType
	matchPolicy   admissionregistrationv1.MatchPolicyType
	nsSelector    labels.Selector
	objSelector   labels.Selector
	// selectorErr is why a selector does not parse.
	selectorErr error
	sideEffects admissionregistrationv1.SideEffectClass
	timeout     int32
	endpoint    endpoint
	versions    []string
	conditions  []condition
	reinvoke    bool
}

// condition is a matchCondition compiled, or why it does not compile.
type condition struct {
	name    string
	program cel.Program
	err     error
}

func compileConditions(conds []admissionregistrationv1.MatchCondition) []condition {
	out := make([]condition, len(conds))
	for i, c := range conds {
		out[i].name = c.Name
		out[i].program, out[i].err = admissionregistration.CompileMatchCondition(c.Expression)
	}
	return out
}

// exempt are the resources no webhook sees, so that a broken webhook
// cannot stop its own repair.
func exempt(gvr schema.GroupVersionResource) bool {
	if gvr.Group != admissionregistrationv1.GroupName {
		return false
	}
	switch gvr.Resource {
	case "validatingwebhookconfigurations", "mutatingwebhookconfigurations", "validatingadmissionpolicies", "validatingadmissionpolicybindings":
		return true
	}
	return false
}

func (d *dispatcher) mutatingHooks(ctx context.Context) ([]hook, error) {
	configs, err := d.Source.MutatingWebhookConfigurations(ctx)
	if err != nil {
		return nil, err
	}
	return cachedHooks(&d.mutating, configs, buildMutating), nil
}

func buildMutating(configs []*admissionregistrationv1.MutatingWebhookConfiguration) []hook {
	configs = slices.Clone(configs)
	sort.Slice(configs, func(i, j int) bool { return configs[i].Name < configs[j].Name })
	var hooks []hook
	for _, c := range configs {
		for _, w := range c.Webhooks {
			h := hook{
				configuration: c.Name, name: w.Name, rules: w.Rules,
				versions: w.AdmissionReviewVersions, conditions: compileConditions(w.MatchConditions),
				reinvoke: w.ReinvocationPolicy != nil && *w.ReinvocationPolicy == admissionregistrationv1.IfNeededReinvocationPolicy,
			}
			h.setCommon(w.FailurePolicy, w.MatchPolicy, w.SideEffects, w.TimeoutSeconds)
			h.setSelectors(w.NamespaceSelector, w.ObjectSelector)
			h.endpoint = newEndpoint(w.ClientConfig, h.timeout)
			hooks = append(hooks, h)
		}
	}
	return hooks
}

func (d *dispatcher) validatingHooks(ctx context.Context) ([]hook, error) {
	configs, err := d.Source.ValidatingWebhookConfigurations(ctx)
	if err != nil {
		return nil, err
	}
	return cachedHooks(&d.validating, configs, buildValidating), nil
}

func buildValidating(configs []*admissionregistrationv1.ValidatingWebhookConfiguration) []hook {
	configs = slices.Clone(configs)
	sort.Slice(configs, func(i, j int) bool { return configs[i].Name < configs[j].Name })
	var hooks []hook
	for _, c := range configs {
		for _, w := range c.Webhooks {
			h := hook{
				configuration: c.Name, name: w.Name, rules: w.Rules,
				versions: w.AdmissionReviewVersions, conditions: compileConditions(w.MatchConditions),
			}
			h.setCommon(w.FailurePolicy, w.MatchPolicy, w.SideEffects, w.TimeoutSeconds)
			h.setSelectors(w.NamespaceSelector, w.ObjectSelector)
			h.endpoint = newEndpoint(w.ClientConfig, h.timeout)
			hooks = append(hooks, h)
		}
	}
	return hooks
}

// setCommon fills the fields stored objects always have (they are
// defaulted), with kube's defaults should one be missing.
func (h *hook) setCommon(fp *admissionregistrationv1.FailurePolicyType, mp *admissionregistrationv1.MatchPolicyType, se *admissionregistrationv1.SideEffectClass, timeout *int32) {
	h.failurePolicy, h.matchPolicy, h.sideEffects, h.timeout = admissionregistrationv1.Fail, admissionregistrationv1.Equivalent, admissionregistrationv1.SideEffectClassUnknown, 10
	if fp != nil {
		h.failurePolicy = *fp
	}
	if mp != nil {
		h.matchPolicy = *mp
	}
	if se != nil {
		h.sideEffects = *se
	}
	if timeout != nil {
		h.timeout = *timeout
	}
}

// setSelectors parses the selectors; nil ones select everything.
func (h *hook) setSelectors(ns, obj *metav1.LabelSelector) {
	h.nsSelector, h.objSelector = labels.Everything(), labels.Everything()
	var err error
	if ns != nil {
		if h.nsSelector, err = metav1.LabelSelectorAsSelector(ns); err != nil {
			h.selectorErr = err
		}
	}
	if obj != nil {
		if h.objSelector, err = metav1.LabelSelectorAsSelector(obj); err != nil {
			h.selectorErr = err
		}
	}
}
