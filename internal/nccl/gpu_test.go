//go:build gpu

package nccl

import (
	"encoding/binary"
	"encoding/hex"
	"math"
	"os"
	"os/exec"
	"runtime"
	"testing"

	"github.com/artest/artest/internal/cudadrv"
	"github.com/stretchr/testify/require"
)

// These tests need GPUs and a real NCCL (found by Find: set ARTEST_NCCL on
// machines where it sits somewhere unusual). ci/gpu.sh runs them with
// `go test -tags gpu`.

func setup(t *testing.T, dev int) (*cudadrv.Driver, *Lib) {
	t.Helper()
	runtime.LockOSThread()
	t.Cleanup(runtime.UnlockOSThread)
	d, err := cudadrv.Load()
	require.NoError(t, err)
	_, err = d.MakeCurrent(cudadrv.Device(dev))
	require.NoError(t, err)
	t.Cleanup(func() { d.PrimaryCtxRelease(cudadrv.Device(dev)) })

	path, tried, err := Find("")
	require.NoError(t, err, "tried %v", tried)
	l, err := Load(path)
	require.NoError(t, err)
	t.Logf("NCCL %v from %s, %s=%s", l.Version(), path, NVLSEnv, os.Getenv(NVLSEnv))
	return d, l
}

// allreduce runs a float32 sum over count elements where rank r holds
// value(r, i), and checks the result against the exact sum.
func allreduce(t *testing.T, d *cudadrv.Driver, l *Lib, comm Comm, rank, nranks, count int) {
	t.Helper()
	value := func(r, i int) float32 { return float32((r+1)*(i%13) - 6) }
	s, err := d.StreamCreate(cudadrv.StreamNonBlocking)
	require.NoError(t, err)
	defer d.StreamDestroy(s)

	in := make([]byte, 4*count)
	for i := 0; i < count; i++ {
		binary.LittleEndian.PutUint32(in[4*i:], math.Float32bits(value(rank, i)))
	}
	send, err := d.MemAlloc(uint64(len(in)))
	require.NoError(t, err)
	defer d.MemFree(send)
	recv, err := d.MemAlloc(uint64(len(in)))
	require.NoError(t, err)
	defer d.MemFree(recv)
	require.NoError(t, d.MemcpyHtoD(send, in))

	require.NoError(t, l.AllReduce(send, recv, uint64(count), Float32, Sum, comm, s))
	require.NoError(t, d.StreamSynchronize(s))
	async, err := l.CommAsyncError(comm)
	require.NoError(t, err)
	require.NoError(t, async)

	out := make([]byte, len(in))
	require.NoError(t, d.MemcpyDtoH(out, recv))
	for i := 0; i < count; i++ {
		var want float32
		for r := 0; r < nranks; r++ {
			want += value(r, i)
		}
		got := math.Float32frombits(binary.LittleEndian.Uint32(out[4*i:]))
		require.Equal(t, want, got, "element %d", i)
	}
}

func TestGPUSingleRank(t *testing.T) {
	d, l := setup(t, 0)
	id, err := l.GetUniqueID()
	require.NoError(t, err)
	comm, err := l.CommInitRank(1, id, 0)
	require.NoError(t, err)
	allreduce(t, d, l, comm, 0, 1, 1<<20+3)
	require.NoError(t, l.CommFinalize(comm))
	require.NoError(t, l.CommDestroy(comm))
}

// TestGPUTwoRanks runs rank 1 in a child process on GPU 1, the way MPI
// ranks run, with the unique id passed through the environment.
func TestGPUTwoRanks(t *testing.T) {
	d, l := setup(t, 0)
	n, err := d.DeviceCount()
	require.NoError(t, err)
	if n < 2 {
		t.Skip("needs two GPUs")
	}
	id, err := l.GetUniqueID()
	require.NoError(t, err)

	child := exec.Command(os.Args[0], "-test.run=^TestGPUTwoRanksChild$", "-test.v")
	child.Env = append(os.Environ(), "ARTEST_NCCL_ID="+hex.EncodeToString(id[:]))
	out := &capture{}
	child.Stdout, child.Stderr = out, out
	require.NoError(t, child.Start())

	comm, err := l.CommInitRank(2, id, 0)
	require.NoError(t, err)
	allreduce(t, d, l, comm, 0, 2, 4<<20+1)
	require.NoError(t, l.CommFinalize(comm))
	require.NoError(t, l.CommDestroy(comm))
	require.NoError(t, child.Wait(), "rank 1:\n%s", out)
	require.Contains(t, out.String(), "--- PASS: TestGPUTwoRanksChild")
}

func TestGPUTwoRanksChild(t *testing.T) {
	hs := os.Getenv("ARTEST_NCCL_ID")
	if hs == "" {
		t.Skip("helper process for TestGPUTwoRanks")
	}
	d, l := setup(t, 1)
	raw, err := hex.DecodeString(hs)
	require.NoError(t, err)
	var id UniqueID
	require.Equal(t, len(id), copy(id[:], raw))
	comm, err := l.CommInitRank(2, id, 1)
	require.NoError(t, err)
	allreduce(t, d, l, comm, 1, 2, 4<<20+1)
	require.NoError(t, l.CommFinalize(comm))
	require.NoError(t, l.CommDestroy(comm))
}

type capture struct{ b []byte }

func (c *capture) Write(p []byte) (int, error) { c.b = append(c.b, p...); return len(p), nil }
func (c *capture) String() string              { return string(c.b) }
