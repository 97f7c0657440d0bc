package integration

import (
	"context"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/cronplane/cronplane/pkg/apiserver/apiservertest"
	"github.com/cronplane/cronplane/pkg/controllermanager"
)

// With discovery forbidden to it (the system:discovery binding removed),
// kube-controller-manager v1.29 cannot tell which APIs are served and
// starts its controllers regardless: the CronJob controller still creates
// Jobs. The namespace controller, which cannot work without discovery,
// ends the process at start instead, with an error.
func TestControllerManager_DiscoveryForbiddenStartsControllersAnyway(t *testing.T) {
	s := apiservertest.Start(t)
	ctx := context.Background()
	if err := s.Client.RbacV1().ClusterRoleBindings().Delete(ctx, "system:discovery", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", s.ControllerManagerKubeconfigPath)
	if err != nil {
		t.Fatal(err)
	}
	manager := kubernetes.NewForConfigOrDie(cfg)
	waitFor(t, "discovery to be forbidden", func() (bool, error) {
		_, err := manager.Discovery().ServerResourcesForGroupVersion("batch/v1")
		return err != nil && strings.Contains(err.Error(), "forbidden"), nil
	})
	run := func(controllers ...string) chan error {
		opts := controllermanager.DefaultOptions()
		opts.UseServiceAccountCredentials = true
		opts.Kubeconfig = s.ControllerManagerKubeconfigPath
		opts.SecurePort = -1
		opts.LeaderElect = false
		opts.Controllers = controllers
		opts.Clock = aheadClock{}
		ctx, cancel := context.WithCancel(context.Background())
		done, ended := make(chan error, 1), make(chan struct{})
		go func() {
			defer close(ended)
			done <- runControllerManager(ctx, opts)
		}()
		t.Cleanup(func() {
			cancel()
			select {
			case <-ended:
			case <-time.After(10 * time.Second):
			}
		})
		return done
	}

	t.Run("the CronJob controller runs", func(t *testing.T) {
		run("cronjob")
		ns := "default"
		createCronJobWith(t, s.Client, ns, "undiscovered")
		waitFor(t, "a Job", func() (bool, error) {
			jobs, err := s.Client.BatchV1().Jobs(ns).List(ctx, metav1.ListOptions{})
			return err == nil && len(jobs.Items) == 1, err
		})
	})
	t.Run("the namespace controller ends the manager", func(t *testing.T) {
		done := run("namespace")
		select {
		case err := <-done:
			if err == nil || !strings.Contains(err.Error(), "unable to get any supported resources from server") {
				t.Fatalf("Run ended with %v", err)
			}
		case <-time.After(20 * time.Second):
			t.Fatal("Run still running")
		}
	})
}
