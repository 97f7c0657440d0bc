package integration

import (
	"context"
	"encoding/json"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// Both binaries log through one structured logger: with
// --logging-format=json every line of their output is a JSON object, and
// at -v=3 the apiserver logs each request with its verb, path, user, code
// and latency.
func TestBinaries_LogJSONAndRequestsAtVerbosityThree(t *testing.T) {
	apiserverBin, cmBin := buildCommand(t, "apiserver"), buildCommand(t, "controller-manager")
	dataDir := t.TempDir()
	p, cfg := startAPIServer(t, apiserverBin, dataDir, "--logging-format=json", "-v=3")
	client := kubernetes.NewForConfigOrDie(cfg)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := client.CoreV1().Namespaces().Get(ctx, "kube-system", metav1.GetOptions{}); err != nil {
		t.Fatal(err)
	}
	m := p.waitLine(t, regexp.MustCompile(`^\{.*"msg":"HTTP".*"verb":"GET","URI":"/api/v1/namespaces/kube-system".*`))
	var line map[string]interface{}
	if err := json.Unmarshal([]byte(m[0]), &line); err != nil {
		t.Fatal(err)
	}
	if line["user"] != "cronplane-admin" || line["resp"] != 200.0 || line["v"] != 3.0 || line["latency"] == nil {
		t.Errorf("request line %s", m[0])
	}

	cm := startProcess(t, cmBin, "--kubeconfig", filepath.Join(dataDir, "controller-manager.kubeconfig"),
		"--secure-port", "0", "--leader-elect=false", "--logging-format=json")
	cm.waitLine(t, regexp.MustCompile(`"msg":"Started controller"`))
	for name, out := range map[string]string{"apiserver": p.Output(), "controller-manager": cm.Output()} {
		for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
			if !json.Valid([]byte(l)) {
				t.Errorf("%s logged a line that is not JSON: %s", name, l)
			}
		}
	}
}
