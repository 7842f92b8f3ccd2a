package dl

/*
#cgo LDFLAGS: -ldl
#define _GNU_SOURCE
#include <dlfcn.h>
#include <link.h>
#include <stdlib.h>

// dl_resolved returns the path the dynamic loader actually loaded for handle,
// or NULL. For a bare soname this is the file the search path led to.
static const char *dl_resolved(void *handle) {
	struct link_map *lm = NULL;
	if (dlinfo(handle, RTLD_DI_LINKMAP, &lm) != 0 || lm == NULL) {
		return NULL;
	}
	return lm->l_name;
}
*/
import "C"

import (
	"errors"
	"fmt"
	"runtime"
	"sync"
	"unsafe"
)

// ErrClosed is returned by Sym after Close.
var ErrClosed = errors.New("library is closed")

// Lib is an open shared library.
type Lib struct {
	name string

	mu     sync.Mutex
	handle unsafe.Pointer
}

// Open loads the library at path (a file path or a bare soname that the
// loader resolves through its search path). Symbols are bound immediately
// (RTLD_NOW) so a library that cannot work fails here, and kept local
// (RTLD_LOCAL) so two libraries that export the same names cannot mix.
func Open(path string) (*Lib, error) {
	cpath := C.CString(path)
	defer C.free(unsafe.Pointer(cpath))

	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	C.dlerror() // clear a stale message left on this thread
	h := C.dlopen(cpath, C.RTLD_NOW|C.RTLD_LOCAL)
	if h == nil {
		return nil, fmt.Errorf("dlopen %s: %s", path, lastError())
	}
	return &Lib{name: path, handle: h}, nil
}

// Name is the path or soname the library was opened with.
func (l *Lib) Name() string { return l.name }

// Resolved is the file the loader actually opened; for a bare soname that is
// the file the search path led to. It is empty after Close.
func (l *Lib) Resolved() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.handle == nil {
		return ""
	}
	p := C.dl_resolved(l.handle)
	if p == nil {
		return ""
	}
	return C.GoString(p)
}

// Sym returns the address of the named symbol. A symbol that is absent, or
// present with a NULL value, is an error that names it.
func (l *Lib) Sym(name string) (unsafe.Pointer, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.handle == nil {
		return nil, fmt.Errorf("dlsym %s in %s: %w", name, l.name, ErrClosed)
	}
	cname := C.CString(name)
	defer C.free(unsafe.Pointer(cname))

	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	C.dlerror()
	p := C.dlsym(l.handle, cname)
	if msg := lastError(); msg != "" {
		return nil, fmt.Errorf("dlsym %s in %s: %s", name, l.name, msg)
	}
	if p == nil {
		return nil, fmt.Errorf("dlsym %s in %s: symbol is NULL", name, l.name)
	}
	return p, nil
}

// Close unloads the library. Pointers from Sym must not be used afterwards.
// Closing twice is not an error.
func (l *Lib) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.handle == nil {
		return nil
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	C.dlerror()
	if C.dlclose(l.handle) != 0 {
		return fmt.Errorf("dlclose %s: %s", l.name, lastError())
	}
	l.handle = nil
	return nil
}

// lastError reads and clears this thread's dlerror message; the caller holds
// the OS thread.
func lastError() string {
	msg := C.dlerror()
	if msg == nil {
		return ""
	}
	return C.GoString(msg)
}
