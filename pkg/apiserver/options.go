package apiserver

import (
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/klog/v2"

	"github.com/cronplane/cronplane/pkg/admission"
	"github.com/cronplane/cronplane/pkg/admission/plugin/defaulttolerations"
	"github.com/cronplane/cronplane/pkg/audit"
	"github.com/cronplane/cronplane/pkg/auth/serviceaccount"
	"github.com/cronplane/cronplane/pkg/featuregate"
	"github.com/cronplane/cronplane/pkg/kubernetesservice"
	"github.com/cronplane/cronplane/pkg/metrics"
	"github.com/cronplane/cronplane/pkg/registry/admissionregistration"
	"github.com/cronplane/cronplane/pkg/registry/core"
	rbacregistry "github.com/cronplane/cronplane/pkg/registry/rbac"
)

// Options are the apiserver's settings, one struct per concern as
// kube-apiserver splits them, each with its flags (AddFlags) and its
// checks (Validate). The concerns whose settings were flat are embedded,
// so that every setting keeps its short name (o.EtcdServers). Complete
// turns them into the CompletedConfig New builds a server from.
type Options struct {
	// DataDir holds what the server keeps: the embedded etcd, the
	// generated certificates and signing key, and the kubeconfigs it
	// writes.
	DataDir string
	EtcdOptions
	SecureServingOptions
	AuthenticationOptions
	AuthorizationOptions
	FeatureOptions
	MetricsOptions
	APIEnablementOptions
	// Audit configures the audit log (--audit-*).
	Audit audit.Options
	// Admission configures the built-in admission plugins and adds
	// plugins to them (embedders and tests).
	Admission AdmissionOptions
	// Serving sets the in-flight limits, the request timeouts, the health
	// checks and the graceful shutdown.
	Serving ServingOptions
	// Services are the Service ranges and the address this apiserver
	// advertises in the kubernetes Endpoints.
	Services kubernetesservice.Options
	// KubeletClient says how the nodes' agents are reached (pods/log).
	KubeletClient KubeletClientOptions
	// Logger receives the server's log; the zero Logger means klog's
	// global one (--v, --logging-format).
	Logger klog.Logger
}

// DefaultOptions are the flag defaults.
func DefaultOptions() Options {
	return Options{
		DataDir:               ".cronplane",
		EtcdOptions:           EtcdOptions{EtcdPrefix: "/registry", CompactionInterval: 5 * time.Minute},
		SecureServingOptions:  SecureServingOptions{BindAddress: "127.0.0.1", SecurePort: 6443},
		AuthenticationOptions: AuthenticationOptions{AnonymousAuth: true},
		AuthorizationOptions:  AuthorizationOptions{AuthorizationModes: []string{ModeNode, ModeRBAC}},
		FeatureOptions:        FeatureOptions{FeatureGates: featuregate.New(featuregate.Known), Profiling: true},
		MetricsOptions:        MetricsOptions{RequestMetrics: true},
		Serving:               DefaultServingOptions(),
		Services:              kubernetesservice.DefaultOptions(),
		KubeletClient:         DefaultKubeletClientOptions(),
		Admission:             DefaultAdmissionOptions(),
	}
}

// AddFlags binds every concern's flags.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.DataDir, "data-dir", o.DataDir, "directory for the embedded etcd, generated certificates and admin.kubeconfig")
	o.EtcdOptions.AddFlags(fs)
	o.SecureServingOptions.AddFlags(fs)
	o.AuthenticationOptions.AddFlags(fs)
	o.AuthorizationOptions.AddFlags(fs)
	o.FeatureOptions.AddFlags(fs)
	o.MetricsOptions.AddFlags(fs)
	o.APIEnablementOptions.AddFlags(fs)
	o.Audit.AddFlags(fs)
	o.Serving.AddFlags(fs)
	o.Services.AddFlags(fs)
	o.KubeletClient.AddFlags(fs)
	o.Admission.AddFlags(fs)
}

// Validate reports every setting kube-apiserver would refuse, all at once.
func (o *Options) Validate() error {
	return errors.Join(
		o.EtcdOptions.Validate(),
		o.SecureServingOptions.Validate(),
		o.AuthenticationOptions.Validate(),
		o.AuthorizationOptions.Validate(),
		o.MetricsOptions.Validate(),
		o.Audit.Validate(),
		o.Serving.Validate(),
		o.Services.Validate(),
		o.KubeletClient.Validate(),
	)
}

// CompletedConfig is Options checked, with every default filled in and
// --runtime-config resolved: what New builds a server from. Only Complete
// makes one.
type CompletedConfig struct{ *completedConfig }

type completedConfig struct {
	Options
	// served are the built-in resources --runtime-config leaves served.
	served map[schema.GroupVersionResource]bool
}

// Complete checks the options and fills in what they leave to defaults.
// It reads no file and touches nothing: a bad combination of flags is
// refused before anything starts.
func (o Options) Complete() (CompletedConfig, error) {
	if err := o.Validate(); err != nil {
		return CompletedConfig{}, err
	}
	if o.Logger.GetSink() == nil {
		o.Logger = klog.Background()
	}
	served, err := ResolveRuntimeConfig(o.RuntimeConfig, availableResources())
	if err != nil {
		return CompletedConfig{}, err
	}
	if o.CertDir == "" {
		o.CertDir = filepath.Join(o.DataDir, "certs")
	}
	o.ServiceAccounts = o.ServiceAccounts.completed()
	return CompletedConfig{&completedConfig{Options: o, served: served}}, nil
}

// availableResources are the built-in resources --runtime-config chooses
// from.
func availableResources() []schema.GroupVersionResource {
	resources := append(builtinResources(&rbacregistry.Escalation{}, false, nil), core.ServiceAccountResource(&core.TokenRequests{}),
		core.ServiceResource(&core.ServiceAllocators{}), core.EndpointsResource())
	resources = append(resources, admissionregistration.PolicyResources(nil)...)
	gvrs := make([]schema.GroupVersionResource, len(resources))
	for i, res := range resources {
		gvrs[i] = res.GroupVersionResource()
	}
	return gvrs
}

// EtcdOptions say where the resources are stored.
type EtcdOptions struct {
	// EtcdServers lists etcd client URLs; empty starts an embedded etcd in
	// DataDir/etcd.
	EtcdServers []string
	// EtcdServersOverrides store some built-in resources in other etcd
	// clusters: group/resource#servers, servers semicolon separated.
	EtcdServersOverrides []string
	// EtcdTLS authenticates the server to etcd and etcd to the server;
	// empty files mean plain connections.
	EtcdTLS    EtcdTLSOptions
	EtcdPrefix string
	// CompactionInterval is how often etcd's history is compacted; 0 never.
	CompactionInterval time.Duration
}

// AddFlags binds the options to kube-apiserver's flags.
func (o *EtcdOptions) AddFlags(fs *pflag.FlagSet) {
	fs.StringSliceVar(&o.EtcdServers, "etcd-servers", o.EtcdServers, "etcd client URLs, comma separated; empty starts an embedded etcd under --data-dir")
	fs.StringSliceVar(&o.EtcdServersOverrides, "etcd-servers-overrides", o.EtcdServersOverrides, "per-resource etcd servers overrides, comma separated; each group/resource#servers, servers being URLs, semicolon separated, the core group empty (e.g. /events#https://etcd-events:2379). Applies to built-in resources only; the --etcd-cafile/certfile/keyfile apply to these servers too")
	o.EtcdTLS.AddFlags(fs)
	fs.StringVar(&o.EtcdPrefix, "etcd-prefix", o.EtcdPrefix, "prefix of every key in etcd")
	fs.DurationVar(&o.CompactionInterval, "etcd-compaction-interval", o.CompactionInterval, "how often etcd's history is compacted (coordinated with other apiservers); 0 turns compaction off")
}

// Validate refuses a client certificate without its key, and the
// reverse, and a malformed --etcd-servers-overrides.
func (o *EtcdOptions) Validate() error {
	var errs []error
	if (o.EtcdTLS.CertFile == "") != (o.EtcdTLS.KeyFile == "") {
		errs = append(errs, errors.New("--etcd-certfile and --etcd-keyfile go together"))
	}
	_, err := parseEtcdOverrides(o.EtcdServersOverrides)
	return errors.Join(append(errs, err)...)
}

// SecureServingOptions say where the server listens and with what
// certificate.
type SecureServingOptions struct {
	BindAddress string
	// SecurePort 0 picks a free port.
	SecurePort int
	// CertDir holds the generated CA and serving certificate; empty means
	// DataDir/certs.
	CertDir           string
	TLSCertFile       string
	TLSPrivateKeyFile string
}

// AddFlags binds the options to kube-apiserver's flags.
func (o *SecureServingOptions) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.BindAddress, "bind-address", o.BindAddress, "IP address to serve HTTPS on")
	fs.IntVar(&o.SecurePort, "secure-port", o.SecurePort, "port to serve HTTPS on (0 picks a free one)")
	fs.StringVar(&o.CertDir, "cert-dir", o.CertDir, "directory of the generated CA and serving certificate (default <data-dir>/certs); ignored when --tls-cert-file and --tls-private-key-file are set")
	fs.StringVar(&o.TLSCertFile, "tls-cert-file", o.TLSCertFile, "serving certificate (PEM)")
	fs.StringVar(&o.TLSPrivateKeyFile, "tls-private-key-file", o.TLSPrivateKeyFile, "serving certificate's private key (PEM)")
}

// Validate refuses a port no listener could have.
func (o *SecureServingOptions) Validate() error {
	if o.SecurePort < 0 || o.SecurePort > 65535 {
		return fmt.Errorf("--secure-port %d must be between 0 and 65535, inclusive (0 picks a free port)", o.SecurePort)
	}
	return nil
}

// AuthenticationOptions say who may authenticate, and how.
type AuthenticationOptions struct {
	TokenAuthFile string
	// ClientCAFile verifies client certificates (CN the user, O the
	// groups); empty trusts the CA the server generated, if it did.
	ClientCAFile string
	// AnonymousAuth lets requests without credentials in as
	// system:anonymous, for authorization to judge.
	AnonymousAuth bool
	// ServiceAccounts configure service account tokens.
	ServiceAccounts ServiceAccountOptions
}

// AddFlags binds the options to kube-apiserver's flags.
func (o *AuthenticationOptions) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.TokenAuthFile, "token-auth-file", o.TokenAuthFile, "static bearer tokens, one per line: token,user,uid,\"group1,group2\"")
	fs.StringVar(&o.ClientCAFile, "client-ca-file", o.ClientCAFile, "CA bundle (PEM) that verifies client certificates: the common name is the user, the organizations the groups (default: the CA the server generated, if it did)")
	fs.BoolVar(&o.AnonymousAuth, "anonymous-auth", o.AnonymousAuth, "let requests without credentials in as system:anonymous (group system:unauthenticated), for authorization to judge")
	o.ServiceAccounts.AddFlags(fs)
}

// Validate refuses what kube-apiserver refuses of the service account
// settings.
func (o *AuthenticationOptions) Validate() error { return o.ServiceAccounts.Validate() }

// AuthorizationOptions choose the authorizers.
type AuthorizationOptions struct {
	// AuthorizationModes are asked in order: Node, RBAC, AlwaysAllow,
	// AlwaysDeny.
	AuthorizationModes []string
}

// AddFlags binds the options to kube-apiserver's flags.
func (o *AuthorizationOptions) AddFlags(fs *pflag.FlagSet) {
	fs.StringSliceVar(&o.AuthorizationModes, "authorization-mode", o.AuthorizationModes, "authorizers asked in order, comma separated: Node, RBAC, AlwaysAllow, AlwaysDeny (system:masters is always allowed)")
}

// Validate refuses no mode, an unknown one, or one given twice.
func (o *AuthorizationOptions) Validate() error {
	return validateAuthorizationModes(o.AuthorizationModes)
}

// FeatureOptions switch features on and off.
type FeatureOptions struct {
	FeatureGates *featuregate.Gates
	// Profiling serves Go's profiles at /debug/pprof/ (to whom
	// authorization lets get those paths: system:masters, cluster-admin).
	Profiling bool
	// AllowPrivileged is kube-apiserver's --allow-privileged (false by
	// default, as kube's; clusters that run the e2e specs set it).
	AllowPrivileged bool
}

// AddFlags binds the options to kube-apiserver's flags.
func (o *FeatureOptions) AddFlags(fs *pflag.FlagSet) {
	fs.Var(o.FeatureGates, "feature-gates", o.FeatureGates.Help())
	fs.BoolVar(&o.Profiling, "profiling", o.Profiling, "serve Go's profiles at /debug/pprof/ to those allowed to get those paths (system:masters)")
	fs.BoolVar(&o.AllowPrivileged, "allow-privileged", o.AllowPrivileged, "allow privileged and hostProcess containers in pods and pod templates")
}

// MetricsOptions choose the metrics served at /metrics.
type MetricsOptions struct {
	// ShowHiddenMetricsForVersion shows the metrics hidden in that (the
	// previous) minor release.
	ShowHiddenMetricsForVersion string
	// RequestMetrics records the request metrics; off only to measure
	// what they cost.
	RequestMetrics bool
}

// AddFlags binds the options to kube-apiserver's flags; --request-metrics
// is cronplane's, and hidden.
func (o *MetricsOptions) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.ShowHiddenMetricsForVersion, "show-hidden-metrics-for-version", o.ShowHiddenMetricsForVersion, "serve again the metrics hidden since the previous minor release; the only value accepted is that release, 1.28")
	fs.BoolVar(&o.RequestMetrics, "request-metrics", o.RequestMetrics, "record the apiserver_request_* metrics (off only to measure what they cost)")
	if err := fs.MarkHidden("request-metrics"); err != nil {
		panic(err)
	}
}

// Validate accepts only the previous minor release, as kube does.
func (o *MetricsOptions) Validate() error {
	return metrics.NewRegistry().ShowHiddenMetricsForVersion(o.ShowHiddenMetricsForVersion)
}

// APIEnablementOptions choose the built-in APIs served.
type APIEnablementOptions struct {
	// RuntimeConfig is --runtime-config (see ResolveRuntimeConfig); nil
	// serves them all.
	RuntimeConfig map[string]string
}

// AddFlags binds the options to kube-apiserver's flags.
func (o *APIEnablementOptions) AddFlags(fs *pflag.FlagSet) {
	fs.StringToStringVar(&o.RuntimeConfig, "runtime-config", o.RuntimeConfig, "key=true|false pairs, comma separated, choosing the built-in APIs served: api/all, api/ga, api/beta, api/alpha, <group>/<version> or <group>/<version>/<resource> (the core group is api/v1 and cannot be disabled); e.g. batch/v1=false")
}

// AdmissionOptions configure the built-in admission plugins and add
// plugins after them.
type AdmissionOptions struct {
	// DefaultNotReadyTolerationSeconds and
	// DefaultUnreachableTolerationSeconds are the tolerationSeconds of the
	// NoExecute tolerations DefaultTolerationSeconds gives a new pod of a
	// not-ready and of an unreachable node.
	DefaultNotReadyTolerationSeconds, DefaultUnreachableTolerationSeconds int64
	// Plugins run after the built-in ones, in order, in both phases.
	Plugins []admission.Interface
}

// DefaultAdmissionOptions are kube-apiserver's defaults.
func DefaultAdmissionOptions() AdmissionOptions {
	return AdmissionOptions{
		DefaultNotReadyTolerationSeconds:    defaulttolerations.Seconds,
		DefaultUnreachableTolerationSeconds: defaulttolerations.Seconds,
	}
}

// AddFlags binds the options to kube-apiserver's flags.
func (o *AdmissionOptions) AddFlags(fs *pflag.FlagSet) {
	fs.Int64Var(&o.DefaultNotReadyTolerationSeconds, "default-not-ready-toleration-seconds", o.DefaultNotReadyTolerationSeconds, "tolerationSeconds of the node.kubernetes.io/not-ready:NoExecute toleration added to every new pod that does not tolerate that taint already")
	fs.Int64Var(&o.DefaultUnreachableTolerationSeconds, "default-unreachable-toleration-seconds", o.DefaultUnreachableTolerationSeconds, "tolerationSeconds of the node.kubernetes.io/unreachable:NoExecute toleration added to every new pod that does not tolerate that taint already")
}

// completed fills in the defaults of the service account options.
func (o ServiceAccountOptions) completed() ServiceAccountOptions {
	if len(o.Issuers) == 0 {
		o.Issuers = []string{serviceaccount.DefaultIssuer}
	}
	if len(o.APIAudiences) == 0 {
		o.APIAudiences = o.Issuers
	}
	return o
}
