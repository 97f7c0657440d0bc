package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/cronplane/cronplane/pkg/controllermanager"
)

func TestDeprecatedFlag_StillWorksWarnsAndIsMarked(t *testing.T) {
	f := newCommand().Flags()
	var out bytes.Buffer
	f.SetOutput(&out)
	if err := f.Parse([]string{"--concurrent-cronjob-syncs=3"}); err != nil {
		t.Fatal(err)
	}
	if v := f.Lookup("concurrent-cron-job-syncs").Value.String(); v != "3" {
		t.Fatalf("the deprecated flag set %s, want 3", v)
	}
	if !strings.Contains(out.String(), "Flag --concurrent-cronjob-syncs has been deprecated, use --concurrent-cron-job-syncs instead") {
		t.Fatalf("warning %q", out.String())
	}
	if usage := f.FlagUsages(); !strings.Contains(usage, "(DEPRECATED: use --concurrent-cron-job-syncs instead)") {
		t.Fatalf("--help does not mark it:\n%s", usage)
	}
}

func TestFlags_KubesProfilingAndContentTypeFlags(t *testing.T) {
	f := newCommand().Flags()
	for flag, def := range map[string]string{
		"profiling":             "true",
		"contention-profiling":  "false",
		"kube-api-content-type": "application/vnd.kubernetes.protobuf",
	} {
		if got := f.Lookup(flag); got == nil || got.DefValue != def {
			t.Errorf("--%s: %v, want default %s", flag, got, def)
		}
	}
	if err := f.Parse([]string{"--profiling=false", "--kube-api-content-type=application/json"}); err != nil {
		t.Fatal(err)
	}
}

func TestHelp_NamesEveryController(t *testing.T) {
	cmd := newCommand()
	usage := cmd.Flags().Lookup("controllers").Usage
	for _, d := range controllermanager.Controllers() {
		for _, name := range append([]string{d.Name}, d.Aliases...) {
			if !strings.Contains(cmd.Short, name) || !strings.Contains(usage, name) {
				t.Errorf("--help does not name %s:\n%s\n--controllers: %s", name, cmd.Short, usage)
			}
		}
	}
}
