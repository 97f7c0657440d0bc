package flowcontrol

import (
	"math"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
)

// defaultNominalShares is v1's default nominalConcurrencyShares of a
// limited level.
const defaultNominalShares = 30

// maxSeatsLimit caps the seats one request may take, whatever its
// level's size.
const maxSeatsLimit = 10

// limits are a priority level's seats, derived as kube derives them
// from the server's total concurrency.
type limits struct {
	// nominal is ceil(total × shares / Σ shares of all levels).
	nominal int
	// lendable of the nominal seats may be used by other levels.
	lendable int
	// borrowing is how many seats beyond nominal the level may take from
	// the others; -1 is no bound.
	borrowing int
	// maxSeats is the most seats one request of the level takes: 15 % of
	// nominal, between 1 and maxSeatsLimit.
	maxSeats int
}

// guaranteed is what the level keeps for itself.
func (l limits) guaranteed() int { return l.nominal - l.lendable }

// shares is a level's nominalConcurrencyShares.
func shares(pl *flowcontrolv1.PriorityLevelConfiguration) int {
	switch {
	case pl.Spec.Type == flowcontrolv1.PriorityLevelEnablementExempt:
		if pl.Spec.Exempt != nil && pl.Spec.Exempt.NominalConcurrencyShares != nil {
			return int(*pl.Spec.Exempt.NominalConcurrencyShares)
		}
		return 0
	case pl.Spec.Limited != nil && pl.Spec.Limited.NominalConcurrencyShares != nil:
		return int(*pl.Spec.Limited.NominalConcurrencyShares)
	}
	return defaultNominalShares
}

// computeLimits shares total among the levels by their shares.
func computeLimits(total int, pls []*flowcontrolv1.PriorityLevelConfiguration) map[string]limits {
	sum := 0
	for _, pl := range pls {
		sum += shares(pl)
	}
	out := make(map[string]limits, len(pls))
	for _, pl := range pls {
		var l limits
		if sum > 0 {
			l.nominal = int(math.Ceil(float64(total) * float64(shares(pl)) / float64(sum)))
		}
		l.borrowing = -1
		var lendable, borrowing *int32
		if pl.Spec.Type == flowcontrolv1.PriorityLevelEnablementExempt {
			if pl.Spec.Exempt != nil {
				lendable = pl.Spec.Exempt.LendablePercent
			}
		} else if pl.Spec.Limited != nil {
			lendable, borrowing = pl.Spec.Limited.LendablePercent, pl.Spec.Limited.BorrowingLimitPercent
		}
		if lendable != nil {
			l.lendable = int(math.Round(float64(l.nominal) * float64(*lendable) / 100))
		}
		if borrowing != nil {
			l.borrowing = int(math.Round(float64(l.nominal) * float64(*borrowing) / 100))
		}
		l.maxSeats = min(max(int(math.Ceil(float64(l.nominal)*0.15)), 1), maxSeatsLimit)
		out[pl.Name] = l
	}
	return out
}
