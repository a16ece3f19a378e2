#include "sdk_header.h"

/* #embed (C23; an extension clang accepts in older modes) takes the one
 * header itself, so there is no copy to keep in step with it. */
#pragma clang diagnostic ignored "-Wc23-extensions"
static const unsigned char header[] = {
#embed "../../bindings/swift/Sources/CXCallback/include/xcallback.h"
};

const unsigned char *xcallback_sdk_header(void) { return header; }
unsigned long xcallback_sdk_header_size(void) { return sizeof header; }
