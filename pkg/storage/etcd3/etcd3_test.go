package etcd3_test

import (
	"testing"

	"github.com/cronplane/cronplane/pkg/etcdserver"
	"github.com/cronplane/cronplane/pkg/etcdserver/etcdtest"
	"github.com/cronplane/cronplane/pkg/storage/storagetest"
)

var etcd *etcdserver.Server

func TestMain(m *testing.M) { etcdtest.Main(m, etcdtest.StartEtcd(&etcd)) }

func TestConformance(t *testing.T) {
	storagetest.Run(t, func(t *testing.T) storagetest.Backend {
		return storagetest.EtcdBackend(t, etcd.Client(), nil)
	})
}
