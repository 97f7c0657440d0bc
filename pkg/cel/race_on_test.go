//go:build race

package cel

// raceDetector is set when the tests run with -race, which makes
// evaluating rules about ten times slower.
const raceDetector = true
