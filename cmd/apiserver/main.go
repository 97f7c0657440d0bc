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
			c, err := opts.Complete()
			if err != nil {
				return err
			}
			ctx := signalContext()
			s, err := apiserver.New(ctx, c)
			if err != nil {
				return err
			}
			defer s.Close()
			return s.Run(ctx)
		},
	}
	opts.AddFlags(cmd.Flags())
	logging.AddFlags(cmd.Flags())
	cmd.AddCommand(probe.NewCommand())
	return cmd
}

// signalContext ends at the first SIGTERM or interrupt, which starts the
// graceful shutdown (see apiserver.Server.Run); a second signal exits at
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
