// Command controller-manager runs the controllers against an apiserver.
package main

import (
	"context"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"

	"github.com/spf13/cobra"
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
		Short:        "Run the controllers against an apiserver: " + controllermanager.ControllerNames(),
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
			m, err := controllermanager.New(c)
			if err != nil {
				return err
			}
			ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			return m.Run(ctx)
		},
	}
	opts.AddFlags(cmd.Flags())
	logging.AddFlags(cmd.Flags())
	cmd.AddCommand(probe.NewCommand())
	return cmd
}
