/* size.c - memory sizes on the command line ("8G", "1.5GiB", "8000MB") and
 * their rendering for humans. Parsing uses exact integer arithmetic; a
 * fractional size is rounded down to whole bytes ("3.3M" = 3460300), but a
 * fraction of the byte unit itself ("1.5B") is an error. The result must be in
 * [1, INT64_MAX].
 */
#include "ir.h"

#include <inttypes.h>
#include <string.h>

static const struct {
    const char *name;
    int64_t mult;
} units[] = {
    {"", 1},
    {"B", 1},
    {"K", (int64_t)1 << 10},
    {"M", (int64_t)1 << 20},
    {"G", (int64_t)1 << 30},
    {"T", (int64_t)1 << 40},
    {"KiB", (int64_t)1 << 10},
    {"MiB", (int64_t)1 << 20},
    {"GiB", (int64_t)1 << 30},
    {"TiB", (int64_t)1 << 40},
    {"kB", 1000},
    {"KB", 1000},
    {"MB", 1000000},
    {"GB", 1000000000},
    {"TB", 1000000000000},
};

static bool is_digit(char c) { return c >= '0' && c <= '9'; }

/* Grammar: digits [ "." digits ] unit, where a fractional part needs a unit. */
bool parse_size(const char *s, int64_t *bytes_out) {
    if (!s || !is_digit(*s)) return false;
    int64_t whole = 0;
    for (; is_digit(*s); s++)
        if (__builtin_mul_overflow(whole, 10, &whole) || __builtin_add_overflow(whole, *s - '0', &whole)) return false;
    const char *frac = s;
    size_t n_frac = 0;
    if (*s == '.') {
        frac = ++s;
        while (is_digit(*s)) s++;
        n_frac = (size_t)(s - frac);
        if (!n_frac || !*s) return false;
    }
    int64_t mult = 0;
    for (size_t i = 0; i < sizeof units / sizeof *units; i++)
        if (!strcmp(s, units[i].name)) mult = units[i].mult;
    if (!mult) return false;
    /* floor(fraction * mult), Horner from the last digit (floor of floors
     * is the floor); each step stays below 10 * mult, far from overflow. */
    int64_t part = 0;
    bool exact = true;
    for (size_t i = n_frac; i-- > 0;) {
        int64_t t = (frac[i] - '0') * mult + part;
        exact &= t % 10 == 0;
        part = t / 10;
    }
    if (mult == 1 && !exact) return false;
    int64_t total;
    if (__builtin_mul_overflow(whole, mult, &total) || __builtin_add_overflow(total, part, &total)) return false;
    if (total < 1) return false;
    *bytes_out = total;
    return true;
}

/* Binary units with two decimals ("1.50 GiB"); below 1 KiB exact bytes ("123 B"). */
const char *format_bytes(int64_t bytes, char *buf, size_t len) {
    static const char *const names[] = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
    double v = (double)bytes;
    int u = -1;
    /* switch up early enough that rounding never prints "1024.00" */
    while (u < 5 && (v >= 1023.995 || v <= -1023.995)) {
        v /= 1024;
        u++;
    }
    if (u < 0) snprintf(buf, len, "%" PRId64 " B", bytes);
    else snprintf(buf, len, "%.2f %s", v, names[u]);
    return buf;
}
