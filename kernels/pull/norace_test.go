//go:build !race

package pull

const raceDetector = false
