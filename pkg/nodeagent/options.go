package nodeagent

import (
	"context"
	"fmt"
	"net"
	"os"
	"strings"

	"github.com/spf13/pflag"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/cronplane/cronplane/pkg/nodeagent/engine"
	"github.com/cronplane/cronplane/pkg/version"
)

// Config is what the node-agent command takes: the agent's options and
// how to reach the apiserver and the engine.
type Config struct {
	Options
	// Kubeconfig holds the node's credentials: a client certificate for
	// system:node:<name> in the group system:nodes.
	Kubeconfig string
	// EngineHost is the Docker Engine API address; empty: DOCKER_HOST or
	// the default socket.
	EngineHost string
	// APIServer is host:port the pods reach the apiserver at.
	APIServer string
}

// AddFlags adds the command's flags.
func (c *Config) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&c.Kubeconfig, "kubeconfig", c.Kubeconfig, "kubeconfig with the node's credentials (user system:node:<name>, group system:nodes)")
	fs.StringVar(&c.EngineHost, "engine-host", c.EngineHost, "Docker Engine API address, e.g. unix:///var/run/docker.sock (default: $DOCKER_HOST or the default socket)")
	fs.StringVar(&c.NodeName, "hostname-override", c.NodeName, "the node's name (default: the hostname)")
	fs.StringVar(&c.NodeIP, "node-ip", c.NodeIP, "the node's InternalIP and the pods' hostIP (default: the first non-loopback IPv4 address)")
	fs.Int32Var(&c.Port, "port", c.Port, "the port of the node's HTTPS server, reported in the Node's daemonEndpoints")
	fs.IntVar(&c.MaxPods, "max-pods", c.MaxPods, "the number of pods the node takes")
	fs.StringVar(&c.RootDir, "root-dir", c.RootDir, "directory of the pods' volumes; when the agent runs in a container, the engine's host must see it at the same path")
	fs.StringVar(&c.Network, "network", c.Network, "engine network the pods' containers join")
	fs.StringVar(&c.APIServer, "apiserver-for-pods", c.APIServer, "host:port the pods reach the apiserver at, given them as KUBERNETES_SERVICE_HOST/PORT (default: the kubeconfig's server)")
	fs.BoolVar(&c.PreferLocalImages, "prefer-local-images", c.PreferLocalImages, "run an image present on the machine without pulling it, whatever the pull policy (for a machine without a registry)")
	fs.DurationVar(&c.SyncPeriod, "sync-period", c.SyncPeriod, "how often every pod is compared with its containers")
	fs.IntVar(&c.Workers, "workers", c.Workers, "pods synced at once")
}

// DefaultConfig is the command's defaults.
func DefaultConfig() Config { return Config{Options: DefaultOptions()} }

// Run connects to the apiserver and the engine and runs the agent until
// ctx ends.
func Run(ctx context.Context, c Config) error {
	if c.NodeName == "" {
		h, err := os.Hostname()
		if err != nil {
			return err
		}
		c.NodeName = strings.ToLower(h)
	}
	if c.NodeIP == "" {
		c.NodeIP = firstIPv4()
	}
	rc, err := clientcmd.BuildConfigFromFlags("", c.Kubeconfig)
	if err != nil {
		return fmt.Errorf("kubeconfig: %w", err)
	}
	rc.UserAgent = version.UserAgent("node-agent", "")
	rc.QPS, rc.Burst = 50, 100
	hostPort := c.APIServer
	if hostPort == "" {
		hostPort = strings.TrimPrefix(rc.Host, "https://")
	}
	host, port, err := net.SplitHostPort(hostPort)
	if err != nil {
		return fmt.Errorf("apiserver address for pods %q: %w", hostPort, err)
	}
	c.APIServerHost = host
	if _, err := fmt.Sscan(port, &c.APIServerPort); err != nil {
		return fmt.Errorf("apiserver port for pods %q: %w", port, err)
	}
	client, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return err
	}
	eng, err := engine.NewDocker(c.EngineHost)
	if err != nil {
		return err
	}
	a, err := New(c.Options, client, eng)
	if err != nil {
		return err
	}
	return a.Run(ctx)
}

func firstIPv4() string {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return ""
	}
	for _, addr := range addrs {
		if n, ok := addr.(*net.IPNet); ok && !n.IP.IsLoopback() && n.IP.To4() != nil {
			return n.IP.String()
		}
	}
	return ""
}
