/*
 * The C reference of the throughput benchmark: the Calculator's job done in
 * plain C, as fast as it honestly goes. xcallback's throughput is reported
 * as a share of it, so it has to be a real floor: no printf or strtod in
 * the hot path, 1 MiB reads, writes of 64 KiB (and the record that crossed
 * it), and per line a word-at-a-time UTF-8 check and one scan that parses
 * the URL and decodes its values as it finds them.
 *
 * C17 with two GCC/Clang extensions: unsigned __int128, and the
 * __builtin_ctzll/__builtin_clzll bit scans.
 *
 *   cc -std=c17 -O2 -o c_reference c_reference.c \
 *      -L$SWIFT_LIB -lswiftCore -Wl,-rpath,$SWIFT_LIB      (SWIFT_LIB: .../lib/swift/linux)
 *   c_reference < calc.txt > records.txt
 *   c_reference --self-check [N]     compares the number code with the Swift runtime
 *
 * For every request line it writes the record `xcallback run` writes with the
 * sample plug-ins, byte for byte (the suite compares them on its calc stream
 * and on a stream of hard numbers): the Calculator's success with
 * `result=[LABEL=]VALUE`, its DivisionByZero, and the ParameterError of a
 * missing or malformed operand, at the x-success or x-error URL or as a bare
 * `success?...` / `error?...`.
 *
 * It checks everything xcallback checks before it may give such a record:
 * the line is UTF-8 without NUL, every value's escapes are well formed and
 * decode to UTF-8 without NUL, every callback URL has a scheme, the chosen
 * callback does not lead back into the host. A line that fails a check, or
 * that is not a calc request at all, has a host error record in xcallback
 * (InvalidURL, NotFound, ...) whose messages this reference does not
 * reproduce: it writes `error?errorCode=NotModelled&errorDomain=c_reference`
 * and counts it on stderr, so a comparison cannot pass by accident.
 *
 * Numbers, where glibc used to take 60 % of the time:
 *  - Operands: Clinger's fast path (at most 19 significant digits, a value
 *    below 2^53 and a power of ten up to 10^22 are exact doubles, so one
 *    IEEE multiplication or division rounds correctly), strtod otherwise.
 *    Both give the correctly rounded double, as Swift's Double(String) does.
 *  - Results: DecimalText.format rounds the *shortest round-trip digits*
 *    (Swift's `description`) half up to 15 significant digits. Those digits
 *    are computed exactly with 128-bit integers for 1e-6 <= |x| < 2^53 (every
 *    result of the suite's streams) and taken from the Swift runtime for the
 *    rest and for the rare values where the integer method would have to
 *    know the runtime's conventions (a candidate exactly on the rounding
 *    boundary, or two equally close candidates). The runtime entry is
 *    swift_float64ToString, which Swift 6.3 implements by calling
 *    _Float64ToASCII, the very function `Double.description` calls
 *    (`swift_dtoa_optimal_double` is no longer exported). Why not call it
 *    always: it writes text that has to be parsed back into digits, which
 *    takes about twice as long as the integer method; why not implement its
 *    algorithm (a Grisu variant with tables): the integer method is exact
 *    by construction and short, and `--self-check` holds it to the runtime.
 */
#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define BLOCK (1 << 20)             /* bytes per read(2) */
#define FLUSH_AT (64 * 1024)        /* bytes per write(2) */
#define MAX_LINE 65536              /* xcallback's default --max-line-bytes */
/* A record is at most the line's bytes three times over (escaped callback
 * and label) plus a message: room for the largest after FLUSH_AT. */
#define OUTPUT_SIZE (FLUSH_AT + 8 * MAX_LINE)

__extension__ typedef unsigned __int128 u128;

#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "the eight-bytes-at-a-time scans take the first byte of a word as its lowest"
#endif

/* Eight bytes at a time: a word's lowest flagged byte is exactly the first
 * byte that matches (flags above it may be false, they are never used). */
static const uint64_t ones = 0x0101010101010101u, highs = 0x8080808080808080u;

static uint64_t load_word(const char *bytes) {
    uint64_t word;
    memcpy(&word, bytes, sizeof word);
    return word;
}

static uint64_t zero_bytes(uint64_t word) { return (word - ones) & ~word & highs; }

static uint64_t bytes_equal(uint64_t word, unsigned char c) { return zero_bytes(word ^ (ones * c)); }

/* Bytes greater than `low` and less than `high` (both at most 128), each
 * byte computed on its own: no borrow or carry crosses bytes, so every
 * flag is exact. */
static uint64_t bytes_between(uint64_t word, unsigned char low, unsigned char high) {
    uint64_t seven_bits = word & (ones * 127);
    return (ones * (127u + high) - seven_bits) & ~word & (seven_bits + ones * (127u - low)) & highs;
}

static size_t first_flagged(uint64_t flags) { return (size_t)__builtin_ctzll(flags) / 8; }

/* The first of the bytes a, b, c in [p, end), or end. */
static const char *find_any(const char *p, const char *end, char a, char b, char c) {
    for (; end - p >= 8; p += 8) {
        uint64_t word = load_word(p);
        uint64_t flags = bytes_equal(word, (unsigned char)a) | bytes_equal(word, (unsigned char)b) |
                         bytes_equal(word, (unsigned char)c);
        if (flags) return p + first_flagged(flags);
    }
    while (p < end && *p != a && *p != b && *p != c) p++;
    return p;
}

/* Declared in Swift with @_silgen_name, that is the Swift calling convention;
 * for these argument and result types it passes them as the C one does on
 * x86-64 and arm64. Writes Double.description's text, returns its length. */
extern uint64_t swift_float64ToString(char *buffer, size_t length, double value, bool debug);

/* ------------------------------------------------------------------------ */
/* Output                                                                   */
/* ------------------------------------------------------------------------ */

static char output[OUTPUT_SIZE];
static size_t output_used;
static unsigned long not_modelled;

static void flush_output(void) {
    size_t done = 0;
    while (done < output_used) {
        ssize_t written = write(1, output + done, output_used - done);
        if (written <= 0) exit(1);
        done += (size_t)written;
    }
    output_used = 0;
}

/* Records are composed in place at the end of the buffer: no copy. */
static char *record_start(void) { return output + output_used; }

static void record_end(char *end) {
    *end++ = '\n';
    output_used = (size_t)(end - output);
    if (output_used >= FLUSH_AT) flush_output();
}

static void put_not_modelled(void) {
    static const char record[] = "error?errorCode=NotModelled&errorDomain=c_reference";
    char *o = record_start();
    memcpy(o, record, sizeof record - 1);
    record_end(o + sizeof record - 1);
    not_modelled++;
}

static const char hex_digits[] = "0123456789ABCDEF";

/* RFC 3986 unreserved bytes, the only ones xcallback writes literally in a value. */
static const bool unreserved[256] = {
    ['-'] = 1, ['.'] = 1, ['_'] = 1, ['~'] = 1,
    ['0'] = 1, ['1'] = 1, ['2'] = 1, ['3'] = 1, ['4'] = 1, ['5'] = 1, ['6'] = 1, ['7'] = 1, ['8'] = 1, ['9'] = 1,
    ['A'] = 1, ['B'] = 1, ['C'] = 1, ['D'] = 1, ['E'] = 1, ['F'] = 1, ['G'] = 1, ['H'] = 1, ['I'] = 1, ['J'] = 1,
    ['K'] = 1, ['L'] = 1, ['M'] = 1, ['N'] = 1, ['O'] = 1, ['P'] = 1, ['Q'] = 1, ['R'] = 1, ['S'] = 1, ['T'] = 1,
    ['U'] = 1, ['V'] = 1, ['W'] = 1, ['X'] = 1, ['Y'] = 1, ['Z'] = 1,
    ['a'] = 1, ['b'] = 1, ['c'] = 1, ['d'] = 1, ['e'] = 1, ['f'] = 1, ['g'] = 1, ['h'] = 1, ['i'] = 1, ['j'] = 1,
    ['k'] = 1, ['l'] = 1, ['m'] = 1, ['n'] = 1, ['o'] = 1, ['p'] = 1, ['q'] = 1, ['r'] = 1, ['s'] = 1, ['t'] = 1,
    ['u'] = 1, ['v'] = 1, ['w'] = 1, ['x'] = 1, ['y'] = 1, ['z'] = 1,
};

static char *put_bytes(char *o, const char *bytes, size_t count) {
    memcpy(o, bytes, count);
    return o + count;
}

static char *put_escaped_byte(char *o, unsigned char c) {
    o[0] = '%';
    o[1] = hex_digits[c >> 4];
    o[2] = hex_digits[c & 15];
    return o + 3;
}

/* A value as xcallback encodes it: everything but unreserved bytes escaped. */
static char *put_encoded(char *o, const char *bytes, size_t count) {
    for (size_t i = 0; i < count; i++) {
        unsigned char c = (unsigned char)bytes[i];
        if (unreserved[c]) *o++ = (char)c;
        else o = put_escaped_byte(o, c);
    }
    return o;
}

/* A callback URL came from input decoded: its control bytes are escaped so
 * that a record stays one line; everything else is copied. */
static char *put_line_safe(char *o, const char *bytes, size_t count) {
    size_t i = 0;
    for (; i + 8 <= count; i += 8) {
        uint64_t word = load_word(bytes + i);
        /* bytes below 0x20 (the subtraction borrows) or equal to 0x7F */
        if (((word - ones * 0x20) & ~word & highs) | bytes_equal(word, 0x7F)) break;
        memcpy(o, &word, sizeof word);
        o += 8;
    }
    for (; i < count; i++) {
        unsigned char c = (unsigned char)bytes[i];
        if (c < 0x20 || c == 0x7F) o = put_escaped_byte(o, c);
        else *o++ = (char)c;
    }
    return o;
}

/* The part of a record before its parameters: the callback URL up to its
 * fragment and the separator xcallback chooses (none after an empty query
 * or a trailing '&'), or `word?` without a callback. The fragment, if any,
 * is left in *tail for record_close. */
static char *record_open(char *o, const char *callback, size_t length, const char *word, size_t word_length,
                         const char **tail, size_t *tail_length) {
    *tail_length = 0;
    if (!callback) {
        o = put_bytes(o, word, word_length);
        *o++ = '?';
        return o;
    }
    const char *hash = memchr(callback, '#', length);
    size_t fragment = hash ? (size_t)(hash - callback) : length;
    const char *question = memchr(callback, '?', fragment);
    o = put_line_safe(o, callback, fragment);
    if (!question) {
        *o++ = '?';
    } else if (question != callback + fragment - 1 && callback[fragment - 1] != '&') {
        *o++ = '&';
    }
    *tail = callback + fragment;
    *tail_length = length - fragment;
    return o;
}

static char *record_close(char *o, const char *tail, size_t tail_length) {
    return put_line_safe(o, tail, tail_length);
}

/* ------------------------------------------------------------------------ */
/* Checking and decoding input                                              */
/* ------------------------------------------------------------------------ */

/* Whether bytes[0..count) is well-formed UTF-8 (no overlong forms, no
 * surrogates, nothing past U+10FFFF), as xcallback's UTF8Validation. */
static bool is_utf8(const unsigned char *bytes, size_t count) {
    size_t i = 0;
    while (i < count) {
        unsigned char lead = bytes[i];
        if (lead < 0x80) {
            i++;
            continue;
        }
        size_t length;
        unsigned char low = 0x80, high = 0xBF;
        if (lead >= 0xC2 && lead <= 0xDF) length = 2;
        else if (lead == 0xE0) length = 3, low = 0xA0;
        else if ((lead >= 0xE1 && lead <= 0xEC) || lead == 0xEE || lead == 0xEF) length = 3;
        else if (lead == 0xED) length = 3, high = 0x9F;
        else if (lead == 0xF0) length = 4, low = 0x90;
        else if (lead >= 0xF1 && lead <= 0xF3) length = 4;
        else if (lead == 0xF4) length = 4, high = 0x8F;
        else return false;
        if (count - i < length) return false;
        if (bytes[i + 1] < low || bytes[i + 1] > high) return false;
        for (size_t k = 2; k < length; k++) {
            if ((bytes[i + k] & 0xC0) != 0x80) return false;
        }
        i += length;
    }
    return true;
}

/* A request line must be UTF-8 without NUL. Lines are nearly always ASCII:
 * eight bytes at a time until a word has a NUL or a high bit. */
static bool is_valid_line(const char *line, size_t count) {
    size_t i = 0;
    for (;;) {
        while (i + 8 <= count) {
            uint64_t word = load_word(line + i);
            if ((zero_bytes(word) | word) & highs) break;
            i += 8;
        }
        if (i >= count) return true;
        unsigned char c = (unsigned char)line[i];
        if (c == 0) return false;
        if (c < 0x80) {
            i++;
            continue;
        }
        /* One sequence: its lead and continuation bytes. */
        size_t end = i + 1;
        while (end < count && end < i + 4 && ((unsigned char)line[end] & 0xC0) == 0x80) end++;
        if (!is_utf8((const unsigned char *)line + i, end - i)) return false;
        i = end;
    }
}

/* One more than each hex digit's value, 0 for other bytes. */
static const unsigned char hex_values[256] = {
    ['0'] = 1, ['1'] = 2, ['2'] = 3, ['3'] = 4, ['4'] = 5, ['5'] = 6, ['6'] = 7, ['7'] = 8, ['8'] = 9, ['9'] = 10,
    ['A'] = 11, ['B'] = 12, ['C'] = 13, ['D'] = 14, ['E'] = 15, ['F'] = 16,
    ['a'] = 11, ['b'] = 12, ['c'] = 13, ['d'] = 14, ['e'] = 15, ['f'] = 16,
};

/* The byte "%XX" at `escape` stands for, or -1 when either X is no hex digit. */
static int escaped_byte(const char *escape) {
    unsigned high = hex_values[(unsigned char)escape[1]], low = hex_values[(unsigned char)escape[2]];
    if (!high || !low) return -1;
    return (int)((high - 1) << 4 | (low - 1));
}

/* Percent-decodes [start, end) into out; -1 where xcallback refuses it
 * (a '%' without two hex digits, an escaped NUL, decoded bytes that are
 * not UTF-8). For the rare escaped host, path or name; values, where
 * escapes are common, go through decode_value. */
static ptrdiff_t decode(const char *start, const char *end, char *out) {
    char *o = out;
    unsigned char high_bits = 0;
    for (;;) {
        const char *percent = memchr(start, '%', (size_t)(end - start));
        if (!percent) {
            o = put_bytes(o, start, (size_t)(end - start));
            break;
        }
        o = put_bytes(o, start, (size_t)(percent - start));
        int value = end - percent < 3 ? -1 : escaped_byte(percent);
        if (value <= 0) return -1; /* malformed, or an escaped NUL */
        unsigned char c = (unsigned char)value;
        high_bits |= c;
        *o++ = (char)c;
        start = percent + 3;
    }
    /* The line is UTF-8, so only escaped bytes can break it. */
    if (high_bits >= 0x80 && !is_utf8((const unsigned char *)out, (size_t)(o - out))) return -1;
    return o - out;
}

/* Copies the bytes from p up to the next '%', '&' or '#' (or end) to *out,
 * a word at a time (out has room for the word past the run); returns
 * where the run stopped. */
static const char *copy_literal_run(const char *p, const char *end, char **out) {
    char *o = *out;
    while (end - p >= 8) {
        uint64_t word = load_word(p);
        /* '#' 0x23, '%' 0x25 and '&' 0x26 in one range test, with '$' 0x24. */
        uint64_t flags = bytes_between(word, '#' - 1, '&' + 1);
        memcpy(o, &word, sizeof word);
        size_t literal = flags ? first_flagged(flags) : 8;
        p += literal;
        o += literal;
        if (literal == 8) continue;
        if (*p != '$') {
            *out = o;
            return p;
        }
        *o++ = *p++;
    }
    while (p < end && *p != '%' && *p != '&' && *p != '#') *o++ = *p++;
    *out = o;
    return p;
}

/* Decodes the value at `start` up to the '&' or '#' that ends it (or
 * `end`) into out, which has 8 bytes of room past the decoded length.
 * Sets *stop to the value's end. Returns the decoded length, or -1 where
 * xcallback refuses the value (as decode does). */
static ptrdiff_t decode_value(const char *start, const char *end, char *out, const char **stop) {
    const char *p = start;
    char *o = out;
    unsigned char high_bits = 0;
    for (;;) {
        p = copy_literal_run(p, end, &o);
        if (p == end || *p != '%') break;
        /* Escapes come in runs ("%3A%2F%2F"): no word scan between them. */
        do {
            /* Both hex digits must be inside the value: '&' and '#' are not hex. */
            int value = end - p < 3 ? -1 : escaped_byte(p);
            if (value <= 0) return -1; /* malformed, or an escaped NUL */
            high_bits |= (unsigned char)value;
            *o++ = (char)value;
            p += 3;
        } while (p < end && *p == '%');
    }
    *stop = p;
    if (high_bits >= 0x80 && !is_utf8((const unsigned char *)out, (size_t)(o - out))) return -1;
    return o - out;
}

/* Whether [start, end) is `text` (lowercase), ASCII case-insensitively. */
static bool same_folded(const char *start, size_t length, const char *text, size_t text_length) {
    if (length != text_length) return false;
    for (size_t i = 0; i < length; i++) {
        unsigned char c = (unsigned char)start[i];
        if (c >= 'A' && c <= 'Z') c |= 0x20;
        if (c != (unsigned char)text[i]) return false;
    }
    return true;
}

static bool same(const char *start, size_t length, const char *text, size_t text_length) {
    return length == text_length && memcmp(start, text, length) == 0;
}

/* RFC 3986: ALPHA *( ALPHA / DIGIT / "+" / "-" / "." ) ":" , as Dispatcher.hasScheme. */
static bool has_scheme(const char *url, size_t length) {
    bool letter = false;
    for (size_t i = 0; i < length; i++) {
        unsigned char c = (unsigned char)url[i];
        if ((c | 0x20) >= 'a' && (c | 0x20) <= 'z') letter = true;
        else if ((c >= '0' && c <= '9') || c == '+' || c == '-' || c == '.') {
            if (!letter) return false;
        } else {
            return c == ':' && letter;
        }
    }
    return false;
}

/* A callback into one of the host's own schemes is run as the next request
 * (a chain), not written: these are the schemes the sample plug-ins route. */
static bool is_routed_scheme(const char *url, size_t length) {
    const char *colon = memchr(url, ':', length);
    if (!colon) return false;
    size_t n = (size_t)(colon - url);
    switch (n) {
    case 4: return same_folded(url, n, "calc", 4) || same_folded(url, n, "math", 4);
    case 5: return same_folded(url, n, "myapp", 5);
    case 6: return same_folded(url, n, "faulty", 6);
    case 7: return same_folded(url, n, "pokedex", 7);
    default: return false;
    }
}

/* ------------------------------------------------------------------------ */
/* Operands                                                                 */
/* ------------------------------------------------------------------------ */

static bool is_digit(char c) { return c >= '0' && c <= '9'; }

static const double exact_powers[23] = {
    1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11,
    1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22,
};

static char slow_text[MAX_LINE + 1];

/* Double(parameterValue:): `[+-]? digits [. digits] [(e|E) [+-]? digits]`
 * with a digit before the exponent, and finite. False where it is nil. */
static bool parse_decimal(const char *text, size_t length, double *value) {
    size_t i = 0;
    bool negative = false;
    if (i < length && (text[i] == '+' || text[i] == '-')) negative = text[i++] == '-';
    uint64_t significand = 0;
    int kept = 0, digits = 0, scale = 0;
    bool exact = true;
    for (; i < length && is_digit(text[i]); i++, digits++) {
        if (significand == 0 && text[i] == '0') continue;
        if (kept == 19) { exact = false; continue; }
        significand = significand * 10 + (uint64_t)(text[i] - '0');
        kept++;
    }
    if (i < length && text[i] == '.') {
        for (i++; i < length && is_digit(text[i]); i++, digits++) {
            if (significand == 0 && text[i] == '0') { scale--; continue; }
            if (kept == 19) { exact = false; continue; }
            significand = significand * 10 + (uint64_t)(text[i] - '0');
            kept++;
            scale--;
        }
    }
    if (digits == 0) return false;
    if (i < length && (text[i] == 'e' || text[i] == 'E')) {
        i++;
        bool negative_exponent = false;
        if (i < length && (text[i] == '+' || text[i] == '-')) negative_exponent = text[i++] == '-';
        int exponent = 0, exponent_digits = 0;
        for (; i < length && is_digit(text[i]); i++, exponent_digits++) {
            if (exponent < 100000) exponent = exponent * 10 + (text[i] - '0');
        }
        if (exponent_digits == 0) return false;
        scale += negative_exponent ? -exponent : exponent;
    }
    if (i != length) return false;
    double result;
    if (significand == 0) {
        result = 0;
    } else if (exact && significand <= (1ull << 53) && scale >= -22 && scale <= 22) {
        /* Both factors are exact, so the one rounding is the correct one. */
        result = (double)significand;
        result = scale >= 0 ? result * exact_powers[scale] : result / exact_powers[-scale];
    } else {
        /* Many digits or a far exponent: rare, and strtod rounds correctly. */
        memcpy(slow_text, text, length);
        slow_text[length] = 0;
        result = fabs(strtod(slow_text, NULL));
    }
    if (!isfinite(result)) return false;
    *value = negative ? -result : result;
    return true;
}

/* ------------------------------------------------------------------------ */
/* Results: DecimalText.format                                              */
/* ------------------------------------------------------------------------ */

static const uint64_t powers_of_ten[20] = {
    1u, 10u, 100u, 1000u, 10000u, 100000u, 1000000u, 10000000u, 100000000u, 1000000000u,
    10000000000u, 100000000000u, 1000000000000u, 10000000000000u, 100000000000000u,
    1000000000000000u, 10000000000000000u, 100000000000000000u, 1000000000000000000u,
    10000000000000000000u,
};

static u128 power_of_ten(int exponent) {
    return exponent < 20 ? (u128)powers_of_ten[exponent] : (u128)powers_of_ten[19] * powers_of_ten[exponent - 19];
}

/* Decimal digits of n > 0: log10 from the bit length (1233 / 4096 is just
 * over log10 2), corrected by one comparison. */
static int digit_count(uint64_t n) {
    int estimate = (64 - __builtin_clzll(n)) * 1233 >> 12;
    return estimate - (n < powers_of_ten[estimate]) + 1;
}

/* Decimal digits d1…dn (no trailing zeros) standing for 0.d1…dn × 10^point. */
struct decimal {
    uint64_t digits;
    int count;
    int point;
};

static struct decimal make_decimal(uint64_t digits, int scale) { /* digits × 10^scale, digits > 0 */
    while (digits % 10 == 0) {
        digits /= 10;
        scale++;
    }
    int count = digit_count(digits);
    return (struct decimal){digits, count, count + scale};
}

/* Of the two multiples of `step` around z (z = T + fraction, the fraction
 * as `twice_fraction` in units of 2^-shift), the one in the rounding
 * interval, closer to z: 1 and *chosen; 0 if neither is in it; -1 when it
 * is the runtime's call (one exactly on the interval's edge, or a tie). */
static inline int nearest_inside(uint64_t t, u128 twice_fraction, int shift, uint64_t step, u128 above, u128 below,
                          uint64_t *chosen) {
    uint64_t low = t - t % step;
    u128 to_low = ((u128)(t % step) << shift) + twice_fraction;
    u128 to_high = ((u128)step << shift) - to_low;
    if (to_low == below || to_high == above) return -1;
    bool low_inside = to_low < below, high_inside = to_high < above;
    if (low_inside && high_inside) {
        if (to_low == to_high) return -1;
        *chosen = to_low < to_high ? low : low + step;
        return 1;
    }
    if (low_inside || high_inside) {
        *chosen = low_inside ? low : low + step;
        return 1;
    }
    return 0;
}

/* The shortest digits that read back as `value` (positive, finite), the
 * closest to it among those, computed exactly: value = m × 2^-s and
 * z = value × 10^k = m × 10^k / 2^s in [10^16, 10^17), so an integer
 * near z with 17, 16 or 15 significant digits stands for a decimal of as
 * many digits, and it reads back as `value` when it lies within half an
 * ulp, 10^k / 2^(s+1) in z's units. Everything fits 128 bits when
 * 0 <= s and k <= 22, that is 1e-6 <= value < 2^53. False outside that,
 * and in the cases nearest_inside leaves to the runtime. */
static bool shortest_exact(double value, struct decimal *result) {
    uint64_t bits;
    memcpy(&bits, &value, sizeof bits);
    int biased = (int)(bits >> 52);
    uint64_t fraction = bits & ((1ull << 52) - 1);
    if (biased == 0 || biased > 1075) return false;
    uint64_t m = fraction | 1ull << 52;
    int s = 1075 - biased;
    int binary = 52 - s; /* floor(log2(value)) */
    /* floor(binary × log10(2)), the decimal exponent or one less */
    int64_t scaled = (int64_t)binary * 78913;
    int decimal = (int)(scaled >= 0 ? scaled >> 18 : -((-scaled + (1 << 18) - 1) >> 18));
    int k = 16 - decimal;
    if (k > 22) return false;
    u128 p = (u128)m * power_of_ten(k);
    uint64_t t = (uint64_t)(p >> s);
    if (t >= powers_of_ten[17]) {
        k--;
        p = (u128)m * power_of_ten(k);
        t = (uint64_t)(p >> s);
    }
    u128 twice_fraction = (p & (((u128)1 << s) - 1)) << 1;
    int shift = s + 1;
    u128 above = power_of_ten(k);
    /* Below a power of two the next double is half as far. */
    u128 below = fraction == 0 && biased > 1 ? above / 2 : above;
    /* 15 digits, else 16, else 17: the steps are constants, so that `t % step`
     * is no division instruction. */
    uint64_t chosen;
    int found = nearest_inside(t, twice_fraction, shift, 100, above, below, &chosen);
    if (found == 0) found = nearest_inside(t, twice_fraction, shift, 10, above, below, &chosen);
    if (found == 0) found = nearest_inside(t, twice_fraction, shift, 1, above, below, &chosen);
    if (found <= 0) return false; /* the nearest 17-digit integer is always inside: 0 is not reached */
    *result = make_decimal(chosen, -k);
    return true;
}

/* The same digits from the Swift runtime: "1.5", "0.001", "1e-07",
 * "1.2345e+20", "123.0". */
static struct decimal shortest_from_runtime(double value) {
    /* The 6.3 runtime's entry leaves the digits it skips as they were in
     * the buffer, trusting them to be '0' (description's own buffer is). */
    char text[40];
    memset(text, '0', sizeof text);
    size_t length = (size_t)swift_float64ToString(text, sizeof text, value, false);
    uint64_t digits = 0;
    int count = 0, point = 0, exponent = 0;
    bool after_point = false;
    for (size_t i = 0; i < length; i++) {
        char c = text[i];
        if (c == '.') {
            after_point = true;
        } else if (c == 'e') {
            bool negative = text[i + 1] == '-';
            for (i += 2; i < length; i++) exponent = exponent * 10 + (text[i] - '0');
            if (negative) exponent = -exponent;
            break;
        } else if (c >= '0' && c <= '9') {
            if (digits == 0 && c == '0') {
                if (after_point) point--;
                continue;
            }
            digits = digits * 10 + (uint64_t)(c - '0');
            count++;
            if (!after_point) point++;
        }
    }
    /* digits × 10^(point - count) × 10^exponent */
    return make_decimal(digits, point - count + exponent);
}

static struct decimal shortest_digits(double value) {
    struct decimal result;
    if (shortest_exact(value, &result)) return result;
    return shortest_from_runtime(value);
}

/* DecimalText.format: the shortest digits rounded half up (on the 16th
 * digit alone) to 15, without trailing zeros, then written plainly unless
 * the point is far outside them. */
static char *put_decimal(char *o, double value) {
    if (isnan(value)) return put_bytes(o, "nan", 3);
    if (isinf(value)) return value < 0 ? put_bytes(o, "-inf", 4) : put_bytes(o, "inf", 3);
    if (value == 0) {
        *o++ = '0';
        return o;
    }
    if (value < 0) *o++ = '-';
    struct decimal d = shortest_digits(fabs(value));
    if (d.count > 15) {
        int cut = d.count - 15;
        uint64_t rounded = d.digits / powers_of_ten[cut];
        if (d.digits / powers_of_ten[cut - 1] % 10 >= 5) rounded++;
        /* 15 digits stand for digits × 10^(point - 15); a carry to 10^15
         * comes out as "1" one place further left. */
        d = make_decimal(rounded, d.point - 15);
    }
    char digits[20];
    for (int i = d.count - 1; i >= 0; i--) {
        digits[i] = (char)('0' + d.digits % 10);
        d.digits /= 10;
    }
    int count = d.count, point = d.point;
    if (point >= count && point <= 17) {
        o = put_bytes(o, digits, (size_t)count);
        for (int i = count; i < point; i++) *o++ = '0';
    } else if (point >= 1 && point < count) {
        o = put_bytes(o, digits, (size_t)point);
        *o++ = '.';
        o = put_bytes(o, digits + point, (size_t)(count - point));
    } else if (point >= -5 && point <= 0) {
        *o++ = '0';
        *o++ = '.';
        for (int i = 0; i < -point; i++) *o++ = '0';
        o = put_bytes(o, digits, (size_t)count);
    } else {
        *o++ = digits[0];
        if (count > 1) {
            *o++ = '.';
            o = put_bytes(o, digits + 1, (size_t)(count - 1));
        }
        int power = point - 1;
        *o++ = 'e';
        *o++ = power < 0 ? '-' : '+';
        if (power < 0) power = -power;
        if (power >= 100) *o++ = (char)('0' + power / 100);
        *o++ = (char)('0' + power / 10 % 10);
        *o++ = (char)('0' + power % 10);
    }
    return o;
}

/* ------------------------------------------------------------------------ */
/* Requests                                                                 */
/* ------------------------------------------------------------------------ */

enum operation { ADD, SUBTRACT, MULTIPLY, DIVIDE };

struct text {
    const char *bytes; /* NULL: absent */
    size_t length;
};

struct request {
    enum operation operation;
    struct text lhs, rhs, label, success, error, cancel;
};

/* Decoded names and values of one line: they are never longer than it. */
static char scratch[MAX_LINE + 64];

static void keep_first(struct text *field, const char *bytes, size_t length) {
    if (!field->bytes) *field = (struct text){bytes, length};
}

/* Parses a calc request the way xcallback does (scheme and host in any
 * case, escapes anywhere, empty path segments dropped, the first of
 * repeated parameters, every value decoded and checked). False for a
 * line whose record is not the Calculator's. */
static bool parse_request(const char *line, size_t length, struct request *request) {
    if (length > MAX_LINE || !is_valid_line(line, length)) return false;
    const char *end = line + length;
    if (length < 7 || line[4] != ':' || !same_folded(line, 4, "calc", 4)) return false;
    const char *cursor = line + 5;
    if (cursor[0] != '/' || cursor[1] != '/') return false;
    cursor += 2;
    const char *host = cursor;
    cursor = find_any(cursor, end, '/', '?', '#');
    char *free_space = scratch;
    if (!same_folded(host, (size_t)(cursor - host), "x-callback-url", 14)) {
        ptrdiff_t decoded = decode(host, cursor, free_space);
        if (decoded < 0 || !same_folded(free_space, (size_t)decoded, "x-callback-url", 14)) return false;
    }

    /* The Calculator's routes are one literal segment each. */
    const char *action = NULL;
    ptrdiff_t action_length = 0;
    int segments = 0;
    while (cursor < end && *cursor != '?' && *cursor != '#') {
        if (*cursor == '/') {
            cursor++;
            continue;
        }
        const char *start = cursor;
        cursor = find_any(cursor, end, '/', '?', '#');
        if (++segments > 1) return false;
        action = start;
        action_length = cursor - start;
        if (memchr(start, '%', (size_t)action_length)) {
            action_length = decode(start, cursor, free_space);
            if (action_length < 0) return false;
            action = free_space;
        }
    }
    if (segments != 1) return false;
    size_t n = (size_t)action_length;
    if (same(action, n, "add", 3)) request->operation = ADD;
    else if (same(action, n, "subtract", 8)) request->operation = SUBTRACT;
    else if (same(action, n, "multiply", 8)) request->operation = MULTIPLY;
    else if (same(action, n, "divide", 6)) request->operation = DIVIDE;
    else return false;

    request->lhs = request->rhs = request->label = (struct text){NULL, 0};
    request->success = request->error = request->cancel = (struct text){NULL, 0};
    if (cursor < end && *cursor == '?') {
        /* One scan: a piece's name runs to its first '=', its value to the
         * '&' or '#' after it, and is decoded on the way. */
        const char *piece = cursor + 1;
        for (;;) {
            const char *name = piece, *stop = find_any(piece, end, '=', '&', '#');
            size_t name_length = (size_t)(stop - name);
            bool escaped_name = memchr(name, '%', name_length) != NULL;
            const char *value = free_space;
            size_t value_length = 0;
            if (stop < end && *stop == '=') {
                ptrdiff_t decoded = decode_value(stop + 1, end, free_space, &stop);
                if (decoded < 0) return false;
                value_length = (size_t)decoded;
                free_space += decoded;
            }
            if (escaped_name) {
                ptrdiff_t decoded = decode(name, name + name_length, free_space);
                if (decoded < 0) return false;
                name = free_space;
                name_length = (size_t)decoded;
                free_space += decoded;
            }
            switch (name_length) {
            case 3:
                if (memcmp(name, "lhs", 3) == 0) keep_first(&request->lhs, value, value_length);
                else if (memcmp(name, "rhs", 3) == 0) keep_first(&request->rhs, value, value_length);
                break;
            case 4:
                if (memcmp(name, "text", 4) == 0) keep_first(&request->label, value, value_length);
                break;
            case 7:
                if (memcmp(name, "x-error", 7) == 0) keep_first(&request->error, value, value_length);
                break;
            case 8:
                if (memcmp(name, "x-cancel", 8) == 0) keep_first(&request->cancel, value, value_length);
                break;
            case 9:
                if (memcmp(name, "x-success", 9) == 0) keep_first(&request->success, value, value_length);
                break;
            }
            if (stop == end || *stop == '#') break;
            piece = stop + 1;
        }
    }
    /* xcallback refuses up front a callback it could never open. */
    const struct text *callbacks[3] = {&request->success, &request->error, &request->cancel};
    for (int i = 0; i < 3; i++) {
        if (callbacks[i]->bytes && !has_scheme(callbacks[i]->bytes, callbacks[i]->length)) return false;
    }
    return true;
}

static void put_success(const struct request *request, double result) {
    if (request->success.bytes && is_routed_scheme(request->success.bytes, request->success.length)) {
        put_not_modelled();
        return;
    }
    const char *tail = NULL;
    size_t tail_length;
    char *o = record_open(record_start(), request->success.bytes, request->success.length, "success", 7, &tail,
                          &tail_length);
    o = put_bytes(o, "result=", 7);
    if (request->label.bytes) {
        o = put_encoded(o, request->label.bytes, request->label.length);
        o = put_bytes(o, "%3D", 3);
    }
    char number[48];
    o = put_encoded(o, number, (size_t)(put_decimal(number, result) - number));
    record_end(record_close(o, tail, tail_length));
}

static void put_error(const struct request *request, const char *code, const char *message, size_t message_length,
                      const char *domain) {
    if (request->error.bytes && is_routed_scheme(request->error.bytes, request->error.length)) {
        put_not_modelled();
        return;
    }
    const char *tail = NULL;
    size_t tail_length;
    char *o = record_open(record_start(), request->error.bytes, request->error.length, "error", 5, &tail,
                          &tail_length);
    o = put_bytes(o, "errorCode=", 10);
    o = put_bytes(o, code, strlen(code));
    o = put_bytes(o, "&errorMessage=", 14);
    o = put_encoded(o, message, message_length);
    o = put_bytes(o, "&errorDomain=", 13);
    o = put_bytes(o, domain, strlen(domain));
    record_end(record_close(o, tail, tail_length));
}

/* ParameterError's message. A value is shortened to 80 characters
 * (grapheme clusters): exactly its bytes when it is ASCII without CR
 * (CR LF is one cluster); other long values are not modelled. */
static void put_parameter_error(const struct request *request, const char *name, const struct text *value) {
    char message[256];
    int length;
    if (!value->bytes) {
        length = snprintf(message, sizeof message, "missing required parameter '%s'", name);
    } else {
        size_t shown = value->length;
        const char *ellipsis = "";
        if (shown > 80) {
            for (size_t i = 0; i < shown; i++) {
                unsigned char c = (unsigned char)value->bytes[i];
                if (c >= 0x80 || c == '\r') {
                    put_not_modelled();
                    return;
                }
            }
            shown = 80;
            ellipsis = "\xE2\x80\xA6";
        }
        length = snprintf(message, sizeof message, "parameter '%s' must be a decimal number, got '%.*s%s'", name,
                          (int)shown, value->bytes, ellipsis);
    }
    put_error(request, "ParameterError", message, (size_t)length, "calculator");
}

/* The Calculator: divide reads rhs first and refuses zero before anything
 * else; then lhs, rhs and the optional label, in that order. */
static void handle_request(const char *line, size_t length) {
    struct request request;
    if (!parse_request(line, length, &request)) {
        put_not_modelled();
        return;
    }
    double lhs, rhs;
    if (request.operation == DIVIDE) {
        if (!request.rhs.bytes || !parse_decimal(request.rhs.bytes, request.rhs.length, &rhs)) {
            put_parameter_error(&request, "rhs", &request.rhs);
            return;
        }
        if (rhs == 0) {
            static const char message[] = "cannot divide by zero";
            put_error(&request, "DivisionByZero", message, sizeof message - 1, "calc");
            return;
        }
    }
    if (!request.lhs.bytes || !parse_decimal(request.lhs.bytes, request.lhs.length, &lhs)) {
        put_parameter_error(&request, "lhs", &request.lhs);
        return;
    }
    if (!request.rhs.bytes || !parse_decimal(request.rhs.bytes, request.rhs.length, &rhs)) {
        put_parameter_error(&request, "rhs", &request.rhs);
        return;
    }
    double result;
    switch (request.operation) {
    case ADD: result = lhs + rhs; break;
    case SUBTRACT: result = lhs - rhs; break;
    case MULTIPLY: result = lhs * rhs; break;
    default: result = lhs / rhs; break;
    }
    put_success(&request, result);
}

static bool is_space(char c) { return c == ' ' || (c >= '\t' && c <= '\r'); }

/* As xcallback's reader: CR LF ends a line too, blanks around it do not
 * count, blank lines and `#` comments are skipped. */
static void handle_line(const char *start, const char *end) {
    if (end > start && end[-1] == '\r') end--;
    size_t raw_length = (size_t)(end - start);
    while (start < end && is_space(*start)) start++;
    while (end > start && is_space(end[-1])) end--;
    if (start == end || *start == '#') return;
    if (raw_length > MAX_LINE) {
        put_not_modelled();
        return;
    }
    handle_request(start, (size_t)(end - start));
}

/* ------------------------------------------------------------------------ */
/* --self-check: the number code against the Swift runtime and strtod       */
/* ------------------------------------------------------------------------ */

static uint64_t random_state = 0x5EED;

static uint64_t random_next(void) { /* xorshift64* */
    random_state ^= random_state >> 12;
    random_state ^= random_state << 25;
    random_state ^= random_state >> 27;
    return random_state * 0x2545F4914F6CDD1Du;
}

static double random_double_between(int low_binary, int high_binary) {
    uint64_t biased = (uint64_t)(1023 + low_binary + (int)(random_next() % (uint64_t)(high_binary - low_binary)));
    uint64_t bits = biased << 52 | (random_next() & ((1ull << 52) - 1));
    double value;
    memcpy(&value, &bits, sizeof value);
    return value;
}

/* A decimal the way the suite's streams write them: n / 10^places. */
static double random_short_decimal(void) {
    int places = (int)(random_next() % 4);
    double value = (double)(random_next() % 200001) - 100000;
    value /= exact_powers[places];
    return value == 0 ? 0.5 : value;
}

static unsigned long check_digits(double value, unsigned long *exact) {
    if (!(value > 0) || !isfinite(value)) return 0;
    struct decimal mine;
    if (!shortest_exact(value, &mine)) return 0;
    ++*exact;
    struct decimal theirs = shortest_from_runtime(value);
    if (mine.digits == theirs.digits && mine.point == theirs.point) return 0;
    fprintf(stderr, "digits differ for %.17g: %llue%d, runtime %llue%d\n", value, (unsigned long long)mine.digits,
            mine.point, (unsigned long long)theirs.digits, theirs.point);
    return 1;
}

/* The digits read from the runtime's text must stand for the value. */
static unsigned long check_runtime_digits(double value) {
    if (!(value > 0) || !isfinite(value)) return 0;
    struct decimal theirs = shortest_from_runtime(value);
    char text[48];
    snprintf(text, sizeof text, "%llue%d", (unsigned long long)theirs.digits, theirs.point - theirs.count);
    if (strtod(text, NULL) == value) return 0;
    fprintf(stderr, "runtime digits misread for %.17g: %s\n", value, text);
    return 1;
}

static unsigned long check_parse(const char *text) {
    double mine, theirs = strtod(text, NULL);
    if (!parse_decimal(text, strlen(text), &mine)) {
        if (!isfinite(theirs)) return 0;
        fprintf(stderr, "parse refused %s\n", text);
        return 1;
    }
    if (memcmp(&mine, &theirs, sizeof mine) == 0) return 0;
    fprintf(stderr, "parse differs for %s: %.17g, strtod %.17g\n", text, mine, theirs);
    return 1;
}

static int self_check(unsigned long rounds) {
    unsigned long failures = 0, exact = 0, checked = 0;
    for (unsigned long i = 0; i < rounds; i++) {
        double a = random_short_decimal(), b = random_short_decimal();
        double values[] = {
            fabs(a + b), fabs(a - b), fabs(a * b), fabs(a / b), fabs(b / a),
            random_double_between(-22, 54),                  /* anywhere near the exact method's range */
            nextafter(exact_powers[i % 23], 0), nextafter(exact_powers[i % 23], INFINITY),
            ldexp(1, (int)(i % 80) - 25) * (i % 3 == 0 ? 1 : nextafter(1, i % 3 == 1 ? 0 : 2)),
            (double)(random_next() % (1ull << 53)),          /* integers up to 2^53 */
            (double)(random_next() % 1000000000000000u) / exact_powers[1 + i % 20],
        };
        for (size_t k = 0; k < sizeof values / sizeof *values; k++, checked++) {
            failures += check_digits(values[k], &exact);
        }
        uint64_t bits = random_next();
        double anywhere;
        memcpy(&anywhere, &bits, sizeof anywhere);
        failures += check_runtime_digits(fabs(anywhere));
        char text[64];
        /* Decimals of 1 to 24 digits with a point somewhere and an exponent. */
        int digits = 1 + (int)(random_next() % 24), at = (int)(random_next() % (uint64_t)(digits + 1));
        int length = 0;
        if (random_next() % 2) text[length++] = '-';
        for (int d = 0; d < digits; d++) {
            if (d == at && d > 0) text[length++] = '.';
            text[length++] = (char)('0' + random_next() % 10);
        }
        if (random_next() % 3 == 0) length += snprintf(text + length, 16, "e%d", (int)(random_next() % 80) - 40);
        text[length] = 0;
        failures += check_parse(text);
    }
    fprintf(stderr, "self-check: %lu results, %lu by the exact method, %lu operands: %lu differences\n", checked,
            exact, rounds, failures);
    return failures == 0 ? 0 : 1;
}

/* ------------------------------------------------------------------------ */

static char input[2 * BLOCK];

int main(int argc, char **argv) {
    if (argc > 1 && strcmp(argv[1], "--self-check") == 0) {
        return self_check(argc > 2 ? strtoul(argv[2], NULL, 10) : 1000000);
    }
    size_t held = 0;
    bool skipping = false; /* inside a line longer than any request */
    for (;;) {
        ssize_t count = read(0, input + held, BLOCK);
        if (count < 0) return 1;
        held += (size_t)count;
        char *start = input, *limit = input + held, *newline;
        while ((newline = memchr(start, '\n', (size_t)(limit - start)))) {
            if (skipping) skipping = false;
            else handle_line(start, newline);
            start = newline + 1;
        }
        held = (size_t)(limit - start);
        if (count == 0) {
            if (held > 0 && !skipping) handle_line(start, limit);
            break;
        }
        if (held > BLOCK) {
            if (!skipping) put_not_modelled();
            skipping = true;
            held = 0;
            continue;
        }
        memmove(input, start, held);
    }
    flush_output();
    if (not_modelled) fprintf(stderr, "c_reference: %lu lines not modelled (NotModelled records)\n", not_modelled);
    return 0;
}
