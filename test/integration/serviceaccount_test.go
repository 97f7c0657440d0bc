package integration

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/cronplane/cronplane/pkg/controllermanager"
)

// runManager runs a controller-manager on srv without leader election,
// with the controllers named, until the test ends.
func runManager(t *testing.T, serviceAccountCredentials bool, controllers ...string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	opts := controllermanager.DefaultOptions()
	opts.Kubeconfig = srv.ControllerManagerKubeconfigPath
	opts.LeaderElect = false
	opts.SecurePort = -1
	opts.Controllers = controllers
	opts.Clock = aheadClock{}
	opts.UseServiceAccountCredentials = serviceAccountCredentials
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := runControllerManager(ctx, opts); err != nil {
			t.Logf("controller-manager: %v", err)
		}
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
		}
	})
}

func getAccount(ns, name string) (*corev1.ServiceAccount, error) {
	return srv.Client.CoreV1().ServiceAccounts(ns).Get(context.Background(), name, metav1.GetOptions{})
}

func TestServiceAccountController_KeepsADefaultAccountInEveryNamespace(t *testing.T) {
	runManager(t, false, "serviceaccount")
	ns := newNamespace(t, "sa-default")
	waitFor(t, "the default account", func() (bool, error) {
		_, err := getAccount(ns, "default")
		return err == nil, nil
	})
	first, _ := getAccount(ns, "default")
	if err := srv.Client.CoreV1().ServiceAccounts(ns).Delete(context.Background(), "default", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the default account to come back", func() (bool, error) {
		sa, err := getAccount(ns, "default")
		return err == nil && sa.UID != first.UID, nil
	})
	// The built-in namespaces have one too.
	for _, ns := range []string{"default", "kube-system", "kube-public", "kube-node-lease"} {
		waitFor(t, "the default account of "+ns, func() (bool, error) {
			_, err := getAccount(ns, "default")
			return err == nil, nil
		})
	}
}

func TestUseServiceAccountCredentials_ControllersActWithTheirOwnAccounts(t *testing.T) {
	runManager(t, true, "cronjob", "job", "garbagecollector", "namespace", "serviceaccount")
	// kube's account names, in kube-system.
	want := []string{"cronjob-controller", "job-controller", "generic-garbage-collector", "namespace-controller", "service-account-controller"}
	waitFor(t, "the controllers' accounts", func() (bool, error) {
		for _, name := range want {
			if _, err := getAccount("kube-system", name); err != nil {
				return false, nil
			}
		}
		return true, nil
	})

	// The CronJob controller's writes are the controller-manager's as
	// ever, whoever it authenticates as.
	ns := newNamespace(t, "sa-credentials")
	createCronJob(t, ns, "tick")
	waitFor(t, "a Job", func() (bool, error) { return len(jobsOf(t, ns)) == 1, nil })
	if mf := jobEntries(jobsOf(t, ns)[0].ManagedFields); len(mf) != 1 || mf[0].Manager != "kube-controller-manager" {
		t.Fatalf("job managedFields %+v", mf)
	}

	// The service account controller acts with the token of its account,
	// which it had for the default account of ns: once that account is
	// deleted, its next write is refused as unauthenticated, and it creates
	// the account again for a new token.
	waitFor(t, "the default account", func() (bool, error) {
		_, err := getAccount(ns, "default")
		return err == nil, nil
	})
	old, err := getAccount("kube-system", "service-account-controller")
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Client.CoreV1().ServiceAccounts("kube-system").Delete(context.Background(), old.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	// Once the watch cache that authentication reads has seen the delete.
	waitFor(t, "the watch cache to see the deletion", func() (bool, error) {
		_, err := srv.Client.CoreV1().ServiceAccounts("kube-system").Get(context.Background(), old.Name, metav1.GetOptions{ResourceVersion: "0"})
		return apierrors.IsNotFound(err), nil
	})
	if err := srv.Client.CoreV1().ServiceAccounts(ns).Delete(context.Background(), "default", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the default account to come back", func() (bool, error) {
		_, err := getAccount(ns, "default")
		return err == nil, nil
	})
	renewed, err := getAccount("kube-system", old.Name)
	if err != nil || renewed.UID == old.UID {
		t.Fatalf("the controller's account was not created again: %v %+v", err, renewed)
	}

}
