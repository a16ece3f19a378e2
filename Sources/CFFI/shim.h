#ifndef XCALLBACK_CFFI_SHIM_H
#define XCALLBACK_CFFI_SHIM_H
// libffi through pkg-config `libffi` (Debian: libffi-dev).
#include <ffi.h>
#endif
