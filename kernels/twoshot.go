package kernels

// twoshot's gather parameter (param0; TWOSHOT_GATHER_* in
// kernels/common.cuh, checked equal by twoshot_test.go): how each rank's
// reduced chunk reaches the others.
const (
	TwoshotGatherAuto = 0 // by size: twoshot.PushMinBytes (kernels/twoshot)
	TwoshotGatherPull = 1 // mid barrier, then every rank reads every peer's staging (then an end barrier)
	TwoshotGatherPush = 2 // the reduce-scatter writes its chunk into every peer's staging; a local copy after the mid barrier
)
