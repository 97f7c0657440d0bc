package apiserver

import (
	"crypto/tls"
	"fmt"

	"github.com/spf13/pflag"
	"go.etcd.io/etcd/client/pkg/v3/transport"
)

// EtcdTLSOptions are kube's --etcd-cafile, --etcd-certfile and
// --etcd-keyfile: the CA that verifies etcd's serving certificates and the
// client certificate the apiserver presents.
type EtcdTLSOptions struct {
	CAFile, CertFile, KeyFile string
}

// AddFlags binds the options to kube's flag names.
func (o *EtcdTLSOptions) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.CAFile, "etcd-cafile", o.CAFile, "SSL Certificate Authority file used to secure etcd communication")
	fs.StringVar(&o.CertFile, "etcd-certfile", o.CertFile, "SSL certification file used to secure etcd communication")
	fs.StringVar(&o.KeyFile, "etcd-keyfile", o.KeyFile, "SSL key file used to secure etcd communication")
}

// clientConfig is the TLS configuration of the etcd client; nil when no
// file is set.
func (o EtcdTLSOptions) clientConfig() (*tls.Config, error) {
	if o == (EtcdTLSOptions{}) {
		return nil, nil
	}
	info := transport.TLSInfo{CertFile: o.CertFile, KeyFile: o.KeyFile, TrustedCAFile: o.CAFile}
	c, err := info.ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("etcd client TLS: %w", err)
	}
	return c, nil
}
