package kubeconfig

import (
	"os"
	"path/filepath"
	"testing"

	"k8s.io/client-go/tools/clientcmd"
)

func TestWrite_LoadsWithClientGo(t *testing.T) {
	path := filepath.Join(t.TempDir(), "admin.kubeconfig")
	if err := Write(path, Config{Server: "https://127.0.0.1:6443", CAData: []byte("PEM"), Token: "tok", UserName: "admin"}); err != nil {
		t.Fatal(err)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Host != "https://127.0.0.1:6443" || cfg.BearerToken != "tok" || string(cfg.CAData) != "PEM" {
		t.Fatalf("loaded %+v", cfg)
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v", fi.Mode())
	}
}
