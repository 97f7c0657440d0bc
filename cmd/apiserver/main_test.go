package main

import (
	"strings"
	"testing"
)

// The flag reaches the server: 1.27 is refused before anything starts,
// as kube refuses any version but the previous minor one.
func TestShowHiddenMetricsForVersion_ReachesTheServer(t *testing.T) {
	cmd := newCommand()
	cmd.SetArgs([]string{"--show-hidden-metrics-for-version=1.27", "--data-dir", t.TempDir(), "--secure-port", "0"})
	err := cmd.Execute()
	if err == nil || !strings.Contains(err.Error(), "--show-hidden-metrics-for-version must be omitted or have the value 1.28") {
		t.Fatalf("got %v", err)
	}
}
