// Counts heap allocations of every process it is preloaded into
// (LD_PRELOAD), into one shared counter: the 8 bytes of the file named by
// $MALLOC_COUNT_FILE, which the caller creates zeroed. Shared memory rather
// than a report at exit, because workers leave with _exit and run no
// destructors. The suite runs two stream lengths and reports the
// difference per request, so start-up does not count.
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void *__libc_memalign(size_t, size_t);

static _Atomic unsigned long fallback;
static _Atomic unsigned long *shared = &fallback;

__attribute__((constructor)) static void attach(void) {
    const char *path = getenv("MALLOC_COUNT_FILE");
    if (!path) return;
    int descriptor = open(path, O_RDWR | O_CLOEXEC);
    if (descriptor < 0) return;
    void *page = mmap(NULL, sizeof(unsigned long), PROT_READ | PROT_WRITE, MAP_SHARED, descriptor, 0);
    close(descriptor);
    if (page != MAP_FAILED) shared = page;
}

static inline void counted(void) { atomic_fetch_add_explicit(shared, 1, memory_order_relaxed); }

void *malloc(size_t size) { counted(); return __libc_malloc(size); }
void *calloc(size_t count, size_t size) { counted(); return __libc_calloc(count, size); }
void *realloc(void *pointer, size_t size) { counted(); return __libc_realloc(pointer, size); }
void *aligned_alloc(size_t alignment, size_t size) { counted(); return __libc_memalign(alignment, size); }
void *memalign(size_t alignment, size_t size) { counted(); return __libc_memalign(alignment, size); }
int posix_memalign(void **result, size_t alignment, size_t size) {
    counted();
    *result = __libc_memalign(alignment, size);
    return *result ? 0 : 12;
}
