// Command controller-manager runs the controllers against an apiserver.
package main

import (
	"context"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/klog/v2"

	"github.com/cronplane/cronplane/pkg/controllermanager"
	"github.com/cronplane/cronplane/pkg/logs"
	"github.com/cronplane/cronplane/pkg/probe"
)

func main() {
	// Informer caches dominate memory; collecting at half the default heap
	// growth keeps the footprint small. GOGC set in the environment wins.
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(50)
	}
	if err := newCommand().Execute(); err != nil {
		os.Exit(1)
	}
}

func newCommand() *cobra.Command {
	opts := controllermanager.DefaultOptions()
	logging := logs.NewOptions()
	cmd := &cobra.Command{
		Use:          "controller-manager",
		Short:        "Run the CronJob, garbage-collector and namespace controllers against an apiserver",
		SilenceUsage: true,
		Args:         cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := logging.Apply(); err != nil {
				return err
			}
			ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			defer klog.Flush()
			return controllermanager.Run(ctx, opts)
		},
	}
	f := cmd.Flags()
	f.StringVar(&opts.Kubeconfig, "kubeconfig", opts.Kubeconfig, "kubeconfig of the apiserver to run against")
	f.StringSliceVar(&opts.Controllers, "controllers", opts.Controllers, "controllers to run: '*' for all (cronjob-controller, garbage-collector-controller, namespace-controller; or cronjob, garbagecollector, namespace), 'name' to add one, '-name' to leave one out")
	f.BoolVar(&opts.LeaderElect, "leader-elect", opts.LeaderElect, "elect a leader among several instances through a Lease before running controllers")
	f.DurationVar(&opts.LeaseDuration, "leader-elect-lease-duration", opts.LeaseDuration, "how long non-leaders wait before taking over an unrenewed lease")
	f.DurationVar(&opts.RenewDeadline, "leader-elect-renew-deadline", opts.RenewDeadline, "how long the leader tries to renew before giving up")
	f.DurationVar(&opts.RetryPeriod, "leader-elect-retry-period", opts.RetryPeriod, "how long clients wait between tries of acquiring or renewing")
	f.StringVar(&opts.LeaseNamespace, "leader-elect-resource-namespace", opts.LeaseNamespace, "namespace of the leader-election Lease")
	f.StringVar(&opts.LeaseName, "leader-elect-resource-name", opts.LeaseName, "name of the leader-election Lease")
	f.IntVar(&opts.ConcurrentCronJobSyncs, "concurrent-cron-job-syncs", opts.ConcurrentCronJobSyncs, "CronJobs synced at once")
	deprecatedAlias(f, "concurrent-cronjob-syncs", "concurrent-cron-job-syncs")
	logging.AddFlags(f)
	f.IntVar(&opts.ConcurrentGCSyncs, "concurrent-gc-syncs", opts.ConcurrentGCSyncs, "garbage collector workers")
	f.IntVar(&opts.ConcurrentTTLSyncs, "concurrent-ttl-after-finished-syncs", opts.ConcurrentTTLSyncs, "finished Jobs checked for an expired TTL at once")
	f.IntVar(&opts.APIQPS, "kube-api-qps", opts.APIQPS, "requests per second to the apiserver")
	f.IntVar(&opts.APIBurst, "kube-api-burst", opts.APIBurst, "burst of requests to the apiserver")
	f.StringVar(&opts.ContentType, "kube-api-content-type", opts.ContentType, "content type of requests sent to the apiserver, and the one asked for first: application/vnd.kubernetes.protobuf or application/json")
	f.BoolVar(&opts.UseServiceAccountCredentials, "use-service-account-credentials", opts.UseServiceAccountCredentials, "give each controller the credentials of its own ServiceAccount in kube-system (created if missing; tokens through the TokenRequest API, renewed before they expire)")
	f.StringVar(&opts.BindAddress, "bind-address", opts.BindAddress, "address of /healthz and /metrics")
	f.IntVar(&opts.SecurePort, "secure-port", opts.SecurePort, "HTTPS port of /healthz and /metrics (0 picks a free one)")
	f.BoolVar(&opts.Profiling, "profiling", opts.Profiling, "serve Go's profiles at /debug/pprof/ on --secure-port, to the callers the apiserver allows to get that path (a TokenReview, then a SubjectAccessReview)")
	f.BoolVar(&opts.ContentionProfiling, "contention-profiling", opts.ContentionProfiling, "add the block profile, if --profiling")
	f.StringVar(&opts.ShowHiddenMetricsForVersion, "show-hidden-metrics-for-version", opts.ShowHiddenMetricsForVersion, "serve again the metrics hidden since the previous minor release; the only value accepted is that release, 1.28")
	cmd.AddCommand(probe.NewCommand())
	return cmd
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
