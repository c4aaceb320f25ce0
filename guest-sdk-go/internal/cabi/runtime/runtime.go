// Package runtime is what the bindings wit-bindgen generates call for the
// component model's canonical ABI: memory for what the host passes in, kept
// from the garbage collector until the call has read it, and handles of
// resources.
package runtime

import (
	"fmt"
	"runtime"
	"unsafe"
)

// Handle is the handle of a resource the component holds; zero is none.
type Handle struct {
	value int32
}

// MakeHandle holds value, which must not be zero.
func MakeHandle(value int32) *Handle {
	if value == 0 {
		panic("nil handle")
	}
	return &Handle{value}
}

// Use is the handle, which is kept.
func (h *Handle) Use() int32 {
	if h.value == 0 {
		panic("nil handle")
	}
	return h.value
}

// Take is the handle, which is given up.
func (h *Handle) Take() int32 {
	value := h.Use()
	h.value = 0
	return value
}

// TakeOrNil is the handle, or zero, given up.
func (h *Handle) TakeOrNil() int32 {
	value := h.value
	h.value = 0
	return value
}

// Set holds value in an empty handle.
func (h *Handle) Set(value int32) {
	if value == 0 {
		panic("nil handle")
	}
	if h.value != 0 {
		panic("handle already set")
	}
	h.value = value
}

// Allocate is size bytes aligned to align from the garbage-collected heap,
// pinned by pinner so that they stay where the host writes them.
func Allocate(pinner *runtime.Pinner, size, align uintptr) unsafe.Pointer {
	if size == 0 {
		return nil
	}
	if size%align != 0 {
		panic(fmt.Sprintf("size %d is not a multiple of alignment %d", size, align))
	}
	var pointer unsafe.Pointer
	switch align {
	case 1:
		pointer = unsafe.Pointer(unsafe.SliceData(make([]uint8, size)))
	case 2:
		pointer = unsafe.Pointer(unsafe.SliceData(make([]uint16, size/2)))
	case 4:
		pointer = unsafe.Pointer(unsafe.SliceData(make([]uint32, size/4)))
	case 8:
		pointer = unsafe.Pointer(unsafe.SliceData(make([]uint64, size/8)))
	default:
		panic(fmt.Sprintf("unsupported alignment %d", align))
	}
	pinner.Pin(pointer)
	return pointer
}

// argumentPinner pins what the host allocates with cabi_realloc until the
// export it calls has lifted its arguments.
var argumentPinner runtime.Pinner

// Unpin lets the garbage collector have what the host allocated for the
// arguments of the current call; the lifted values keep what they use.
func Unpin() {
	argumentPinner.Unpin()
}
