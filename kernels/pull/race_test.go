//go:build race

package pull

// raceDetector: the test binary runs under the race detector, which
// reports the races a missing barrier plants on purpose (a peer reads an
// input while its rank writes it) as the test's failure.
const raceDetector = true
