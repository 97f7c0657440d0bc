// Command pki generates the TLS material of the compose cluster
// (docker-compose.yaml) into a directory: a CA, a certificate per etcd
// member (the main cluster's three and etcd-events; serving its clients
// and its peers), the apiservers' etcd client certificate, their serving
// certificate, their client certificate to the node agents, a client
// certificate for each controller-manager, each node agent (system:node:<name> in the
// group system:nodes) and the admin, a service-account key pair both
// apiservers share, a kubeconfig per controller-manager and per node
// agent, and an admin kubeconfig for the host. The controller-managers,
// the node agents and the admin's current context name the cluster's one
// address, the load balancer apiserver-lb in front of both apiservers
// (TLS passes through it, so the serving certificate names it too); the
// admin kubeconfig also has a context per apiserver.
// Files already there and still good are kept, so that a restarted
// cluster keeps its identities.
//
// The files are made readable by everyone: the containers run as an
// unprivileged user that does not own them. This is a development
// cluster's PKI, kept in a git-ignored directory.
package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"flag"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"sigs.k8s.io/yaml"

	"github.com/cronplane/cronplane/pkg/certs"
	"github.com/cronplane/cronplane/pkg/kubeconfig"
)

// lbHost is the load balancer's service name on the cluster network.
const lbHost = "apiserver-lb"

const lbURL = "https://" + lbHost + ":6443"

func main() {
	dir := flag.String("dir", ".cluster", "directory of the generated files (pki/ and the kubeconfigs)")
	ports := flag.String("ports", "16443,16444,16445", "host ports of apiserver-lb, apiserver-0 and apiserver-1, for the admin kubeconfig")
	flag.Parse()
	log.SetFlags(0)
	var hostPorts [3]int
	if _, err := fmt.Sscanf(*ports, "%d,%d,%d", &hostPorts[0], &hostPorts[1], &hostPorts[2]); err != nil {
		log.Fatalf("-ports: %v", err)
	}
	pki := filepath.Join(*dir, "pki")
	specs := []certs.Spec{
		{Name: "etcd-client", CommonName: "kube-apiserver-etcd-client", Client: true},
		{Name: "apiserver", CommonName: "kube-apiserver", Server: true,
			Hosts: []string{lbHost, "apiserver-0", "apiserver-1", "kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local"}},
		{Name: "admin", CommonName: "cronplane-admin", Organizations: []string{"system:masters"}, Client: true},
		// The apiservers' client certificate to the node agents (pods/log),
		// as kubeadm's apiserver-kubelet-client.
		{Name: "apiserver-kubelet-client", CommonName: "kube-apiserver-kubelet-client", Organizations: []string{"system:masters"}, Client: true},
	}
	for _, name := range []string{"etcd-0", "etcd-1", "etcd-2", "etcd-events"} {
		specs = append(specs, certs.Spec{Name: name, CommonName: name, Hosts: []string{name}, Server: true, Client: true})
	}
	for i := 0; i < 2; i++ {
		specs = append(specs, certs.Spec{Name: fmt.Sprintf("controller-manager-%d", i), CommonName: "system:kube-controller-manager", Client: true})
		node := fmt.Sprintf("node-%d", i)
		specs = append(specs, certs.Spec{Name: node, CommonName: "system:node:" + node, Organizations: []string{"system:nodes"}, Client: true})
	}
	files := map[string]certs.Files{}
	for _, s := range specs {
		f, err := certs.EnsureCert(pki, s)
		check(err)
		files[s.Name] = f
	}
	check(ensureServiceAccountKeys(pki))

	ca, err := os.ReadFile(files["admin"].CAFile)
	check(err)
	for i := 0; i < 2; i++ {
		f := files[fmt.Sprintf("controller-manager-%d", i)]
		cert, key := read(f.CertFile), read(f.KeyFile)
		check(kubeconfig.Write(filepath.Join(*dir, fmt.Sprintf("controller-manager-%d.kubeconfig", i)), kubeconfig.Config{
			Server: lbURL, CAData: ca, ClientCertData: cert, ClientKeyData: key,
			UserName: "system:kube-controller-manager",
		}))
		node := fmt.Sprintf("node-%d", i)
		f = files[node]
		check(kubeconfig.Write(filepath.Join(*dir, node+".kubeconfig"), kubeconfig.Config{
			Server: lbURL, CAData: ca, ClientCertData: read(f.CertFile), ClientKeyData: read(f.KeyFile),
			UserName: "system:node:" + node,
		}))
	}
	admin := files["admin"]
	check(writeAdminKubeconfig(filepath.Join(*dir, "admin.kubeconfig"), ca, read(admin.CertFile), read(admin.KeyFile), hostPorts))

	// Readable by the containers' unprivileged user.
	check(filepath.Walk(*dir, func(path string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		if info.IsDir() {
			return os.Chmod(path, 0o755)
		}
		return os.Chmod(path, 0o644)
	}))
	fmt.Printf("PKI and kubeconfigs in %s; export KUBECONFIG=%s\n", *dir, filepath.Join(*dir, "admin.kubeconfig"))
}

// ensureServiceAccountKeys writes the key pair both apiservers sign and
// verify service account tokens with, unless it exists.
func ensureServiceAccountKeys(dir string) error {
	keyFile, pubFile := filepath.Join(dir, "sa.key"), filepath.Join(dir, "sa.pub")
	if _, err := os.Stat(keyFile); err == nil {
		if _, err := os.Stat(pubFile); err == nil {
			return nil
		}
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	der, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return err
	}
	pub, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		return err
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der}), 0o600); err != nil {
		return err
	}
	return os.WriteFile(pubFile, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pub}), 0o644)
}

// writeAdminKubeconfig writes a kubeconfig with a context for the load
// balancer, current, and one per apiserver, each on its host port.
func writeAdminKubeconfig(path string, ca, cert, key []byte, ports [3]int) error {
	var clusters, contexts []map[string]interface{}
	for i, port := range ports {
		name := lbHost
		if i > 0 {
			name = fmt.Sprintf("apiserver-%d", i-1)
		}
		clusters = append(clusters, map[string]interface{}{"name": name, "cluster": map[string]interface{}{
			"server": fmt.Sprintf("https://127.0.0.1:%d", port), "certificate-authority-data": ca}})
		contexts = append(contexts, map[string]interface{}{"name": name, "context": map[string]interface{}{"cluster": name, "user": "admin"}})
	}
	data, err := yaml.Marshal(map[string]interface{}{
		"apiVersion": "v1", "kind": "Config", "clusters": clusters, "contexts": contexts, "current-context": lbHost,
		"users": []map[string]interface{}{{"name": "admin", "user": map[string]interface{}{"client-certificate-data": cert, "client-key-data": key}}},
	})
	if err != nil {
		return err
	}
	return os.WriteFile(path, data, 0o600)
}

func read(path string) []byte {
	data, err := os.ReadFile(path)
	check(err)
	return data
}

func check(err error) {
	if err != nil {
		log.Fatal(err)
	}
}
