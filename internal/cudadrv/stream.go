package cudadrv

/*
#include "trampolines.h"
*/
import "C"

import "time"

// StreamCreate creates a stream; StreamNonBlocking keeps it from
// synchronising with the legacy default stream (which NCCL and our kernels
// never use).
func (d *Driver) StreamCreate(flags uint32) (Stream, error) {
	var s C.uintptr_t
	err := d.check(&d.t.streamCreate, C.art_cuStreamCreate(d.t.streamCreate.ptr, &s, C.uint(flags)))
	return Stream(s), err
}

// StreamDestroy destroys s once its queued work is done.
func (d *Driver) StreamDestroy(s Stream) error {
	return d.check(&d.t.streamDestroy, C.art_cuStreamDestroy(d.t.streamDestroy.ptr, C.uintptr_t(s)))
}

// StreamSynchronize waits for all work queued on s.
func (d *Driver) StreamSynchronize(s Stream) error {
	return d.check(&d.t.streamSynchronize, C.art_cuStreamSynchronize(d.t.streamSynchronize.ptr, C.uintptr_t(s)))
}

// StreamQuery reports whether all work on s has finished, without waiting.
// A watchdog polls this instead of blocking in StreamSynchronize.
func (d *Driver) StreamQuery(s Stream) (done bool, err error) {
	return d.ready(&d.t.streamQuery, C.art_cuStreamQuery(d.t.streamQuery.ptr, C.uintptr_t(s)))
}

// ready maps a query's CUDA_ERROR_NOT_READY to "not done yet".
func (d *Driver) ready(s *symbol, r C.CUresult) (bool, error) {
	if Result(r) == ErrNotReady {
		return false, nil
	}
	if err := d.check(s, r); err != nil {
		return false, err
	}
	return true, nil
}

// StreamWaitEvent makes the work enqueued on s after it wait for the work
// before e's last record (on any stream); inside a capture it joins the
// two streams' branches of the graph.
func (d *Driver) StreamWaitEvent(s Stream, e Event) error {
	return d.check(&d.t.streamWaitEvent, C.art_cuStreamWaitEvent(d.t.streamWaitEvent.ptr, C.uintptr_t(s), C.uintptr_t(e)))
}

// EventCreate creates an event; EventDefault events record timestamps.
func (d *Driver) EventCreate(flags uint32) (Event, error) {
	var e C.uintptr_t
	err := d.check(&d.t.eventCreate, C.art_cuEventCreate(d.t.eventCreate.ptr, &e, C.uint(flags)))
	return Event(e), err
}

// EventRecord queues e on s.
func (d *Driver) EventRecord(e Event, s Stream) error {
	return d.check(&d.t.eventRecord, C.art_cuEventRecord(d.t.eventRecord.ptr, C.uintptr_t(e), C.uintptr_t(s)))
}

// EventRecordExternal queues e on s inside a capture as a graph node of
// its own (CU_EVENT_RECORD_EXTERNAL): every replay of the graph records e
// when it reaches that node. A plain EventRecord in a capture only joins
// streams and records nothing when the graph runs.
func (d *Driver) EventRecordExternal(e Event, s Stream) error {
	if d.t.eventRecordWithFlags.ptr == nil {
		return missing(&d.t.eventRecordWithFlags)
	}
	return d.check(&d.t.eventRecordWithFlags, C.art_cuEventRecordWithFlags(d.t.eventRecordWithFlags.ptr, C.uintptr_t(e), C.uintptr_t(s), C.uint(eventRecordExternal)))
}

// eventRecordExternal is CU_EVENT_RECORD_EXTERNAL (cuda.h, CUDA 11.1).
const eventRecordExternal = 0x1

// EventQuery reports whether the work before e's last record has finished.
func (d *Driver) EventQuery(e Event) (done bool, err error) {
	return d.ready(&d.t.eventQuery, C.art_cuEventQuery(d.t.eventQuery.ptr, C.uintptr_t(e)))
}

// EventSynchronize waits for e.
func (d *Driver) EventSynchronize(e Event) error {
	return d.check(&d.t.eventSynchronize, C.art_cuEventSynchronize(d.t.eventSynchronize.ptr, C.uintptr_t(e)))
}

// EventElapsed is the device time between two recorded, completed events
// (resolution about half a microsecond).
func (d *Driver) EventElapsed(start, end Event) (time.Duration, error) {
	var ms C.float
	if err := d.check(&d.t.eventElapsed, C.art_cuEventElapsedTime(d.t.eventElapsed.ptr, &ms, C.uintptr_t(start), C.uintptr_t(end))); err != nil {
		return 0, err
	}
	return msToDuration(float32(ms)), nil
}

// EventDestroy destroys e.
func (d *Driver) EventDestroy(e Event) error {
	return d.check(&d.t.eventDestroy, C.art_cuEventDestroy(d.t.eventDestroy.ptr, C.uintptr_t(e)))
}

// StreamBeginCapture starts recording s's work into a graph instead of
// running it. CaptureThreadLocal keeps other threads' unsafe calls from
// invalidating the capture.
func (d *Driver) StreamBeginCapture(s Stream, mode CaptureMode) error {
	return d.check(&d.t.streamBeginCapture, C.art_cuStreamBeginCapture(d.t.streamBeginCapture.ptr, C.uintptr_t(s), C.int(mode)))
}

// StreamEndCapture ends a capture and returns the recorded graph.
func (d *Driver) StreamEndCapture(s Stream) (Graph, error) {
	var g C.uintptr_t
	err := d.check(&d.t.streamEndCapture, C.art_cuStreamEndCapture(d.t.streamEndCapture.ptr, C.uintptr_t(s), &g))
	return Graph(g), err
}

// GraphInstantiate turns a graph into something launchable.
func (d *Driver) GraphInstantiate(g Graph, flags uint64) (GraphExec, error) {
	var e C.uintptr_t
	err := d.check(&d.t.graphInstantiate, C.art_cuGraphInstantiateWithFlags(d.t.graphInstantiate.ptr, &e, C.uintptr_t(g), C.ulonglong(flags)))
	return GraphExec(e), err
}

// GraphLaunch queues one replay of exec on s.
func (d *Driver) GraphLaunch(exec GraphExec, s Stream) error {
	return d.check(&d.t.graphLaunch, C.art_cuGraphLaunch(d.t.graphLaunch.ptr, C.uintptr_t(exec), C.uintptr_t(s)))
}

// GraphExecDestroy destroys an instantiated graph.
func (d *Driver) GraphExecDestroy(exec GraphExec) error {
	return d.check(&d.t.graphExecDestroy, C.art_cuGraphExecDestroy(d.t.graphExecDestroy.ptr, C.uintptr_t(exec)))
}

// GraphDestroy destroys a graph (its instantiations stay valid).
func (d *Driver) GraphDestroy(g Graph) error {
	return d.check(&d.t.graphDestroy, C.art_cuGraphDestroy(d.t.graphDestroy.ptr, C.uintptr_t(g)))
}
