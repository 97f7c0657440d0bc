// Command apiserver serves the Kubernetes resource API over etcd.
package main

import (
	"context"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"

	"github.com/spf13/cobra"
	"k8s.io/klog/v2"

	"github.com/cronplane/cronplane/pkg/apiserver"
	"github.com/cronplane/cronplane/pkg/logs"
	"github.com/cronplane/cronplane/pkg/probe"
)

func main() {
	// The watch caches keep every object decoded and encoded; collecting at
	// half the default heap growth keeps the footprint small for little CPU.
	// GOGC set in the environment still wins.
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(50)
	}
	if err := newCommand().Execute(); err != nil {
		os.Exit(1)
	}
}

func newCommand() *cobra.Command {
	opts := apiserver.DefaultOptions()
	logging := logs.NewOptions()
	cmd := &cobra.Command{
		Use:          "apiserver",
		Short:        "Serve the Kubernetes resource API (v1.29 semantics) over etcd",
		SilenceUsage: true,
		Args:         cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := logging.Apply(); err != nil {
				return err
			}
			defer klog.Flush()
			ctx := signalContext()
			s, err := apiserver.New(ctx, opts)
			if err != nil {
				return err
			}
			defer s.Close()
			klog.InfoS("apiserver ready", "url", s.URL, "kubeconfig", s.KubeconfigPath)
			return s.Serve(ctx)
		},
	}
	f := cmd.Flags()
	f.StringSliceVar(&opts.EtcdServers, "etcd-servers", opts.EtcdServers, "etcd client URLs, comma separated; empty starts an embedded etcd under --data-dir")
	opts.EtcdTLS.AddFlags(f)
	f.StringVar(&opts.DataDir, "data-dir", opts.DataDir, "directory for the embedded etcd, generated certificates and admin.kubeconfig")
	f.StringVar(&opts.EtcdPrefix, "etcd-prefix", opts.EtcdPrefix, "prefix of every key in etcd")
	f.StringVar(&opts.BindAddress, "bind-address", opts.BindAddress, "IP address to serve HTTPS on")
	f.IntVar(&opts.SecurePort, "secure-port", opts.SecurePort, "port to serve HTTPS on (0 picks a free one)")
	f.StringVar(&opts.CertDir, "cert-dir", opts.CertDir, "directory of the generated CA and serving certificate (default <data-dir>/certs); ignored when --tls-cert-file and --tls-private-key-file are set")
	f.StringVar(&opts.TLSCertFile, "tls-cert-file", opts.TLSCertFile, "serving certificate (PEM)")
	f.StringVar(&opts.TLSPrivateKeyFile, "tls-private-key-file", opts.TLSPrivateKeyFile, "serving certificate's private key (PEM)")
	f.StringVar(&opts.TokenAuthFile, "token-auth-file", opts.TokenAuthFile, "static bearer tokens, one per line: token,user,uid,\"group1,group2\"")
	f.StringVar(&opts.ClientCAFile, "client-ca-file", opts.ClientCAFile, "CA bundle (PEM) that verifies client certificates: the common name is the user, the organizations the groups (default: the CA the server generated, if it did)")
	f.BoolVar(&opts.AnonymousAuth, "anonymous-auth", opts.AnonymousAuth, "let requests without credentials in as system:anonymous (group system:unauthenticated), for authorization to judge")
	f.StringSliceVar(&opts.AuthorizationModes, "authorization-mode", opts.AuthorizationModes, "authorizers asked in order, comma separated: RBAC, AlwaysAllow, AlwaysDeny (system:masters is always allowed)")
	opts.ServiceAccounts.AddFlags(f)
	opts.Audit.AddFlags(f)
	opts.Serving.AddFlags(f)
	opts.Services.AddFlags(f) // kubernetesservice wiring
	f.DurationVar(&opts.CompactionInterval, "etcd-compaction-interval", opts.CompactionInterval, "how often etcd's history is compacted (coordinated with other apiservers); 0 turns compaction off")
	f.Var(opts.FeatureGates, "feature-gates", opts.FeatureGates.Help())
	f.StringToStringVar(&opts.RuntimeConfig, "runtime-config", opts.RuntimeConfig, "key=true|false pairs, comma separated, choosing the built-in APIs served: api/all, api/ga, api/beta, api/alpha, <group>/<version> or <group>/<version>/<resource> (the core group is api/v1 and cannot be disabled); e.g. batch/v1=false")
	f.StringVar(&opts.ShowHiddenMetricsForVersion, "show-hidden-metrics-for-version", opts.ShowHiddenMetricsForVersion, "serve again the metrics hidden since the previous minor release; the only value accepted is that release, 1.28")
	f.BoolVar(&opts.Profiling, "profiling", opts.Profiling, "serve Go's profiles at /debug/pprof/ to those allowed to get those paths (system:masters)")
	f.BoolVar(&opts.RequestMetrics, "request-metrics", opts.RequestMetrics, "record the apiserver_request_* metrics (off only to measure what they cost)")
	if err := f.MarkHidden("request-metrics"); err != nil {
		panic(err)
	}
	logging.AddFlags(f)
	f.Int64Var(&opts.MinRequestTimeout, "min-request-timeout", opts.MinRequestTimeout, "seconds a watch without timeoutSeconds lasts at least (it lasts up to twice this); 0 ends such watches at once, as kube-apiserver v1.29 does")
	cmd.AddCommand(probe.NewCommand())
	return cmd
}

// signalContext ends at the first SIGTERM or interrupt, which starts the
// graceful shutdown (see apiserver.Server.Serve); a second signal exits at
// once, with code 1, as kube-apiserver does.
func signalContext() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	signals := make(chan os.Signal, 2)
	signal.Notify(signals, os.Interrupt, syscall.SIGTERM)
	go func() {
		<-signals
		cancel()
		<-signals
		klog.InfoS("Received a second signal: exiting at once")
		klog.Flush()
		os.Exit(1)
	}()
	return ctx
}
