//go:build !race

package registry_test

const raceDetector = false
