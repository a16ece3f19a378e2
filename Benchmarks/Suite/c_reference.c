/*
 * The C reference of the throughput benchmark: the Calculator's job done
 * directly, with only the unavoidable work. It reads stdin in 1 MiB blocks,
 * finds lines, makes one pass over each (scheme, host, action, query items,
 * decoding only the values it uses), computes lhs OP rhs, formats the result
 * as DecimalText.format does, appends `result=[LABEL=]VALUE` to the decoded
 * x-success URL (or writes `success?result=...`), and writes 64 KiB at a
 * time. Its records are byte-for-byte xcallback's on the suite's calc stream
 * (the driver checks it): what xcallback's throughput is measured against.
 *
 *   cc -O2 -o c_reference c_reference.c && c_reference < calc.txt > records.txt
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define BLOCK (1 << 20)
#define FLUSH_AT (64 * 1024)

static char output[FLUSH_AT + 8192];
static size_t output_used;

static void flush_output(void) {
    size_t done = 0;
    while (done < output_used) {
        ssize_t written = write(1, output + done, output_used - done);
        if (written <= 0) exit(1);
        done += (size_t)written;
    }
    output_used = 0;
}

static void put(const char *bytes, size_t count) {
    if (output_used + count > sizeof output) flush_output();
    if (count > sizeof output) { /* a record longer than the buffer */
        fwrite(bytes, 1, count, stdout);
        return;
    }
    memcpy(output + output_used, bytes, count);
    output_used += count;
}

static int hex(int c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
}

/* Percent-decodes [start, end) into `out` (room for end - start bytes); returns the length. */
static size_t decode(const char *start, const char *end, char *out) {
    size_t length = 0;
    while (start < end) {
        if (*start == '%' && end - start >= 3 && hex(start[1]) >= 0 && hex(start[2]) >= 0) {
            out[length++] = (char)(hex(start[1]) << 4 | hex(start[2]));
            start += 3;
        } else {
            out[length++] = *start++;
        }
    }
    return length;
}

/* Whether [start, end) is `text`, ASCII case-insensitively. */
static int same(const char *start, const char *end, const char *text) {
    size_t length = strlen(text);
    if ((size_t)(end - start) != length) return 0;
    for (size_t i = 0; i < length; i++) {
        char c = start[i];
        if (c >= 'A' && c <= 'Z') c += 32;
        if (c != text[i]) return 0;
    }
    return 1;
}

/* Appends `bytes` percent-encoded: only RFC 3986 unreserved bytes stay literal. */
static size_t encode(const char *bytes, size_t count, char *out) {
    static const char digits[] = "0123456789ABCDEF";
    size_t length = 0;
    for (size_t i = 0; i < count; i++) {
        unsigned char c = (unsigned char)bytes[i];
        if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '.' ||
            c == '_' || c == '~') {
            out[length++] = (char)c;
        } else {
            out[length++] = '%';
            out[length++] = digits[c >> 4];
            out[length++] = digits[c & 15];
        }
    }
    return length;
}

/* DecimalText.format: the shortest round-trip digits, rounded half up to 15
 * significant digits, trailing zeros dropped, rendered plainly unless very
 * large or small. */
static size_t format_decimal(double value, char *out) {
    if (isnan(value)) return (size_t)sprintf(out, "nan");
    if (isinf(value)) return (size_t)sprintf(out, value < 0 ? "-inf" : "inf");
    if (value == 0) return (size_t)sprintf(out, "0");
    double magnitude = fabs(value);
    /* The fewest digits that read back as the same double: a round trip
     * holds for every precision from the shortest up, so search for it
     * (most results need 16 or 17 digits, short decimals a few). */
    char text[40];
    int precision = 15;
    snprintf(text, sizeof text, "%.*e", precision - 1, magnitude);
    if (strtod(text, NULL) == magnitude) {
        int low = 1, high = 15;
        while (low < high) {
            int middle = (low + high) / 2;
            snprintf(text, sizeof text, "%.*e", middle - 1, magnitude);
            if (strtod(text, NULL) == magnitude) high = middle; else low = middle + 1;
        }
        precision = low;
    } else {
        for (precision = 16; precision < 17; precision++) {
            snprintf(text, sizeof text, "%.*e", precision - 1, magnitude);
            if (strtod(text, NULL) == magnitude) break;
        }
    }
    snprintf(text, sizeof text, "%.*e", precision - 1, magnitude);
    /* text is d[.ddd]e±XX: value = 0.d1d2... x 10^(XX + 1) */
    int digits[20];
    int count = 0;
    const char *cursor = text;
    for (; *cursor && *cursor != 'e'; cursor++) {
        if (*cursor != '.') digits[count++] = *cursor - '0';
    }
    int exponent = atoi(cursor + 1) + 1;
    if (count > 15) {
        int round_up = digits[15] >= 5;
        count = 15;
        if (round_up) {
            int index = count - 1;
            while (index >= 0 && digits[index] == 9) digits[index--] = 0;
            if (index >= 0) {
                digits[index]++;
            } else {
                memmove(digits + 1, digits, sizeof(int) * (size_t)count);
                digits[0] = 1;
                exponent++;
            }
        }
    }
    while (count > 1 && digits[count - 1] == 0) count--;
    size_t length = 0;
    if (value < 0) out[length++] = '-';
    if (count <= exponent && exponent <= 17) {
        for (int i = 0; i < count; i++) out[length++] = (char)('0' + digits[i]);
        for (int i = count; i < exponent; i++) out[length++] = '0';
    } else if (exponent >= 1 && exponent < count) {
        for (int i = 0; i < count; i++) {
            if (i == exponent) out[length++] = '.';
            out[length++] = (char)('0' + digits[i]);
        }
    } else if (exponent >= -5 && exponent <= 0) {
        out[length++] = '0';
        out[length++] = '.';
        for (int i = 0; i < -exponent; i++) out[length++] = '0';
        for (int i = 0; i < count; i++) out[length++] = (char)('0' + digits[i]);
    } else {
        out[length++] = (char)('0' + digits[0]);
        if (count > 1) {
            out[length++] = '.';
            for (int i = 1; i < count; i++) out[length++] = (char)('0' + digits[i]);
        }
        int power = exponent - 1;
        length += (size_t)sprintf(out + length, power < 0 ? "e-%02d" : "e+%02d", abs(power));
    }
    return length;
}

static void handle(const char *line, const char *end) {
    static const char failure[] = "error?errorCode=ParameterError\n";
    const char *colon = memchr(line, ':', (size_t)(end - line));
    if (!colon || !same(line, colon, "calc") || end - colon < 3 || colon[1] != '/' || colon[2] != '/') {
        put(failure, sizeof failure - 1);
        return;
    }
    const char *host = colon + 3;
    const char *slash = host;
    while (slash < end && *slash != '/' && *slash != '?' && *slash != '#') slash++;
    if (slash == end || *slash != '/' || !same(host, slash, "x-callback-url")) {
        put(failure, sizeof failure - 1);
        return;
    }
    const char *action = slash + 1;
    const char *query = action;
    while (query < end && *query != '?' && *query != '#') query++;
    int operation = same(action, query, "add") ? 0 : same(action, query, "subtract") ? 1
                  : same(action, query, "multiply") ? 2 : same(action, query, "divide") ? 3 : -1;
    const char *values[4] = {0}, *value_ends[4] = {0}; /* lhs, rhs, text, x-success */
    static const char *const wanted[4] = {"lhs", "rhs", "text", "x-success"};
    if (query < end && *query == '?') {
        const char *item = query + 1;
        const char *stop = item;
        while (stop < end && *stop != '#') stop++;
        while (item < stop) {
            const char *next = memchr(item, '&', (size_t)(stop - item));
            if (!next) next = stop;
            const char *equals = memchr(item, '=', (size_t)(next - item));
            const char *name_end = equals ? equals : next;
            for (int i = 0; i < 4; i++) {
                /* Names in the stream carry no escapes: compare them as they are. */
                if (!values[i] && (size_t)(name_end - item) == strlen(wanted[i]) &&
                    memcmp(item, wanted[i], strlen(wanted[i])) == 0) {
                    values[i] = equals ? equals + 1 : next;
                    value_ends[i] = next;
                }
            }
            item = next + 1;
        }
    }
    if (operation < 0 || !values[0] || !values[1]) {
        put(failure, sizeof failure - 1);
        return;
    }
    char number[64];
    double operands[2];
    for (int i = 0; i < 2; i++) {
        size_t length = (size_t)(value_ends[i] - values[i]);
        if (length >= sizeof number) { put(failure, sizeof failure - 1); return; }
        length = decode(values[i], value_ends[i], number);
        number[length] = 0;
        char *parsed_end;
        operands[i] = strtod(number, &parsed_end);
        if (parsed_end == number || *parsed_end) { put(failure, sizeof failure - 1); return; }
    }
    double result = operation == 0 ? operands[0] + operands[1] : operation == 1 ? operands[0] - operands[1]
                  : operation == 2 ? operands[0] * operands[1] : operands[0] / operands[1];
    char plain[1024];
    size_t plain_length = 0;
    if (values[2]) {
        size_t length = (size_t)(value_ends[2] - values[2]);
        if (length > 900) { put(failure, sizeof failure - 1); return; }
        plain_length = decode(values[2], value_ends[2], plain);
        plain[plain_length++] = '=';
    }
    plain_length += format_decimal(result, plain + plain_length);
    char record[8192];
    size_t used = 0;
    if (values[3]) {
        size_t length = (size_t)(value_ends[3] - values[3]);
        if (length > 4096) { put(failure, sizeof failure - 1); return; }
        char callback[4096];
        length = decode(values[3], value_ends[3], callback);
        char *fragment = memchr(callback, '#', length);
        size_t head = fragment ? (size_t)(fragment - callback) : length;
        memcpy(record, callback, head);
        used = head;
        record[used++] = memchr(callback, '?', head) ? '&' : '?';
        memcpy(record + used, "result=", 7);
        used += 7;
        used += encode(plain, plain_length, record + used);
        if (fragment) {
            memcpy(record + used, fragment, length - head);
            used += length - head;
        }
    } else {
        memcpy(record, "success?result=", 15);
        used = 15;
        used += encode(plain, plain_length, record + used);
    }
    record[used++] = '\n';
    put(record, used);
}

int main(void) {
    char *buffer = malloc(2 * BLOCK);
    size_t held = 0;
    for (;;) {
        ssize_t count = read(0, buffer + held, 2 * BLOCK - held);
        if (count < 0) return 1;
        held += (size_t)count;
        char *start = buffer;
        char *newline;
        while ((newline = memchr(start, '\n', held - (size_t)(start - buffer)))) {
            char *end = newline;
            if (end > start && end[-1] == '\r') end--;
            if (end > start) handle(start, end);
            start = newline + 1;
        }
        held -= (size_t)(start - buffer);
        memmove(buffer, start, held);
        if (count == 0) {
            if (held > 0) handle(buffer, buffer + held);
            break;
        }
        if (held == 2 * BLOCK) return 1; /* a line longer than the buffer */
    }
    flush_output();
    return 0;
}
