package controllermanager

import (
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/cronplane/cronplane/pkg/version"
)

// program is the product the controller-manager's User-Agent names, and
// so the field manager of what it writes. It is kube's, so that objects
// written by either controller-manager carry the same managedFields.
const program = "kube-controller-manager"

// ClientBuilder hands out clients for a named user (a controller, the
// shared informers, leader election). Each has its own User-Agent,
// "kube-controller-manager/<version> (<os>/<arch>) cronplane/<commit>/<name>",
// so that the apiserver's logs and audit tell the controllers apart.
type ClientBuilder interface {
	// Config returns a new configuration for name.
	Config(name string) *rest.Config
	// Client returns a new typed client for name.
	Client(name string) (kubernetes.Interface, error)
}

// configClientBuilder gives every user the credentials of one
// configuration.
type configClientBuilder struct {
	base *rest.Config
}

func (b configClientBuilder) Config(name string) *rest.Config {
	cfg := rest.CopyConfig(b.base)
	cfg.UserAgent = version.UserAgent(program, name)
	return cfg
}

func (b configClientBuilder) Client(name string) (kubernetes.Interface, error) {
	return kubernetes.NewForConfig(b.Config(name))
}
