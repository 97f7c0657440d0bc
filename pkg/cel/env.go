package cel

import (
	"sync"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/checker"
	"github.com/google/cel-go/ext"
)

// kube-apiserver v1.29 compiles a rule in one of two environments. A
// rule that a create or update of a definition brings new is compiled
// for the version before (1.28): extended strings at version 0, no sets,
// no literal validators, so that a rollback serves it. A rule already
// stored (when objects are validated, or unchanged in an update) gets
// everything 1.29 has.
const (
	newExpressions    = iota // what a new rule may use
	storedExpressions        // what a stored rule may use
)

var (
	envOnce  [2]sync.Once
	envs     [2]*cel.Env
	envsErrs [2]error
)

// baseEnv returns the shared environment of the kind, without self and
// oldSelf; rule nodes extend it.
func baseEnv(kind int) (*cel.Env, error) {
	envOnce[kind].Do(func() {
		opts := []cel.EnvOption{
			cel.HomogeneousAggregateLiterals(),
			// declarations checked once here, not in each Extend
			cel.EagerlyValidateDeclarations(true),
			cel.DefaultUTCTimeZone(true),
			urlsLibrary(),
			regexLibrary(),
			listsLibrary(),
			// has() costs nothing, as before cel-go v0.17.7
			cel.CostEstimatorOptions(checker.PresenceTestHasCost(false)),
			authzLibrary(),
			cel.CrossTypeNumericComparisons(true),
			cel.OptionalTypes(),
			quantityLibrary(),
		}
		if kind == newExpressions {
			opts = append(opts, ext.Strings(ext.StringsVersion(0)))
		} else {
			opts = append(opts,
				ext.Strings(ext.StringsVersion(2)),
				ext.Sets(),
				cel.ASTValidators(
					cel.ValidateDurationLiterals(),
					cel.ValidateTimestampLiterals(),
					cel.ValidateRegexLiterals(),
					cel.ValidateHomogeneousAggregateLiterals(),
				),
			)
		}
		envs[kind], envsErrs[kind] = cel.NewEnv(opts...)
	})
	return envs[kind], envsErrs[kind]
}
