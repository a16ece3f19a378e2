// Compile-time proof that the ABI structs have the layout the header
// promises: no padding, so every compiler that builds a plug-in agrees.
#include <stddef.h>
#include "xcallback.h"

_Static_assert(offsetof(xcallback_descriptor, name) == 16,
               "descriptor: fixed-width fields must fill exactly 16 bytes");
_Static_assert(sizeof(xcallback_descriptor) == 16 + 3 * sizeof(void *),
               "descriptor: no padding");
_Static_assert(offsetof(xcallback_host_api, register_action) == 8,
               "host API: header must fill exactly 8 bytes");
_Static_assert(sizeof(xcallback_reply) == 8, "reply: one 64-bit token");
_Static_assert(sizeof(xcallback_param) == 2 * sizeof(void *), "param: two pointers");
/* Minor versions only append: the 16 functions of 1.0 keep their offsets,
 * and 1.1's register_function comes right after them. */
_Static_assert(offsetof(xcallback_host_api, log) == 8 + 15 * sizeof(void *),
               "host API: the 1.0 table is 16 function pointers");
_Static_assert(offsetof(xcallback_host_api, register_function) == 8 + 16 * sizeof(void *),
               "host API: 1.1 appends register_function after every 1.0 function");
_Static_assert(offsetof(xcallback_host_api, request_route) == 8 + 17 * sizeof(void *),
               "host API: 1.2 appends its accessors after 1.1's register_function");
_Static_assert(sizeof(xcallback_host_api) == 8 + 23 * sizeof(void *),
               "host API: 1.2 ends after request_attempt");
