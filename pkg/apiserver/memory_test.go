package apiserver

import (
	"slices"
	"testing"
	"time"
)

func TestMemoryReturner_ReturnsWhenTheWritesPauseAfterMuchWasFreed(t *testing.T) {
	const mib = 1 << 20
	type at struct {
		freed  uint64 // total
		events uint64 // total
	}
	// steady is a write load that frees 2 MiB and brings 400 events a
	// second, for n seconds.
	steady := func(n int) []at {
		var s []at
		for i := 0; i <= n; i++ {
			s = append(s, at{uint64(i) * 2 * mib, uint64(i) * 400})
		}
		return s
	}
	tests := []struct {
		name string
		live uint64
		// ticks are the caches' totals, one second apart.
		ticks []at
		// returns are the ticks at which the memory is returned.
		returns []int
	}{
		{"a mass delete, then a pause", 20 * mib, []at{{0, 0}, {10 * mib, 2000}, {30 * mib, 5000}, {40 * mib, 6000}, {40 * mib, 6000}, {40 * mib, 6000}}, []int{4}},
		{"a steady load: never", 20 * mib, steady(120), nil},
		{"a steady load, then a pause", 20 * mib, append(steady(20), at{40 * mib, 8000}), []int{21}},
		{"a trickle of events counts as a pause", 20 * mib, []at{{0, 0}, {40 * mib, 5000}, {40 * mib, 5010}}, []int{2}},
		{"too little freed", 20 * mib, []at{{0, 0}, {10 * mib, 2000}, {10 * mib, 2000}, {10 * mib, 2000}}, nil},
		{"an eighth of a large heap is the least", 400 * mib, []at{{0, 0}, {40 * mib, 2000}, {40 * mib, 2000}}, nil},
		{"an eighth of a large heap", 400 * mib, []at{{0, 0}, {60 * mib, 2000}, {60 * mib, 2000}}, []int{2}},
		{"not again within 10 s", 20 * mib, []at{{0, 0}, {40 * mib, 2000}, {40 * mib, 2000}, {80 * mib, 4000}, {80 * mib, 4000}}, []int{2}},
		{"again after 10 s", 20 * mib, []at{{0, 0}, {40 * mib, 2000}, {40 * mib, 2000}, {80 * mib, 4000}, {80 * mib, 4000},
			{80 * mib, 4000}, {80 * mib, 4000}, {80 * mib, 4000}, {80 * mib, 4000}, {80 * mib, 4000}, {80 * mib, 4000}, {80 * mib, 4000}, {80 * mib, 4000}}, []int{2, 12}},
		{"what was returned counts no more", 20 * mib, []at{{0, 0}, {40 * mib, 2000}, {40 * mib, 2000}, {50 * mib, 3000},
			{50 * mib, 3000}, {50 * mib, 3000}, {50 * mib, 3000}, {50 * mib, 3000}, {50 * mib, 3000}, {50 * mib, 3000}, {50 * mib, 3000}, {50 * mib, 3000}, {50 * mib, 3000}}, []int{2}},
		{"a cache removed", 20 * mib, []at{{0, 0}, {40 * mib, 2000}, {10 * mib, 1000}, {10 * mib, 1000}, {12 * mib, 1000}, {12 * mib, 1000}}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			i := 0
			var got []int
			m := &memoryReturner{
				caches: func() (uint64, uint64) { return tt.ticks[i].freed, tt.ticks[i].events },
				live:   func() uint64 { return tt.live },
				free:   func() { got = append(got, i) },
			}
			start := time.Unix(1000, 0)
			for i = range tt.ticks {
				m.tick(start.Add(time.Duration(i) * time.Second))
			}
			if !slices.Equal(got, tt.returns) {
				t.Errorf("returned at ticks %v, want %v", got, tt.returns)
			}
		})
	}
}
