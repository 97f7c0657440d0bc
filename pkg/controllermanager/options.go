package controllermanager

import (
	"errors"
	"fmt"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/utils/clock"

	"github.com/cronplane/cronplane/pkg/metrics"
)

// Options are the controller-manager's settings, one struct per concern
// as kube-controller-manager splits them, each with its flags (AddFlags)
// and checks (Validate); they are embedded, so that every setting keeps
// its short name (o.LeaderElect). Complete turns them into the
// CompletedConfig New builds a manager from.
type Options struct {
	ClientOptions
	ControllerOptions
	LeaderElectionOptions
	SecureServingOptions
	DebuggingOptions
	MetricsOptions
}

// DefaultOptions are kube's defaults.
func DefaultOptions() Options {
	return Options{
		ClientOptions: ClientOptions{APIQPS: 1000, APIBurst: 2000, ContentType: runtime.ContentTypeProtobuf},
		ControllerOptions: ControllerOptions{Controllers: []string{"*"}, ConcurrentCronJobSyncs: 5, ConcurrentJobSyncs: 5, ConcurrentGCSyncs: 20,
			ConcurrentTTLSyncs: 5, TerminatedPodGCThreshold: 12500, GCResync: 30 * time.Second,
			NodeMonitorPeriod: 5 * time.Second, NodeMonitorGracePeriod: 40 * time.Second, NodeStartupGracePeriod: time.Minute},
		LeaderElectionOptions: LeaderElectionOptions{LeaderElect: true, LeaseDuration: 15 * time.Second,
			RenewDeadline: 10 * time.Second, RetryPeriod: 2 * time.Second, LeaseNamespace: "kube-system",
			LeaseName: "kube-controller-manager"},
		SecureServingOptions: SecureServingOptions{BindAddress: "127.0.0.1", SecurePort: 10257},
		DebuggingOptions:     DebuggingOptions{Profiling: true},
	}
}

// AddFlags binds every concern's flags.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	o.ClientOptions.AddFlags(fs)
	o.ControllerOptions.AddFlags(fs)
	o.LeaderElectionOptions.AddFlags(fs)
	o.SecureServingOptions.AddFlags(fs)
	o.DebuggingOptions.AddFlags(fs)
	o.MetricsOptions.AddFlags(fs)
}

// Validate reports every setting that would be refused, all at once.
func (o *Options) Validate() error {
	_, err := enabled(Controllers(), o.Controllers)
	return errors.Join(err, o.LeaderElectionOptions.Validate(), o.SecureServingOptions.Validate(), o.MetricsOptions.Validate())
}

// CompletedConfig is Options checked, with --controllers resolved: what
// New builds a manager from. Only Complete makes one.
type CompletedConfig struct{ *completedConfig }

type completedConfig struct {
	Options
	// controllers are the descriptors --controllers enables, in
	// Controllers order.
	controllers []Descriptor
}

// Complete checks the options; it reads no file and touches nothing.
func (o Options) Complete() (CompletedConfig, error) {
	if err := o.Validate(); err != nil {
		return CompletedConfig{}, err
	}
	on, err := enabled(Controllers(), o.Controllers)
	if err != nil {
		return CompletedConfig{}, err
	}
	return CompletedConfig{&completedConfig{Options: o, controllers: on}}, nil
}

// ClientOptions say how the manager reaches the apiserver.
type ClientOptions struct {
	Kubeconfig string
	// APIQPS and APIBurst bound the requests to the apiserver.
	APIQPS   int
	APIBurst int
	// ContentType is the media type of the typed clients' request bodies,
	// and the one they ask for first (kube's --kube-api-content-type):
	// protobuf costs both ends far less to encode and decode than JSON.
	// The garbage collector's metadata client and the namespace
	// controller's dynamic client choose their own.
	ContentType string
	// UseServiceAccountCredentials gives each controller the credentials
	// of its own ServiceAccount in kube-system; leader election, discovery
	// and the shared informers keep the manager's.
	UseServiceAccountCredentials bool
}

// AddFlags binds the options to kube-controller-manager's flags.
func (o *ClientOptions) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.Kubeconfig, "kubeconfig", o.Kubeconfig, "kubeconfig of the apiserver to run against")
	fs.IntVar(&o.APIQPS, "kube-api-qps", o.APIQPS, "requests per second to the apiserver")
	fs.IntVar(&o.APIBurst, "kube-api-burst", o.APIBurst, "burst of requests to the apiserver")
	fs.StringVar(&o.ContentType, "kube-api-content-type", o.ContentType, "content type of requests sent to the apiserver, and the one asked for first: application/vnd.kubernetes.protobuf or application/json")
	fs.BoolVar(&o.UseServiceAccountCredentials, "use-service-account-credentials", o.UseServiceAccountCredentials, "give each controller the credentials of its own ServiceAccount in kube-system (created if missing; tokens through the TokenRequest API, renewed before they expire)")
}

// ControllerOptions choose the controllers and how much each does at once.
type ControllerOptions struct {
	// Controllers lists controllers to run: "*" for all, "name" to add
	// one, "-name" to leave one out.
	Controllers            []string
	ConcurrentCronJobSyncs int
	ConcurrentJobSyncs     int
	ConcurrentGCSyncs      int
	// ConcurrentTTLSyncs is the TTL-after-finished controller's workers.
	ConcurrentTTLSyncs int
	// TerminatedPodGCThreshold is how many terminated pods may exist
	// before the pod garbage collector deletes the oldest; zero or less
	// keeps them all.
	TerminatedPodGCThreshold int
	// NodeMonitorPeriod is how often the node lifecycle controller looks
	// at every node.
	NodeMonitorPeriod time.Duration
	// NodeMonitorGracePeriod is how long a kubelet may renew neither its
	// Lease nor its status before its node is marked Unknown.
	NodeMonitorGracePeriod time.Duration
	// NodeStartupGracePeriod replaces NodeMonitorGracePeriod for a node
	// that has not posted a Ready condition yet.
	NodeStartupGracePeriod time.Duration
	// GCResync is how often the garbage collector reads discovery again
	// to watch resources served since it started.
	GCResync time.Duration
	// RootCAFile is the CA bundle the root CA publisher puts in every
	// namespace; empty means the CA of the controller-manager's
	// kubeconfig.
	RootCAFile string
	// Clock overrides the controllers' clock (tests): the cronjob
	// controller's, and the Job controller's when it can tick.
	Clock clock.PassiveClock
}

// AddFlags binds the options to kube-controller-manager's flags.
func (o *ControllerOptions) AddFlags(fs *pflag.FlagSet) {
	fs.StringSliceVar(&o.Controllers, "controllers", o.Controllers, "controllers to run: '*' for all ("+ControllerNames()+"), 'name' to add one, '-name' to leave one out (an alias may stand for a name)")
	fs.IntVar(&o.ConcurrentCronJobSyncs, "concurrent-cron-job-syncs", o.ConcurrentCronJobSyncs, "CronJobs synced at once")
	deprecatedAlias(fs, "concurrent-cronjob-syncs", "concurrent-cron-job-syncs")
	fs.IntVar(&o.ConcurrentJobSyncs, "concurrent-job-syncs", o.ConcurrentJobSyncs, "Jobs synced at once")
	fs.IntVar(&o.ConcurrentGCSyncs, "concurrent-gc-syncs", o.ConcurrentGCSyncs, "garbage collector workers")
	fs.IntVar(&o.ConcurrentTTLSyncs, "concurrent-ttl-after-finished-syncs", o.ConcurrentTTLSyncs, "finished Jobs checked for an expired TTL at once")
	fs.IntVar(&o.TerminatedPodGCThreshold, "terminated-pod-gc-threshold", o.TerminatedPodGCThreshold, "terminated pods that may exist before the pod garbage collector deletes the oldest (<= 0: keep them all)")
	fs.DurationVar(&o.NodeMonitorPeriod, "node-monitor-period", o.NodeMonitorPeriod, "how often the node lifecycle controller checks every node's health")
	fs.DurationVar(&o.NodeMonitorGracePeriod, "node-monitor-grace-period", o.NodeMonitorGracePeriod, "how long a node's kubelet may renew neither its Lease nor its status before the node is marked unhealthy (Unknown)")
	fs.DurationVar(&o.NodeStartupGracePeriod, "node-startup-grace-period", o.NodeStartupGracePeriod, "how long a new node's kubelet may take to post its status before the node is marked unhealthy (Unknown)")
	fs.StringVar(&o.RootCAFile, "root-ca-file", o.RootCAFile, "CA bundle published as ca.crt of the kube-root-ca.crt ConfigMap in every namespace (default: the kubeconfig's CA)")
}

// deprecatedAlias keeps an old flag name working for the flag now called
// name: using it warns and names the replacement, and --help marks it.
func deprecatedAlias(f *pflag.FlagSet, old, name string) {
	flag := *f.Lookup(name)
	flag.Name, flag.Shorthand = old, ""
	f.AddFlag(&flag)
	if err := f.MarkDeprecated(old, "use --"+name+" instead"); err != nil {
		panic(err)
	}
	f.Lookup(old).Hidden = false
}

// LeaderElectionOptions elect a leader among several instances through a
// Lease.
type LeaderElectionOptions struct {
	LeaderElect    bool
	LeaseDuration  time.Duration
	RenewDeadline  time.Duration
	RetryPeriod    time.Duration
	LeaseNamespace string
	LeaseName      string
	// Identity names this instance in the Lease; empty means hostname_uuid.
	Identity string
}

// AddFlags binds the options to kube-controller-manager's flags.
func (o *LeaderElectionOptions) AddFlags(fs *pflag.FlagSet) {
	fs.BoolVar(&o.LeaderElect, "leader-elect", o.LeaderElect, "elect a leader among several instances through a Lease before running controllers")
	fs.DurationVar(&o.LeaseDuration, "leader-elect-lease-duration", o.LeaseDuration, "how long non-leaders wait before taking over an unrenewed lease")
	fs.DurationVar(&o.RenewDeadline, "leader-elect-renew-deadline", o.RenewDeadline, "how long the leader tries to renew before giving up")
	fs.DurationVar(&o.RetryPeriod, "leader-elect-retry-period", o.RetryPeriod, "how long clients wait between tries of acquiring or renewing")
	fs.StringVar(&o.LeaseNamespace, "leader-elect-resource-namespace", o.LeaseNamespace, "namespace of the leader-election Lease")
	fs.StringVar(&o.LeaseName, "leader-elect-resource-name", o.LeaseName, "name of the leader-election Lease")
}

// Validate refuses, when electing, the durations client-go's elector
// refuses, with its words.
func (o *LeaderElectionOptions) Validate() error {
	if !o.LeaderElect {
		return nil
	}
	switch {
	case o.LeaseDuration <= o.RenewDeadline:
		return errors.New("leaseDuration must be greater than renewDeadline")
	case o.RenewDeadline <= time.Duration(leaderelection.JitterFactor*float64(o.RetryPeriod)):
		return errors.New("renewDeadline must be greater than retryPeriod*JitterFactor")
	case o.LeaseDuration < 1:
		return errors.New("leaseDuration must be greater than zero")
	case o.RenewDeadline < 1:
		return errors.New("renewDeadline must be greater than zero")
	case o.RetryPeriod < 1:
		return errors.New("retryPeriod must be greater than zero")
	}
	return nil
}

// SecureServingOptions say where /healthz and /metrics are served.
type SecureServingOptions struct {
	BindAddress string
	// SecurePort serves /healthz (to anyone) and /metrics (to the callers
	// the apiserver allows to get it) over HTTPS; 0 picks a free port, -1
	// serves nothing.
	SecurePort int
}

// AddFlags binds the options to kube-controller-manager's flags.
func (o *SecureServingOptions) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.BindAddress, "bind-address", o.BindAddress, "address of /healthz and /metrics")
	fs.IntVar(&o.SecurePort, "secure-port", o.SecurePort, "HTTPS port of /healthz and /metrics (0 picks a free one)")
}

// Validate refuses a port no listener could have.
func (o *SecureServingOptions) Validate() error {
	if o.SecurePort < -1 || o.SecurePort > 65535 {
		return fmt.Errorf("--secure-port %d must be between 0 and 65535, inclusive, or -1 to serve nothing", o.SecurePort)
	}
	return nil
}

// DebuggingOptions serve Go's profiles.
type DebuggingOptions struct {
	// Profiling serves Go's profiles at /debug/pprof/ on SecurePort to
	// the callers the apiserver allows to get that path (kube's
	// --profiling); ContentionProfiling adds the block profile.
	Profiling           bool
	ContentionProfiling bool
}

// AddFlags binds the options to kube-controller-manager's flags.
func (o *DebuggingOptions) AddFlags(fs *pflag.FlagSet) {
	fs.BoolVar(&o.Profiling, "profiling", o.Profiling, "serve Go's profiles at /debug/pprof/ on --secure-port, to the callers the apiserver allows to get that path (a TokenReview, then a SubjectAccessReview)")
	fs.BoolVar(&o.ContentionProfiling, "contention-profiling", o.ContentionProfiling, "add the block profile, if --profiling")
}

// MetricsOptions choose the metrics served at /metrics.
type MetricsOptions struct {
	// ShowHiddenMetricsForVersion ("1.28") serves again the metrics hidden
	// since that release. The metrics are the process's: the first
	// manager's value holds for all.
	ShowHiddenMetricsForVersion string
}

// AddFlags binds the options to kube-controller-manager's flags.
func (o *MetricsOptions) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.ShowHiddenMetricsForVersion, "show-hidden-metrics-for-version", o.ShowHiddenMetricsForVersion, "serve again the metrics hidden since the previous minor release; the only value accepted is that release, 1.28")
}

// Validate accepts only the previous minor release, as kube does.
func (o *MetricsOptions) Validate() error {
	return metrics.NewRegistry().ShowHiddenMetricsForVersion(o.ShowHiddenMetricsForVersion)
}
