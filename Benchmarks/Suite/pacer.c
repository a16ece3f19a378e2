/*
 * pacer.c — the paced writer of the latency benchmark.
 *
 *   pacer FIFO REQUESTS RATE SECONDS WARMUP  < outcome-records
 *
 * Writes request lines to FIFO at RATE per second (open loop: request i is
 * due at start + i / RATE, whether or not earlier ones were answered), one
 * write(2) per line, and reads outcome records from stdin in the same
 * thread (ppoll between sends, so no lock, GIL or second thread sits between
 * a timestamp and the event it stamps). REQUESTS is a file of template lines;
 * each is sent with its first "~ID~" replaced by "~<n>~", and a record is
 * matched to its request by the first "~<n>~" in it (the calculator echoes
 * it in `result`, `cat` echoes the whole line). WARMUP requests are sent
 * first at the same rate and not counted.
 *
 * Prints one line per counted request to stdout: "<n> <latency ns>", or
 * "<n> -1" when no record came back within 2 s of the last send.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static int64_t now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

static char **templates;
static size_t template_count;

static void load_templates(const char *path)
{
    FILE *file = fopen(path, "r");
    if (file == NULL) { perror(path); exit(2); }
    size_t capacity = 1024;
    templates = malloc(capacity * sizeof *templates);
    char *line = NULL;
    size_t size = 0;
    ssize_t length;
    while ((length = getline(&line, &size, file)) > 0) {
        if (line[length - 1] == '\n') line[--length] = 0;
        if (length == 0 || strstr(line, "~ID~") == NULL) continue;
        if (template_count == capacity) templates = realloc(templates, (capacity *= 2) * sizeof *templates);
        templates[template_count++] = strdup(line);
    }
    free(line);
    fclose(file);
    if (template_count == 0) { fprintf(stderr, "pacer: no template line with ~ID~ in %s\n", path); exit(2); }
}

/* Builds request `id` into `out`; returns its length, newline included. */
static size_t build(char *out, size_t capacity, long id)
{
    const char *template = templates[id % template_count];
    const char *mark = strstr(template, "~ID~");
    int written = snprintf(out, capacity, "%.*s~%ld~%s\n", (int)(mark - template), template, id, mark + 4);
    if (written < 0 || (size_t)written >= capacity) { fprintf(stderr, "pacer: request too long\n"); exit(2); }
    return (size_t)written;
}

static int64_t *sent_at, *answered_at;
static long total;
static long answered;

/* Matches every complete record in `buffer`; returns bytes consumed. */
static size_t match_records(char *buffer, size_t length, int64_t stamp)
{
    size_t consumed = 0;
    char *newline;
    while ((newline = memchr(buffer + consumed, '\n', length - consumed)) != NULL) {
        char *line = buffer + consumed;
        *newline = 0;
        char *mark = strchr(line, '~');
        if (mark != NULL) {
            char *end;
            long id = strtol(mark + 1, &end, 10);
            if (end != mark + 1 && *end == '~' && id >= 0 && id < total && answered_at[id] == 0) {
                answered_at[id] = stamp;
                answered++;
            }
        }
        consumed = (size_t)(newline - buffer) + 1;
    }
    return consumed;
}

int main(int argc, char **argv)
{
    if (argc != 6) {
        fprintf(stderr, "usage: pacer FIFO REQUESTS RATE SECONDS WARMUP < records\n");
        return 2;
    }
    const char *fifo_path = argv[1];
    load_templates(argv[2]);
    double rate = atof(argv[3]);
    double seconds = atof(argv[4]);
    long warmup = atol(argv[5]);
    long counted = (long)(rate * seconds);
    total = warmup + counted;
    int64_t period = (int64_t)(1e9 / rate);
    sent_at = calloc((size_t)total, sizeof *sent_at);
    answered_at = calloc((size_t)total, sizeof *answered_at);

    int fifo = -1;
    int64_t give_up = now_ns() + 20 * (int64_t)1000000000;
    while ((fifo = open(fifo_path, O_WRONLY | O_NONBLOCK | O_CLOEXEC)) < 0) {
        if ((errno != ENOENT && errno != ENXIO) || now_ns() > give_up) { perror(fifo_path); return 2; }
        usleep(1000);
    }
    fcntl(fifo, F_SETFL, fcntl(fifo, F_GETFL) & ~O_NONBLOCK);

    static char buffer[1 << 20];
    size_t buffered = 0;
    char request[8192];
    long next = 0;
    int64_t start = now_ns();
    int64_t last_send = start;
    int input_open = 1;
    while (answered < total && input_open) {
        int64_t now = now_ns();
        if (next < total && now >= start + next * period) {
            size_t length = build(request, sizeof request, next);
            sent_at[next] = now_ns();
            if (write(fifo, request, length) != (ssize_t)length) { perror("pacer: write"); return 2; }
            last_send = sent_at[next];
            next++;
            continue;
        }
        int64_t wait;
        if (next < total) wait = start + next * period - now;
        else {
            wait = last_send + 2 * (int64_t)1000000000 - now;
            if (wait <= 0) break;
        }
        struct timespec timeout = { wait / 1000000000, wait % 1000000000 };
        struct pollfd input = { 0, POLLIN, 0 };
        int ready = ppoll(&input, 1, &timeout, NULL);
        if (ready < 0 && errno != EINTR) { perror("pacer: poll"); return 2; }
        if (ready > 0) {
            ssize_t count = read(0, buffer + buffered, sizeof buffer - buffered - 1);
            int64_t stamp = now_ns();
            if (count <= 0) { input_open = 0; continue; }
            buffered += (size_t)count;
            size_t consumed = match_records(buffer, buffered, stamp);
            memmove(buffer, buffer + consumed, buffered - consumed);
            buffered -= consumed;
            if (buffered == sizeof buffer - 1) buffered = 0; /* a giant line: drop it */
        }
    }
    close(fifo);
    long missing = 0;
    for (long id = warmup; id < total; id++) {
        if (answered_at[id] == 0) { missing++; printf("%ld -1\n", id); }
        else printf("%ld %lld\n", id, (long long)(answered_at[id] - sent_at[id]));
    }
    int64_t late = 0;
    for (long id = warmup; id < total; id++) {
        int64_t delay = sent_at[id] - (start + id * period);
        if (delay > late) late = delay;
    }
    fprintf(stderr, "pacer: sent %ld, answered %ld, missing %ld, worst send delay %.3f ms\n",
            total, answered, missing, late / 1e6);
    return 0;
}
