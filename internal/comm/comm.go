// Package comm is the communicator the runner speaks: the handful of
// collectives artest needs between its ranks. The mpi package implements it
// over MPI; Local implements it with goroutines in one process, so the whole
// runner can be tested by `go test` without mpirun.
package comm

// Comm is a world of ranks. All methods except Rank, Size, LocalRank,
// LocalSize, Hostname and Abort are collectives: every rank must call them in
// the same order. Before moving data the ranks compare what each called, so
// ranks that disagree (another collective, another root, or for Allgather
// and Bcast another length) all get an error wrapping ErrMismatch instead of
// hanging or corrupting data.
// Implementations are not safe for concurrent use; call from one goroutine
// (for MPI, the one locked to the thread that called MPI_Init).
type Comm interface {
	Rank() int
	Size() int
	// LocalRank and LocalSize describe the ranks that share this node
	// (MPI_Comm_split_type with MPI_COMM_TYPE_SHARED): LocalRank picks the GPU.
	LocalRank() int
	LocalSize() int
	// Hostname of the node this rank runs on.
	Hostname() string

	// Allgather sends len(send) bytes from every rank (the same length on
	// all) and returns all of them concatenated in rank order.
	Allgather(send []byte) ([]byte, error)
	// Bcast copies root's buf into buf on every rank; buf has the same
	// length everywhere.
	Bcast(buf []byte, root int) error
	// Gather collects send from every rank (lengths may differ) on root,
	// which gets one slice per rank; the others get nil.
	Gather(send []byte, root int) ([][]byte, error)
	Barrier() error
	// Abort ends every rank of the job with the given exit code. It does
	// not return. It may be called from any goroutine (a watchdog's).
	// The in-process world ends only the calling goroutine and makes every
	// rank's collectives fail with ErrAborted.
	Abort(code int)
	// Finalize ends the communicator; no collective may follow.
	Finalize() error
}

// AbortWatcher is a Comm that can tell a rank the job was aborted by
// another rank. MPI cannot (MPI_Abort ends the other processes); the
// in-process world can, and a rank waiting for rank 0 to abort the job
// (runner: after a hang) ends as soon as it does instead of waiting out
// its whole grace.
type AbortWatcher interface {
	// AbortedNotify is closed when some rank aborts the job.
	AbortedNotify() <-chan struct{}
}
