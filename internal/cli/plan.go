package cli

import (
	"errors"
	"fmt"
	"io"

	"github.com/artest/artest/internal/backend"
	"github.com/artest/artest/internal/backend/host"
	"github.com/artest/artest/internal/exitcode"
)

// fewTimedCalls sets the timing flags the user left alone to a few calls:
// on the host backend and on shared GPUs times mean nothing, and a few
// timed calls still exercise the timing path and back-to-back launches.
func (o *Options) fewTimedCalls() {
	if !o.set["warmup"] {
		o.Warmup = 1
	}
	if !o.set["iters"] {
		o.Iters = 3
	}
	if !o.set["reps"] {
		o.Reps = 1
	}
}

func openBackend(e Env, o *Options) (backend.Backend, string, error) {
	switch o.Backend {
	case "host":
		return host.New(o.ShmDir), "host", nil
	case "cuda":
		if e.OpenCUDA == nil {
			return nil, "cuda", exitcode.Envf("the cuda backend is not available in this build")
		}
		b, err := e.OpenCUDA(o, e.Comm)
		return b, "cuda", err
	}
	// auto: cuda where there is a GPU; a GPU that fails to open is an
	// error, not a reason to test the host instead.
	if e.OpenCUDA != nil {
		b, err := e.OpenCUDA(o, e.Comm)
		if err == nil {
			return b, "cuda", nil
		}
		if !errors.Is(err, backend.ErrNoDevice) {
			return nil, "cuda", err
		}
	}
	return host.New(o.ShmDir), "host", nil
}

func closeBackend(b backend.Backend, stderr io.Writer) {
	if b == nil {
		return
	}
	if err := b.Close(); err != nil {
		fmt.Fprintf(stderr, "artest: close %s backend: %v\n", b.Name(), err)
	}
}
