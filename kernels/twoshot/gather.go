package twoshot

// The gather parameter (param0; TWOSHOT_GATHER_* in twoshot.cuh, checked
// equal by gather_test.go): how each rank's reduced chunk reaches the
// others.
const (
	GatherAuto = 0 // by size: PushMinBytes
	GatherPull = 1 // mid barrier, then every rank reads every peer's staging (then an end barrier)
	GatherPush = 2 // the reduce-scatter writes its chunk into every peer's staging; a local copy after the mid barrier
)
