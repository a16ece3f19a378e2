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
