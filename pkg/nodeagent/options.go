package nodeagent

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"

	"github.com/cronplane/cronplane/pkg/certs"
	"github.com/cronplane/cronplane/pkg/nodeagent/engine"
	"github.com/cronplane/cronplane/pkg/nodeserver"
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
	// Address is where the node's HTTPS API listens, on Port.
	Address string
	// ClientCAFile verifies the client certificates of the node's HTTPS
	// API (the apiserver's); empty: the kubeconfig's CA.
	ClientCAFile string
	// TLSCertFile and TLSPrivateKeyFile serve the node's HTTPS API;
	// empty: a certificate generated under RootDir/pki.
	TLSCertFile, TLSPrivateKeyFile string
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
	fs.StringVar(&c.Network, "network", c.Network, "engine network the pods' sandboxes join")
	fs.StringVar(&c.SandboxImage, "pod-infra-container-image", c.SandboxImage, "image of the container holding each pod's network namespace (runs sh -c 'sleep ...')")
	fs.StringVar(&c.APIServer, "apiserver-for-pods", c.APIServer, "host:port the pods reach the apiserver at, given them as KUBERNETES_SERVICE_HOST/PORT (default: the kubeconfig's server)")
	fs.BoolVar(&c.PreferLocalImages, "prefer-local-images", c.PreferLocalImages, "run an image present on the machine without pulling it, whatever the pull policy (for a machine without a registry)")
	fs.StringVar(&c.Address, "address", c.Address, "the address the node's HTTPS API (container logs for the apiserver) listens on, at --port")
	fs.StringVar(&c.ClientCAFile, "client-ca-file", c.ClientCAFile, "CA certificates verifying the node API's client certificates (default: the kubeconfig's CA)")
	fs.StringVar(&c.TLSCertFile, "tls-cert-file", c.TLSCertFile, "the node API's serving certificate (default: one generated under --root-dir/pki)")
	fs.StringVar(&c.TLSPrivateKeyFile, "tls-private-key-file", c.TLSPrivateKeyFile, "the key of --tls-cert-file")
	fs.DurationVar(&c.SyncPeriod, "sync-period", c.SyncPeriod, "how often the node's containers are listed: the pods whose containers changed state, and those not settled (starting, waiting, deleted, with a deadline), are synced")
	fs.DurationVar(&c.FullSyncPeriod, "sync-frequency", c.FullSyncPeriod, "how often every pod is synced, settled or not")
	fs.Var((*seconds)(&c.LeaseDuration), "node-lease-duration-seconds", "the duration of the node's Lease in kube-node-lease, in seconds (the kubelet's nodeLeaseDurationSeconds); the agent renews it every quarter of that")
	fs.DurationVar(&c.StatusUpdateFrequency, "node-status-update-frequency", c.StatusUpdateFrequency, "how often the node's status is computed; it is written when it changed or every 5 minutes")
	fs.IntVar(&c.Workers, "workers", c.Workers, "pods synced at once")
}

// seconds is a duration given as a whole number of seconds.
type seconds time.Duration

func (s *seconds) String() string { return fmt.Sprint(int64(time.Duration(*s) / time.Second)) }
func (s *seconds) Type() string   { return "int" }

func (s *seconds) Set(v string) error {
	n, err := strconv.ParseInt(v, 10, 32)
	if err != nil || n <= 0 {
		return fmt.Errorf("%q is not a positive number of seconds", v)
	}
	*s = seconds(time.Duration(n) * time.Second)
	return nil
}

// DefaultConfig is the command's defaults.
func DefaultConfig() Config { return Config{Options: DefaultOptions(), Address: "0.0.0.0"} }

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
	// The kubelet's --kube-api-qps and --kube-api-burst, and for its
	// events a client of their own with --event-qps and --event-burst.
	rc.QPS, rc.Burst = 50, 100
	erc := rest.CopyConfig(rc)
	erc.QPS, erc.Burst = 50, 100
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
	events, err := kubernetes.NewForConfig(erc)
	if err != nil {
		return err
	}
	a, err := New(c.Options, client, eng)
	if err != nil {
		return err
	}
	a.SetEventClient(events)
	server, err := c.nodeServer(rc, client, a)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	served := make(chan error, 1)
	go func() { served <- server.ListenAndServe(ctx, net.JoinHostPort(c.Address, fmt.Sprint(c.Port))) }()
	ran := make(chan error, 1)
	go func() { ran <- a.Run(ctx) }()
	select {
	case err = <-served:
		cancel()
		if runErr := <-ran; runErr != nil {
			klog.FromContext(ctx).Info("node agent stopped", "err", runErr)
		}
		return fmt.Errorf("node API: %w", err)
	case err = <-ran:
		cancel()
		if serveErr := <-served; serveErr != nil {
			klog.FromContext(ctx).Info("node API stopped", "err", serveErr)
		}
		return err
	}
}

// nodeServer is the node's HTTPS API, serving the agent's container logs
// to the apiserver, authorized as the kubelet's.
func (c *Config) nodeServer(rc *rest.Config, client kubernetes.Interface, a *Agent) (*nodeserver.Server, error) {
	certFile, keyFile := c.TLSCertFile, c.TLSPrivateKeyFile
	if certFile == "" || keyFile == "" {
		f, err := certs.EnsureServing(filepath.Join(c.RootDir, "pki"), []string{c.NodeIP, c.NodeName})
		if err != nil {
			return nil, err
		}
		certFile, keyFile = f.CertFile, f.KeyFile
	}
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, err
	}
	var cas *x509.CertPool
	switch {
	case c.ClientCAFile != "":
		if cas, err = nodeserver.LoadCertPool(c.ClientCAFile); err != nil {
			return nil, err
		}
	case len(rc.CAData) > 0:
		cas = x509.NewCertPool()
		cas.AppendCertsFromPEM(rc.CAData)
	case rc.CAFile != "":
		if cas, err = nodeserver.LoadCertPool(rc.CAFile); err != nil {
			return nil, err
		}
	}
	return nodeserver.New(nodeserver.Config{NodeName: c.NodeName, Certificate: cert, ClientCAs: cas, Client: client, Logs: a, Exec: a})
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
