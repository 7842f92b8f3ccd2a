package main

import (
	"github.com/artest/artest/internal/backend"
	"github.com/artest/artest/internal/backend/cuda"
	"github.com/artest/artest/internal/cli"
	"github.com/artest/artest/internal/comm"
)

func openCUDA(o *cli.Options, c comm.Comm) (backend.Backend, error) {
	b, err := cuda.Open(cuda.Options{Fatbin: o.Fatbin, NCCL: o.NCCL, ShareGPUs: o.ShareGPU, TimeSlicing: o.TimeSlicing, AllowMulticast: o.AllowMulticast}, c)
	if err != nil {
		return nil, err
	}
	return b, nil
}
