package serviceaccount

import (
	"context"
	"errors"
	"reflect"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

func namespace(name string, phase corev1.NamespacePhase) *corev1.Namespace {
	return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: corev1.NamespaceStatus{Phase: phase}}
}

func account(namespace, name string) *corev1.ServiceAccount {
	return &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}}
}

// newController builds a controller whose caches hold objs, over a fake
// client that holds them too.
func newController(t *testing.T, objs ...runtime.Object) (*Controller, *fake.Clientset) {
	t.Helper()
	client := fake.NewSimpleClientset(objs...)
	factory := informers.NewSharedInformerFactory(client, 0)
	c := New(client, factory.Core().V1().ServiceAccounts(), factory.Core().V1().Namespaces())
	for _, o := range objs {
		var err error
		switch o := o.(type) {
		case *corev1.Namespace:
			err = factory.Core().V1().Namespaces().Informer().GetIndexer().Add(o)
		case *corev1.ServiceAccount:
			err = factory.Core().V1().ServiceAccounts().Informer().GetIndexer().Add(o)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	return c, client
}

func creates(client *fake.Clientset) []string {
	var out []string
	for _, a := range client.Actions() {
		if a.GetVerb() == "create" && a.GetResource().Resource == "serviceaccounts" {
			out = append(out, a.GetNamespace()+"/"+a.(k8stesting.CreateAction).GetObject().(*corev1.ServiceAccount).Name)
		}
	}
	return out
}

func TestSync_CreatesTheDefaultAccountOfActiveNamespaces(t *testing.T) {
	for _, tc := range []struct {
		name    string
		objs    []runtime.Object
		refuse  error
		want    []string
		wantErr bool
	}{
		{name: "an active namespace without it gets it", objs: []runtime.Object{namespace("app", corev1.NamespaceActive)}, want: []string{"app/default"}},
		{name: "a namespace that has it is left alone", objs: []runtime.Object{namespace("app", corev1.NamespaceActive), account("app", "default")}},
		{name: "other accounts do not count", objs: []runtime.Object{namespace("app", corev1.NamespaceActive), account("app", "builder")}, want: []string{"app/default"}},
		{name: "a terminating namespace gets none", objs: []runtime.Object{namespace("app", corev1.NamespaceTerminating)}},
		{name: "a namespace gone is nothing to do"},
		{name: "a namespace that began terminating meanwhile is no failure", objs: []runtime.Object{namespace("app", corev1.NamespaceActive)},
			refuse: func() error {
				err := apierrors.NewForbidden(corev1.Resource("serviceaccounts"), "default", errors.New("unable to create new content in namespace app because it is being terminated"))
				err.ErrStatus.Details.Causes = []metav1.StatusCause{{Type: corev1.NamespaceTerminatingCause}}
				return err
			}(), want: []string{"app/default"}},
		{name: "other create failures are retried", objs: []runtime.Object{namespace("app", corev1.NamespaceActive)},
			refuse: apierrors.NewServiceUnavailable("etcd"), want: []string{"app/default"}, wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, client := newController(t, tc.objs...)
			if tc.refuse != nil {
				client.PrependReactor("create", "serviceaccounts", func(k8stesting.Action) (bool, runtime.Object, error) {
					return true, nil, tc.refuse
				})
			}
			err := c.sync(context.Background(), "app")
			if (err != nil) != tc.wantErr {
				t.Fatalf("err %v, want an error: %v", err, tc.wantErr)
			}
			if got := creates(client); !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("created %v, want %v", got, tc.want)
			}
		})
	}
}

func TestRun_CreatesTheDefaultAccountAgainWhenDeleted(t *testing.T) {
	client := fake.NewSimpleClientset(namespace("app", corev1.NamespaceActive))
	factory := informers.NewSharedInformerFactory(client, 0)
	c := New(client, factory.Core().V1().ServiceAccounts(), factory.Core().V1().Namespaces())
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	factory.Start(ctx.Done())
	go c.Run(ctx, 1)
	accounts := client.CoreV1().ServiceAccounts("app")
	waitForDefault := func(what string) {
		t.Helper()
		err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 5*time.Second, true, func(ctx context.Context) (bool, error) {
			_, err := accounts.Get(ctx, DefaultName, metav1.GetOptions{})
			return err == nil, nil
		})
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	waitForDefault("created")
	if err := accounts.Delete(ctx, DefaultName, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitForDefault("created again")
	cancel()
	factory.Shutdown()
}
