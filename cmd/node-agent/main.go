// Command node-agent is cronplane's kubelet: it registers a Node and runs
// the Pods bound to it as containers of a Docker engine.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"
	"k8s.io/klog/v2"

	"github.com/cronplane/cronplane/pkg/logs"
	"github.com/cronplane/cronplane/pkg/nodeagent"
)

func main() {
	if err := newCommand().Execute(); err != nil {
		os.Exit(1)
	}
}

func newCommand() *cobra.Command {
	cfg := nodeagent.DefaultConfig()
	logging := logs.NewOptions()
	cmd := &cobra.Command{
		Use:          "node-agent",
		Short:        "Register a Node and run the Pods bound to it as Docker containers",
		SilenceUsage: true,
		Args:         cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := logging.Apply(); err != nil {
				return err
			}
			defer klog.Flush()
			ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			return nodeagent.Run(klog.NewContext(ctx, klog.Background()), cfg)
		},
	}
	cfg.AddFlags(cmd.Flags())
	logging.AddFlags(cmd.Flags())
	return cmd
}
