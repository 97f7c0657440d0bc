// Package etcdtest is the TestMain of the test packages that need an etcd
// (embedded, or an apiserver over one): they are all left out in -short
// mode (make test-short), and share what their setup starts.
package etcdtest

import (
	"context"
	"flag"
	"fmt"
	"os"
	"testing"

	"github.com/cronplane/cronplane/pkg/etcdserver"
)

// Main runs m's tests between setup and the teardown it returns, and exits
// with their code; in -short mode it runs nothing. A failed setup exits 1.
func Main(m *testing.M, setup func() (teardown func(), err error)) {
	flag.Parse()
	if testing.Short() {
		fmt.Println("skipped in -short mode: these tests run an embedded etcd")
		os.Exit(0)
	}
	teardown, err := setup()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	teardown()
	os.Exit(code)
}

// StartEtcd is a setup for Main: an embedded etcd in a temporary
// directory, which *s is set to.
func StartEtcd(s **etcdserver.Server) func() (func(), error) {
	return func() (func(), error) {
		e, stop, err := etcdserver.StartTemp(context.Background())
		*s = e
		return stop, err
	}
}
