// Package kubeconfig writes the kubeconfig files the apiserver hands out:
// one cluster (server URL and CA), one token user, one context in use.
package kubeconfig

import (
	"os"
	"path/filepath"

	"sigs.k8s.io/yaml"
)

// Config is what a written kubeconfig holds.
type Config struct {
	Server string
	CAData []byte
	// Token, or a client certificate and its key (PEM), authenticate
	// the user.
	Token          string
	ClientCertData []byte
	ClientKeyData  []byte
	UserName       string
	// ClusterName names the cluster and the context; empty means "cronplane".
	ClusterName string
}

type file struct {
	APIVersion     string         `json:"apiVersion"`
	Kind           string         `json:"kind"`
	Clusters       []namedCluster `json:"clusters"`
	Users          []namedUser    `json:"users"`
	Contexts       []namedContext `json:"contexts"`
	CurrentContext string         `json:"current-context"`
}

type namedCluster struct {
	Name    string `json:"name"`
	Cluster struct {
		Server string `json:"server"`
		CAData []byte `json:"certificate-authority-data,omitempty"`
	} `json:"cluster"`
}

type namedUser struct {
	Name string `json:"name"`
	User struct {
		Token          string `json:"token,omitempty"`
		ClientCertData []byte `json:"client-certificate-data,omitempty"`
		ClientKeyData  []byte `json:"client-key-data,omitempty"`
	} `json:"user"`
}

type namedContext struct {
	Name    string `json:"name"`
	Context struct {
		Cluster string `json:"cluster"`
		User    string `json:"user"`
	} `json:"context"`
}

// Write writes c to path, readable by its owner only.
func Write(path string, c Config) error {
	name := c.ClusterName
	if name == "" {
		name = "cronplane"
	}
	f := file{APIVersion: "v1", Kind: "Config", CurrentContext: name}
	var cl namedCluster
	cl.Name, cl.Cluster.Server, cl.Cluster.CAData = name, c.Server, c.CAData
	var u namedUser
	u.Name, u.User.Token = c.UserName, c.Token
	u.User.ClientCertData, u.User.ClientKeyData = c.ClientCertData, c.ClientKeyData
	var ctx namedContext
	ctx.Name, ctx.Context.Cluster, ctx.Context.User = name, name, c.UserName
	f.Clusters, f.Users, f.Contexts = []namedCluster{cl}, []namedUser{u}, []namedContext{ctx}
	data, err := yaml.Marshal(f)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
