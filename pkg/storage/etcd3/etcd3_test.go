package etcd3_test

import (
	"context"
	"fmt"
	"os"
	"testing"

	"github.com/cronplane/cronplane/pkg/etcdserver"
	"github.com/cronplane/cronplane/pkg/storage/storagetest"
)

var etcd *etcdserver.Server

func TestMain(m *testing.M) {
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
