package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

var instrumentationRounds = flag.Int("instrumentation-rounds", 7, "alternating rounds comparing an apiserver with request metrics and a Metadata audit log against one with both off (0 skips)")

// instrumentationCost measures what request metrics and auditing at the
// Metadata level cost: two apiservers side by side, one with both off
// (--request-metrics=false, no audit policy), one with both on, measured
// in turns (the order flipping each round) so that both see the same
// machine, each idle while the other is measured.
func instrumentationCost(parent string) {
	offDir, onDir := filepath.Join(parent, "instrumentation-off"), filepath.Join(parent, "instrumentation-on")
	check(os.MkdirAll(offDir, 0o700))
	check(os.MkdirAll(onDir, 0o700))
	policy := filepath.Join(onDir, "audit-policy.yaml")
	check(os.WriteFile(policy, []byte("apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: Metadata\n"), 0o600))
	off, stopOff := startAPIServer(offDir, "--request-metrics=false")
	defer stopOff()
	on, stopOn := startAPIServer(onDir, "--audit-policy-file", policy, "--audit-log-path", filepath.Join(onDir, "audit.log"))
	defer stopOn()
	for _, b := range []*bench{off, on} {
		b.do("POST", "/api/v1/namespaces", `{"metadata":{"name":"`+namespace+`"}}`, 201)
	}
	creates, gets := onOffRates(off, on, *instrumentationRounds, func(b *bench) string { return b.token })
	report(fmt.Sprintf("create, metrics + Metadata audit on vs off (%d rounds)", *instrumentationRounds), onOffRatio(creates, on, off), "target >= 0.90")
	report(fmt.Sprintf("get, metrics + Metadata audit on vs off (%d rounds)", *instrumentationRounds), onOffRatio(gets, on, off), "target >= 0.90")
}

// onOffRates measures the create and get rates of two apiservers in
// turns (the order flipping each round) so that both see the same
// machine, each idle while the other is measured; token is the user
// each is measured as.
func onOffRates(off, on *bench, rounds int, token func(*bench) string) (creates, gets map[*bench][]float64) {
	const perRound = 1000
	creates, gets = map[*bench][]float64{}, map[*bench][]float64{}
	for round := 0; round < rounds; round++ {
		order := []*bench{off, on}
		if round%2 == 1 {
			order = []*bench{on, off}
		}
		for _, b := range order {
			start := time.Now()
			parallel(*clients, perRound, func(i int) {
				b.doAs(token(b), "POST", "/apis/batch/v1/namespaces/"+namespace+"/cronjobs", cronJob(round*perRound+i), "", 201)
			})
			creates[b] = append(creates[b], perRound/time.Since(start).Seconds())
		}
		for _, b := range order {
			gets[b] = append(gets[b], b.getRate(token(b), perRound, 2*time.Second))
		}
	}
	return creates, gets
}

// onOffRatio prints the medians of on and off and their ratio.
func onOffRatio(m map[*bench][]float64, on, off *bench) string {
	return fmt.Sprintf("%.0f/s on, %.0f/s off: %.2f", median(m[on]), median(m[off]), median(m[on])/median(m[off]))
}
