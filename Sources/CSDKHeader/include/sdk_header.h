#ifndef XCALLBACK_SDK_HEADER_H
#define XCALLBACK_SDK_HEADER_H

/* The plug-in header (bindings/swift/Sources/CXCallback/include/xcallback.h) this binary
 * was built with, byte for byte, so `xcallback sdk` can write it out
 * wherever the binary was copied. Internal to the command line. */
const unsigned char *xcallback_sdk_header(void);
unsigned long xcallback_sdk_header_size(void);

#endif
