package cli

import (
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/artest/artest/internal/backend"
	"github.com/artest/artest/internal/backend/host"
	"github.com/artest/artest/internal/comm"
	"github.com/artest/artest/internal/report"
	"github.com/artest/artest/internal/runner"
	"github.com/artest/artest/kernels"
	"github.com/artest/artest/reference"
)

// deviceCheckHost is the host backend under cuda's name with a device
// checker that does in Go what artest_check does on a GPU (each slot's
// elements judged by the reference, its guard bytes counted), so that the
// runner's device-checking path runs without a GPU. lie, when set, may
// change a slot's verdict: a broken device checker the host's spot checks
// must catch.
type deviceCheckHost struct {
	*host.Backend
	reason string
	lie    func(iter int, v *kernels.CheckSlot)
	slots  *atomic.Int64 // slots checked
}

func (d deviceCheckHost) Name() string              { return "cuda" }
func (d deviceCheckHost) DeviceCheckReason() string { return d.reason }

func (d deviceCheckHost) CheckOnDevice(req backend.DeviceCheck, timeout time.Duration) ([]kernels.CheckSlot, error) {
	if err := d.Sync(timeout); err != nil {
		return nil, err
	}
	out := make([]kernels.CheckSlot, req.Slots)
	size := req.Spec.Gen.DType.Size()
	img := make([]byte, req.Lead+int64(req.Count)*int64(size)+req.GuardAfter)
	for j := range out {
		if err := d.Download(img, req.Region+backend.Ptr(int64(j)*req.SlotBytes)); err != nil {
			return nil, err
		}
		spec := req.Spec
		spec.Iter += j
		msg := img[req.Lead : req.Lead+int64(req.Count)*int64(size)]
		res := reference.Check(spec, msg)
		v := &out[j]
		v.Wrong = res.Wrong
		for _, m := range res.First {
			if v.Claimed < kernels.CheckRecords {
				v.Records[v.Claimed] = kernels.CheckRecord{Index: m.Index, Got: m.GotBits, Want: m.WantBits}
			}
			v.Claimed++
		}
		for i, b := range img {
			if (int64(i) < req.Lead || int64(i) >= req.Lead+int64(len(msg))) && b != req.Guard {
				v.GuardBad++
			}
		}
		if d.lie != nil {
			d.lie(spec.Iter, v)
		}
	}
	d.slots.Add(int64(req.Slots))
	return out, nil
}

func openDeviceCheck(dir, reason string, lie func(int, *kernels.CheckSlot), slots []atomic.Int64) func(*Options, comm.Comm) (backend.Backend, error) {
	return func(o *Options, c comm.Comm) (backend.Backend, error) {
		return deviceCheckHost{Backend: host.New(dir), reason: reason, lie: lie, slots: &slots[c.Rank()]}, nil
	}
}

// Under --check device (and auto, on a backend with a checker) every stress
// iteration is checked by the device checker and a few per batch on the
// host; the header and each case say so, with both checkers' rates.
func TestStressChecksOnDevice(t *testing.T) {
	const id, n, iters = "oneshot/bf16/sum/4100B/oop-reg-plain/np2", 2, 40
	for _, mode := range []string{"device", "auto"} {
		t.Run(mode, func(t *testing.T) {
			slots := make([]atomic.Int64, n)
			js := filepath.Join(t.TempDir(), "r.json")
			res := runWorldWith(t, n, same("--backend", "cuda", "--case", id, "--stress", "40", "--check", mode,
				"--device-timeout", "30s", "--json", js), openDeviceCheck(t.TempDir(), "", nil, slots))
			require.Equal(t, []int{0, 0}, res.codes, "%v", res.stderr)
			for r := range slots {
				require.EqualValues(t, iters, slots[r].Load(), "rank %d: every iteration on the device", r)
			}
			rep := readReport(t, js)
			require.Equal(t, "device", rep.Header.Checker)
			require.Empty(t, rep.Header.CheckerNote)
			require.Contains(t, res.stdout[0], "stress 40, schedules poison-after-return,skew,straggler (link off: the cuda backend's load cannot read its peers; memory off: the cuda backend's load cannot stream device memory), checked on the device")
			c := rep.Cases[0]
			require.Equal(t, report.Pass, c.Verdict, c.Reason)
			require.NotNil(t, c.Check)
			require.Equal(t, "device", c.Check.Checker)
			require.Equal(t, iters, c.Check.DeviceIters)
			// The first, the last and the drawn ones.
			spots := 0
			for i := 0; i < iters; i++ {
				if runner.SpotChecked(1, id, i, iters, 4100) {
					spots++
				}
			}
			require.Equal(t, spots, c.Check.HostIters)
			require.Positive(t, c.Check.DeviceGBps)
			require.Positive(t, c.Check.HostGBps)
		})
	}
}

// A wrong output found on the device is re-checked on the host for the
// usual report (the first few wrong iterations; the rest are counted from
// the device's verdicts), and every rank's wrong elements are counted.
func TestStressDeviceCheckFindsPlantedBug(t *testing.T) {
	const id, n, iters = "oneshot/f32/sum/4100B/oop-reg-plain/np2", 2, 12
	slots := make([]atomic.Int64, n)
	js := filepath.Join(t.TempDir(), "r.json")
	res := runWorldWith(t, n, same("--backend", "cuda", "--case", id, "--stress", "12", "--check", "device",
		"--schedule", "none", "--inject", "skip-last", "--device-timeout", "30s", "--json", js), openDeviceCheck(t.TempDir(), "", nil, slots))
	require.Equal(t, []int{1, 1}, res.codes, "%v", res.stderr)
	c := readReport(t, js).Cases[0]
	require.Equal(t, report.Fail, c.Verdict)
	require.EqualValues(t, n*iters, c.Wrong, "one element per iteration per rank")
	require.Contains(t, c.Reason, "12 of 12 stress iterations wrong")
	var hostDetail, deviceOnly int
	for _, f := range c.Failures {
		require.NotEqual(t, "checker", f.Kind, "the device and the host agree: %s", f.Detail)
		if f.Kind != "mismatch" || len(f.Mismatches) == 0 {
			continue
		}
		require.Equal(t, uint64(1024), f.Mismatches[0].Index, "the last element of 4100 B of f32: %s", f.Detail)
		if strings.HasSuffix(f.Detail, "(device checker)") {
			deviceOnly++
		} else {
			hostDetail++
		}
	}
	require.Equal(t, n*4, hostDetail, "the first four wrong iterations of each rank, re-checked on the host")
	require.Zero(t, deviceOnly, "failures past the first four are counted, not listed")
	require.Equal(t, iters, c.Check.DeviceIters)
	// The re-checks are iterations 0 to 3; the spot checks add the last
	// (11) and the drawn ones.
	want := 4
	for i := 4; i < iters; i++ {
		if runner.SpotChecked(1, id, i, iters, 4100) {
			want++
		}
	}
	require.Equal(t, want, c.Check.HostIters)
}

// A device checker that disagrees with the Go reference is itself a
// failure, whichever way it errs: one that passes a wrong output (caught by
// the spot checks) and one that fails a right one (caught by the re-check).
func TestStressDeviceCheckerDisagreement(t *testing.T) {
	const id, n = "oneshot/f32/sum/4100B/oop-reg-plain/np2", 2
	for _, tc := range []struct {
		name   string
		inject []string
		lie    func(int, *kernels.CheckSlot)
		want   string
	}{
		{"passes a wrong output", []string{"--inject", "skip-last"},
			func(_ int, v *kernels.CheckSlot) { *v = kernels.CheckSlot{} },
			"device checker disagrees with the Go reference at iteration 0: the device found 0 wrong elements and 0 damaged guard bytes, the host 1 wrong elements and intact guards"},
		{"fails a right output", nil,
			func(iter int, v *kernels.CheckSlot) {
				if iter == 5 {
					v.Wrong = 1
				}
			},
			"device checker disagrees with the Go reference at iteration 5: the device found 1 wrong elements and 0 damaged guard bytes, the host 0 wrong elements and intact guards"},
		{"misses damaged guards", nil,
			func(iter int, v *kernels.CheckSlot) {
				if iter == 9 {
					v.GuardBad = 3
				}
			},
			"device checker disagrees with the Go reference at iteration 9: the device found 0 wrong elements and 3 damaged guard bytes, the host 0 wrong elements and intact guards"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			slots := make([]atomic.Int64, n)
			js := filepath.Join(t.TempDir(), "r.json")
			args := append([]string{"--backend", "cuda", "--case", id, "--stress", "12", "--check", "device",
				"--schedule", "none", "--device-timeout", "30s", "--json", js}, tc.inject...)
			res := runWorldWith(t, n, same(args...), openDeviceCheck(t.TempDir(), "", tc.lie, slots))
			require.Equal(t, []int{1, 1}, res.codes, "%v", res.stderr)
			c := readReport(t, js).Cases[0]
			require.Equal(t, report.Fail, c.Verdict)
			var got []string
			for _, f := range c.Failures {
				if f.Kind == "checker" {
					got = append(got, f.Detail)
				}
			}
			require.Contains(t, got, tc.want, "checker failures")
		})
	}
}

// Where the device checker cannot run, auto checks on the host and says
// why; --check device stops the run; --check host never asks; the host
// backend checks on the host with no note; --check needs --stress.
func TestCheckModes(t *testing.T) {
	const id, n = "oneshot/f32/sum/4100B/oop-reg-plain/np2", 2
	base := []string{"--case", id, "--stress", "6", "--device-timeout", "30s"}
	for _, tc := range []struct {
		name      string
		args      []string
		reason    string // the fake device checker's DeviceCheckReason; "-": the plain host backend
		code      int
		checker   string
		note      string
		onDevice  int64
		stderrHas string
	}{
		{"auto without the kernel", []string{"--backend", "cuda", "--check", "auto"}, "the fatbin has no artest_check (x): rebuild with make kernels",
			0, "host", "device checker off: the fatbin has no artest_check (x): rebuild with make kernels", 0, ""},
		{"device without the kernel", []string{"--backend", "cuda", "--check", "device"}, "the fatbin has no artest_check (x): rebuild with make kernels",
			4, "", "", 0, "--check device: the fatbin has no artest_check (x): rebuild with make kernels"},
		{"host", []string{"--backend", "cuda", "--check", "host"}, "", 0, "host", "", 0, ""},
		{"host backend, auto", []string{"--backend", "host"}, "-", 0, "host", "", 0, ""},
		{"host backend, device", []string{"--backend", "host", "--check", "device"}, "-", 4, "", "", 0,
			"--check device: the host backend has no device checker"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			slots := make([]atomic.Int64, n)
			js := filepath.Join(t.TempDir(), "r.json")
			var open func(*Options, comm.Comm) (backend.Backend, error)
			if tc.reason != "-" {
				open = openDeviceCheck(t.TempDir(), tc.reason, nil, slots)
			}
			res := runWorldWith(t, n, same(append(append([]string{}, base...), append(tc.args, "--json", js)...)...), open)
			require.Equal(t, []int{tc.code, tc.code}, res.codes, "%v", res.stderr)
			require.Contains(t, res.stderr[0], tc.stderrHas)
			require.Zero(t, slots[0].Load()+slots[1].Load(), "nothing checked on the device")
			if tc.code != 0 {
				return
			}
			rep := readReport(t, js)
			require.Equal(t, tc.checker, rep.Header.Checker)
			require.Equal(t, tc.note, rep.Header.CheckerNote)
			c := rep.Cases[0]
			require.Equal(t, report.Pass, c.Verdict, c.Reason)
			require.Equal(t, &report.StressCheck{Checker: "host", HostIters: 6, HostGBps: c.Check.HostGBps}, c.Check)
			require.Positive(t, c.Check.HostGBps)
		})
	}

	res := runWorld(t, 1, same("--backend", "host", "--quick", "--check", "device"))
	require.Equal(t, []int{2}, res.codes)
	require.Contains(t, res.stderr[0], "--check device needs --stress N")
	res = runWorld(t, 1, same("--backend", "host", "--stress", "1", "--check", "gpu"))
	require.Equal(t, []int{2}, res.codes)
	require.Contains(t, res.stderr[0], `unknown --check "gpu" (valid: auto, host, device)`)
}
