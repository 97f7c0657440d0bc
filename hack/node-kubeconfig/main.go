// Command node-kubeconfig writes a node agent's kubeconfig: a client
// certificate for system:node:<name> in the group system:nodes, signed by
// the CA of a directory as pkg/certs keeps it (an apiserver's
// <data-dir>/certs, or the compose cluster's .cluster/pki), so that a
// node agent runs against a development apiserver:
//
//	go run ./hack/node-kubeconfig -ca-dir .cronplane/certs -node node-0 \
//	    -server https://127.0.0.1:6443 -out .cronplane/node-0.kubeconfig
package main

import (
	"flag"
	"log"
	"os"

	"github.com/cronplane/cronplane/pkg/certs"
	"github.com/cronplane/cronplane/pkg/kubeconfig"
)

func main() {
	caDir := flag.String("ca-dir", ".cronplane/certs", "directory of the CA (ca.crt, ca.key); the node's certificate is written there too")
	node := flag.String("node", "node-0", "the node's name")
	server := flag.String("server", "https://127.0.0.1:6443", "the apiserver URL")
	out := flag.String("out", "", "the kubeconfig to write (default: <node>.kubeconfig)")
	flag.Parse()
	log.SetFlags(0)
	if *out == "" {
		*out = *node + ".kubeconfig"
	}
	f, err := certs.EnsureClient(*caDir, "node-"+*node, "system:node:"+*node, []string{"system:nodes"})
	check(err)
	check(kubeconfig.Write(*out, kubeconfig.Config{
		Server: *server, CAData: read(f.CAFile), ClientCertData: read(f.CertFile), ClientKeyData: read(f.KeyFile),
		UserName: "system:node:" + *node,
	}))
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
