package kernels

import "time"

// The skew schedule's delay on the cuda backend, artest_delay
// (kernels/harness/delay.cu): one thread holds the stream for DelayArgs.Ns.
const DelayKernel = "artest_delay"

// DelayArgs is artest_delay's one parameter, by value: the C struct
// ArtestDelayArgs in kernels/harness/delay.cu (delay_test.go checks the layout).
type DelayArgs struct {
	Ns uint64 // how long to hold the stream
}

// DelayMax is the longest hold artest_delay grants (ARTEST_DELAY_MAX_NS),
// whatever it is asked: far above skew's delays, short enough that a bad
// argument cannot hold a GPU for long.
const DelayMax = time.Second
