package kernels

// twoshot's gather parameter (param0; TWOSHOT_GATHER_* in
// kernels/common.cuh, checked equal by twoshot_test.go): how each rank's
// reduced chunk reaches the others.
const (
	TwoshotGatherAuto = 0 // by size: TwoshotPushMinBytes
	TwoshotGatherPull = 1 // mid barrier, then every rank reads every peer's staging (then an end barrier)
	TwoshotGatherPush = 2 // the reduce-scatter writes its chunk into every peer's staging; a local copy after the mid barrier
)

// TwoshotPushMinBytes is where auto switches from pull to push. A guess
// until artest tune measures it on H200: push trades a second round of
// NVLink reads (and the end barrier) for writes that overlap the reads,
// plus a local copy of (n-1)/n of the message, which costs more than it
// saves only when the message is small.
const TwoshotPushMinBytes = 512 << 10

var twoshotParams = []Param{{Name: "gather", Slot: 0, Default: TwoshotGatherAuto,
	Min: TwoshotGatherPull, Max: TwoshotGatherPush,
	Help: "1: pull (read peers' staging), 2: push (write into peers' staging), 0: auto by size"}}

// TwoshotResolve picks the gather for auto, the same on every rank (it
// depends on the message size only).
func TwoshotResolve(a *Args, elemBytes int64) {
	if a.Param0 != TwoshotGatherAuto {
		return
	}
	a.Param0 = TwoshotGatherPull
	if int64(a.Count)*elemBytes >= TwoshotPushMinBytes {
		a.Param0 = TwoshotGatherPush
	}
}
