package etcd3_test

import (
	"context"
	"fmt"
	"k8s.io/apimachinery/pkg/util/rand"
	"os"
	"strings"
	"testing"

	"github.com/cronplane/cronplane/pkg/etcdserver"
	"github.com/cronplane/cronplane/pkg/storage/etcd3"
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
		return storagetest.Backend{
			Storage: etcd3.New(etcd.Client(), storagetest.Codec(), storagetest.NewObject),
			Prefix:  "/" + strings.ReplaceAll(t.Name(), "/", "-") + "-" + rand.String(5) + "/",
			Compact: func(ctx context.Context, rev int64) error {
				_, err := etcd.Client().Compact(ctx, rev)
				return err
			},
		}
	})
}
