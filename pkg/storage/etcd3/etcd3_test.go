package etcd3_test

import (
	"context"
	"flag"
	"fmt"
	"os"
	"testing"

	"github.com/cronplane/cronplane/pkg/etcdserver"
	"github.com/cronplane/cronplane/pkg/storage/storagetest"
)

var etcd *etcdserver.Server

func TestMain(m *testing.M) {
	// make test-short leaves out what needs an etcd.
	flag.Parse()
	if testing.Short() {
		fmt.Println("skipped in -short mode: these tests run an embedded etcd")
		os.Exit(0)
	}
	var stop func()
	var err error
	if etcd, stop, err = etcdserver.StartTemp(context.Background()); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	stop()
	os.Exit(code)
}

func TestConformance(t *testing.T) {
	storagetest.Run(t, func(t *testing.T) storagetest.Backend {
		return storagetest.EtcdBackend(t, etcd.Client(), nil)
	})
}
