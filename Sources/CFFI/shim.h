#ifndef XCALLBACK_CFFI_SHIM_H
#define XCALLBACK_CFFI_SHIM_H
// libffi through pkg-config `libffi` (Debian: libffi-dev).
#include <ffi.h>

// Addresses of libffi's type descriptors and its default ABI, as functions:
// Swift cannot take a stable address of a C global, and some of these names
// are macros on some targets. Internal to the host; not part of the plug-in ABI.
static inline ffi_type *xcallback_ffi_type_void(void) { return &ffi_type_void; }
static inline ffi_type *xcallback_ffi_type_uint8(void) { return &ffi_type_uint8; }
static inline ffi_type *xcallback_ffi_type_sint8(void) { return &ffi_type_sint8; }
static inline ffi_type *xcallback_ffi_type_uint16(void) { return &ffi_type_uint16; }
static inline ffi_type *xcallback_ffi_type_sint16(void) { return &ffi_type_sint16; }
static inline ffi_type *xcallback_ffi_type_uint32(void) { return &ffi_type_uint32; }
static inline ffi_type *xcallback_ffi_type_sint32(void) { return &ffi_type_sint32; }
static inline ffi_type *xcallback_ffi_type_uint64(void) { return &ffi_type_uint64; }
static inline ffi_type *xcallback_ffi_type_sint64(void) { return &ffi_type_sint64; }
static inline ffi_type *xcallback_ffi_type_float(void) { return &ffi_type_float; }
static inline ffi_type *xcallback_ffi_type_double(void) { return &ffi_type_double; }
static inline ffi_type *xcallback_ffi_type_pointer(void) { return &ffi_type_pointer; }
static inline ffi_abi xcallback_ffi_default_abi(void) { return FFI_DEFAULT_ABI; }
/* sizeof(ffi_arg): the least size of a return buffer (libffi widens small integer returns). */
static inline unsigned xcallback_ffi_arg_size(void) { return (unsigned)sizeof(ffi_arg); }
/* sizeof(_Bool) on this target, for the bool mapping. */
static inline unsigned xcallback_bool_size(void) { return (unsigned)sizeof(_Bool); }

#endif
