#ifndef XCALLBACK_SDK_KIT_H
#define XCALLBACK_SDK_KIT_H

/* The files of bindings/ (the Swift kit's package and the Rust crate) this
 * binary was built with, by their path under bindings/. Internal to the
 * command line. */
typedef struct {
    const char *path;
    const unsigned char *bytes;
    unsigned long size;
} xcallback_sdk_file;

const xcallback_sdk_file *xcallback_sdk_kit_files(void);
unsigned long xcallback_sdk_kit_file_count(void);

#endif
