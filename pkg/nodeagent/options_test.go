package nodeagent

import (
	"testing"
	"time"

	"github.com/spf13/pflag"
)

func TestConfigFlags_LeaseDurationInSecondsAndStatusFrequency(t *testing.T) {
	for _, tc := range []struct {
		args         []string
		lease        time.Duration
		statusUpdate time.Duration
		refused      bool
	}{
		{args: nil, lease: 40 * time.Second, statusUpdate: 10 * time.Second},
		{args: []string{"--node-lease-duration-seconds=8", "--node-status-update-frequency=2s"}, lease: 8 * time.Second, statusUpdate: 2 * time.Second},
		{args: []string{"--node-lease-duration-seconds=0"}, refused: true},
		{args: []string{"--node-lease-duration-seconds=8s"}, refused: true},
	} {
		c := DefaultConfig()
		fs := pflag.NewFlagSet("node-agent", pflag.ContinueOnError)
		c.AddFlags(fs)
		err := fs.Parse(tc.args)
		if tc.refused {
			if err == nil {
				t.Errorf("%v: accepted, lease %v", tc.args, c.LeaseDuration)
			}
			continue
		}
		if err != nil || c.LeaseDuration != tc.lease || c.StatusUpdateFrequency != tc.statusUpdate {
			t.Errorf("%v: lease %v, status every %v, %v; want %v and %v", tc.args, c.LeaseDuration, c.StatusUpdateFrequency, err, tc.lease, tc.statusUpdate)
		}
	}
	fs := pflag.NewFlagSet("node-agent", pflag.ContinueOnError)
	c := DefaultConfig()
	c.AddFlags(fs)
	if def := fs.Lookup("node-lease-duration-seconds").DefValue; def != "40" {
		t.Errorf("--node-lease-duration-seconds shows the default %q, want 40", def)
	}
}
