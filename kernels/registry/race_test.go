//go:build race

package registry_test

// raceDetector: the test binary runs under the race detector, which
// reports the races a fault switch plants on purpose (a producer that does
// not wait overwrites what its consumer is reading) as the test's failure.
const raceDetector = true
