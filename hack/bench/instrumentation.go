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
	m := onOffRates(off, on, *instrumentationRounds, func(b *bench) string { return b.token })
	report(fmt.Sprintf("create, metrics + Metadata audit on vs off (%d rounds)", *instrumentationRounds), onOffRatio(m.creates, on, off), "target >= 0.90")
	report(fmt.Sprintf("get, metrics + Metadata audit on vs off (%d rounds)", *instrumentationRounds), onOffRatio(m.gets, on, off), "target >= 0.90")
	report("  server CPU per create, on vs off", onOffCPU(m.createCPU, on, off), "")
	report("  server CPU per get, on vs off", onOffCPU(m.getCPU, on, off), "")
}

// onOff is what onOffRates measures of each server, a figure a round:
// the rates, and the server's CPU per request (µs), which depends less
// on what else the machine runs.
type onOff struct {
	creates, gets     map[*bench][]float64
	createCPU, getCPU map[*bench][]float64
}

// onOffRates measures the create and get rates of two apiservers in
// turns (the order flipping each round) so that both see the same
// machine, each idle while the other is measured; token is the user
// each is measured as.
func onOffRates(off, on *bench, rounds int, token func(*bench) string) onOff {
	const perRound = 1000
	const getFor = 2 * time.Second
	m := onOff{creates: map[*bench][]float64{}, gets: map[*bench][]float64{},
		createCPU: map[*bench][]float64{}, getCPU: map[*bench][]float64{}}
	for round := 0; round < rounds; round++ {
		order := []*bench{off, on}
		if round%2 == 1 {
			order = []*bench{on, off}
		}
		for _, b := range order {
			start, cpu := time.Now(), cpuOf(b.pids)
			parallel(*clients, perRound, func(i int) {
				b.doAs(token(b), "POST", "/apis/batch/v1/namespaces/"+namespace+"/cronjobs", cronJob(round*perRound+i), "", 201)
			})
			m.creates[b] = append(m.creates[b], perRound/time.Since(start).Seconds())
			m.createCPU[b] = append(m.createCPU[b], 1e6*(cpuOf(b.pids)-cpu)/perRound)
		}
		for _, b := range order {
			cpu := cpuOf(b.pids)
			rate := b.getRate(token(b), perRound, getFor)
			m.gets[b] = append(m.gets[b], rate)
			m.getCPU[b] = append(m.getCPU[b], 1e6*(cpuOf(b.pids)-cpu)/(rate*getFor.Seconds()))
		}
	}
	return m
}

// onOffRatio prints the medians of on and off and their ratio.
func onOffRatio(m map[*bench][]float64, on, off *bench) string {
	return fmt.Sprintf("%.0f/s on, %.0f/s off: %.2f", median(m[on]), median(m[off]), median(m[on])/median(m[off]))
}

// onOffCPU prints the median CPU per request of on and off and their
// ratio.
func onOffCPU(m map[*bench][]float64, on, off *bench) string {
	return fmt.Sprintf("%.0f µs on, %.0f µs off: %.2f", median(m[on]), median(m[off]), median(m[on])/median(m[off]))
}
