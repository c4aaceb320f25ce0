package runtime

import "unsafe"

// sbrk is the Go runtime's own page allocator, the only one there is before
// the runtime has started.
//
//go:linkname sbrk runtime.sbrk
func sbrk(n uintptr) unsafe.Pointer

// started is set once the Go runtime, and so its heap, is up. The WASI
// adapter allocates its state through cabi_realloc while the runtime is
// still starting.
var started = false

func init() {
	started = true
}

// pauseMonotonicClock tells the WASI adapter to answer clock reads from a
// cached value: the garbage collector reads the clock, and a component may
// not call imports from within cabi_realloc.
//
//go:wasmimport wasi_snapshot_preview1 adapter_monotonic_clock_set_paused
func pauseMonotonicClock(paused bool)

// cabiRealloc is where the host and the WASI adapter allocate in the
// component's memory. Only fresh allocations are asked for.
//
//go:wasmexport cabi_realloc
func cabiRealloc(oldPointer unsafe.Pointer, oldSize, align, newSize uintptr) unsafe.Pointer {
	if oldPointer != nil || oldSize != 0 {
		panic("cabi_realloc: reallocation is not supported")
	}
	if !started {
		pointer := sbrk(newSize + align - 1)
		return unsafe.Add(pointer, (align-uintptr(pointer)%align)%align)
	}
	pauseMonotonicClock(true)
	pointer := Allocate(&argumentPinner, newSize, align)
	pauseMonotonicClock(false)
	return pointer
}
