package kernels

// Tuned is the tuning table the runner's defaults come from (tunedtable.go).
//
// Empty until the lead measures it on H200: `mpirun -np 4 artest tune ...
// --go kernels/tuned.go` (and -np 2, merged) writes this file in this
// shape, with the provenance of the run. Until then every variant runs with
// the registry's defaults.
var Tuned = TunedTable{}
