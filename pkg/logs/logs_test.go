package logs

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/spf13/pflag"
	"k8s.io/klog/v2"
)

func TestJSON_WritesKubesFieldsAndHonoursVerbosity(t *testing.T) {
	o := NewOptions()
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	o.AddFlags(fs)
	if err := fs.Parse([]string{"-v=3", "--logging-format=json"}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = fs.Set("v", "0") })
	var out bytes.Buffer
	logger := NewJSON(&out).WithValues("component", "apiserver")
	logger.V(3).Info("HTTP", "verb", "GET", "URI", "/api?a=1&b=2", "pod", klog.KRef("ns", "p"))
	logger.V(4).Info("too verbose")
	logger.Error(errors.New("boom"), "Failed", "attempt", 2)

	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("want 2 lines (V(4) off at -v=3), got %d:\n%s", len(lines), out.String())
	}
	var info, failure map[string]interface{}
	if err := json.Unmarshal([]byte(lines[0]), &info); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(lines[1]), &failure); err != nil {
		t.Fatal(err)
	}
	if _, ok := info["ts"].(float64); !ok {
		t.Errorf("ts is not seconds: %v", info["ts"])
	}
	if c, _ := info["caller"].(string); !strings.HasPrefix(c, "logs_test.go:") {
		t.Errorf("caller %q, want this file", c)
	}
	if info["msg"] != "HTTP" || info["v"] != 3.0 || info["URI"] != "/api?a=1&b=2" || info["component"] != "apiserver" {
		t.Errorf("info line %s", lines[0])
	}
	if pod, _ := info["pod"].(map[string]interface{}); pod["name"] != "p" || pod["namespace"] != "ns" {
		t.Errorf("object reference %v", info["pod"])
	}
	if failure["err"] != "boom" || failure["attempt"] != 2.0 || failure["v"] != nil {
		t.Errorf("error line %s", lines[1])
	}
}

func TestApply_RejectsUnknownFormat(t *testing.T) {
	o := NewOptions()
	o.Format = "xml"
	if err := o.Apply(); err == nil || !strings.Contains(err.Error(), `"xml" is not one of [text json]`) {
		t.Fatalf("err = %v", err)
	}
}
