package cudadrv

import (
	"fmt"
	"strings"
	"unsafe"
)

// library is what the driver wrapper needs from a loaded libcuda: symbol
// addresses. Tests substitute fakes to simulate a missing library or
// missing entry points without a GPU.
type library interface {
	Lookup(symbol string) (unsafe.Pointer, error)
	Close() error
}

// symbol is one resolved entry point. name is the exported name that was
// found (cuMemAlloc_v2, not cuMemAlloc), so errors name what really ran.
type symbol struct {
	name string
	ptr  unsafe.Pointer
}

// table holds every entry point the wrapper calls.
type table struct {
	init, driverGetVersion, getErrorName, getErrorString symbol

	deviceGetCount, deviceGet, deviceGetName, deviceGetAttribute symbol
	deviceGetUUID, deviceGetPCIBusID, deviceTotalMem             symbol
	deviceCanAccessPeer, deviceGetExecAffinitySupport            symbol

	primaryCtxRetain, primaryCtxRelease, ctxSetCurrent, ctxGetCurrent symbol
	ctxSynchronize, ctxEnablePeerAccess, ctxGetExecAffinity           symbol

	memAlloc, memFree, memAllocHost, memFreeHost, memGetInfo symbol
	memcpyHtoD, memcpyDtoH                                   symbol
	memcpyHtoDAsync, memcpyDtoHAsync, memcpyDtoDAsync        symbol
	memsetD8Async, memsetD32Async                            symbol

	ipcGetMemHandle, ipcOpenMemHandle, ipcCloseMemHandle symbol

	moduleLoadData, moduleUnload, moduleGetFunction   symbol
	funcSetAttribute, funcGetAttribute, funcParamInfo symbol
	occupancyMaxActiveBlocks                          symbol
	launchKernel, launchKernelEx                      symbol

	streamCreate, streamDestroy, streamSynchronize, streamQuery          symbol
	streamWaitEvent                                                      symbol
	eventCreate, eventRecord, eventQuery, eventSynchronize, eventElapsed symbol
	eventDestroy, eventRecordWithFlags                                   symbol

	streamBeginCapture, streamEndCapture                          symbol
	graphInstantiate, graphLaunch, graphExecDestroy, graphDestroy symbol
}

// symbolSpec says where one entry point comes from. names are tried in
// order; later names are older exports with the same C signature, used
// only when the driver lacks the newer one. Entry points whose ABI changed
// between versions (cuMemAlloc's 32-bit sizes, cuStreamBeginCapture's
// missing mode) list the new name only.
type symbolSpec struct {
	dst      *symbol
	names    []string
	optional bool // absent on older drivers; the method that needs it reports that
}

func (t *table) specs() []symbolSpec {
	return []symbolSpec{
		{dst: &t.init, names: []string{"cuInit"}},
		{dst: &t.driverGetVersion, names: []string{"cuDriverGetVersion"}},
		{dst: &t.getErrorName, names: []string{"cuGetErrorName"}},
		{dst: &t.getErrorString, names: []string{"cuGetErrorString"}},

		{dst: &t.deviceGetCount, names: []string{"cuDeviceGetCount"}},
		{dst: &t.deviceGet, names: []string{"cuDeviceGet"}},
		{dst: &t.deviceGetName, names: []string{"cuDeviceGetName"}},
		{dst: &t.deviceGetAttribute, names: []string{"cuDeviceGetAttribute"}},
		{dst: &t.deviceGetUUID, names: []string{"cuDeviceGetUuid_v2", "cuDeviceGetUuid"}},
		{dst: &t.deviceGetPCIBusID, names: []string{"cuDeviceGetPCIBusId"}},
		{dst: &t.deviceTotalMem, names: []string{"cuDeviceTotalMem_v2"}},
		{dst: &t.deviceCanAccessPeer, names: []string{"cuDeviceCanAccessPeer"}},
		{dst: &t.deviceGetExecAffinitySupport, names: []string{"cuDeviceGetExecAffinitySupport"}, optional: true}, // CUDA 11.4

		{dst: &t.primaryCtxRetain, names: []string{"cuDevicePrimaryCtxRetain"}},
		{dst: &t.primaryCtxRelease, names: []string{"cuDevicePrimaryCtxRelease_v2", "cuDevicePrimaryCtxRelease"}},
		{dst: &t.ctxSetCurrent, names: []string{"cuCtxSetCurrent"}},
		{dst: &t.ctxGetCurrent, names: []string{"cuCtxGetCurrent"}},
		{dst: &t.ctxSynchronize, names: []string{"cuCtxSynchronize"}},
		{dst: &t.ctxEnablePeerAccess, names: []string{"cuCtxEnablePeerAccess"}},
		{dst: &t.ctxGetExecAffinity, names: []string{"cuCtxGetExecAffinity"}, optional: true}, // CUDA 11.4

		{dst: &t.memAlloc, names: []string{"cuMemAlloc_v2"}},
		{dst: &t.memFree, names: []string{"cuMemFree_v2"}},
		{dst: &t.memAllocHost, names: []string{"cuMemAllocHost_v2"}},
		{dst: &t.memFreeHost, names: []string{"cuMemFreeHost"}},
		{dst: &t.memGetInfo, names: []string{"cuMemGetInfo_v2"}},
		{dst: &t.memcpyHtoD, names: []string{"cuMemcpyHtoD_v2"}},
		{dst: &t.memcpyDtoH, names: []string{"cuMemcpyDtoH_v2"}},
		{dst: &t.memcpyHtoDAsync, names: []string{"cuMemcpyHtoDAsync_v2"}},
		{dst: &t.memcpyDtoHAsync, names: []string{"cuMemcpyDtoHAsync_v2"}},
		{dst: &t.memcpyDtoDAsync, names: []string{"cuMemcpyDtoDAsync_v2"}},
		{dst: &t.memsetD8Async, names: []string{"cuMemsetD8Async"}},
		{dst: &t.memsetD32Async, names: []string{"cuMemsetD32Async"}},

		{dst: &t.ipcGetMemHandle, names: []string{"cuIpcGetMemHandle"}},
		{dst: &t.ipcOpenMemHandle, names: []string{"cuIpcOpenMemHandle_v2"}},
		{dst: &t.ipcCloseMemHandle, names: []string{"cuIpcCloseMemHandle"}},

		{dst: &t.moduleLoadData, names: []string{"cuModuleLoadData"}},
		{dst: &t.moduleUnload, names: []string{"cuModuleUnload"}},
		{dst: &t.moduleGetFunction, names: []string{"cuModuleGetFunction"}},
		{dst: &t.funcSetAttribute, names: []string{"cuFuncSetAttribute"}},
		{dst: &t.funcGetAttribute, names: []string{"cuFuncGetAttribute"}},
		{dst: &t.funcParamInfo, names: []string{"cuFuncGetParamInfo"}, optional: true}, // CUDA 12.4
		{dst: &t.occupancyMaxActiveBlocks, names: []string{"cuOccupancyMaxActiveBlocksPerMultiprocessor"}},
		{dst: &t.launchKernel, names: []string{"cuLaunchKernel"}},
		{dst: &t.launchKernelEx, names: []string{"cuLaunchKernelEx"}, optional: true}, // CUDA 11.8

		{dst: &t.streamCreate, names: []string{"cuStreamCreate"}},
		{dst: &t.streamDestroy, names: []string{"cuStreamDestroy_v2"}},
		{dst: &t.streamSynchronize, names: []string{"cuStreamSynchronize"}},
		{dst: &t.streamQuery, names: []string{"cuStreamQuery"}},
		{dst: &t.streamWaitEvent, names: []string{"cuStreamWaitEvent"}},

		{dst: &t.eventCreate, names: []string{"cuEventCreate"}},
		{dst: &t.eventRecord, names: []string{"cuEventRecord"}},
		{dst: &t.eventQuery, names: []string{"cuEventQuery"}},
		{dst: &t.eventSynchronize, names: []string{"cuEventSynchronize"}},
		{dst: &t.eventElapsed, names: []string{"cuEventElapsedTime_v2", "cuEventElapsedTime"}},
		{dst: &t.eventDestroy, names: []string{"cuEventDestroy_v2"}},
		{dst: &t.eventRecordWithFlags, names: []string{"cuEventRecordWithFlags"}, optional: true}, // CUDA 11.1

		{dst: &t.streamBeginCapture, names: []string{"cuStreamBeginCapture_v2"}},
		{dst: &t.streamEndCapture, names: []string{"cuStreamEndCapture"}},
		{dst: &t.graphInstantiate, names: []string{"cuGraphInstantiateWithFlags"}},
		{dst: &t.graphLaunch, names: []string{"cuGraphLaunch"}},
		{dst: &t.graphExecDestroy, names: []string{"cuGraphExecDestroy"}},
		{dst: &t.graphDestroy, names: []string{"cuGraphDestroy"}},
	}
}

// resolve fills a table from lib. Every missing required entry point is
// named in the error, so one run shows everything an old driver lacks.
func resolve(lib library) (*table, error) {
	t := &table{}
	var missing []string
	for _, s := range t.specs() {
		for _, name := range s.names {
			if p, err := lib.Lookup(name); err == nil && p != nil {
				*s.dst = symbol{name: name, ptr: p}
				break
			}
		}
		if s.dst.ptr == nil {
			// Keep the preferred name so a later call can say what is missing.
			s.dst.name = s.names[0]
			if !s.optional {
				missing = append(missing, strings.Join(s.names, "|"))
			}
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("driver lacks %s (driver too old?)", strings.Join(missing, ", "))
	}
	return t, nil
}
