/* util.c - the small utilities every layer of the compiler shares: a clock
 * and reading a whole file. Not used by the runtime (libaccrt includes no
 * compiler header) nor by the programs acc generates.
 */
#include "ir.h"

#include <errno.h>
#include <string.h>
#include <time.h>

double acc_now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

char *acc_read_file(const char *path, size_t max_bytes, size_t *len_bytes, bool *over, char *err, size_t err_len) {
    if (over) *over = false;
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(err, err_len, "cannot open '%s': %s", path, strerror(errno));
        return NULL;
    }
    enum { CHUNK = 1 << 16 };
    size_t n = 0, cap = CHUNK, got;
    char *buf = acc_xrealloc(NULL, cap + 1);
    while ((got = fread(buf + n, 1, CHUNK, f)) > 0) {
        n += got;
        if (n > max_bytes) {
            if (over) {
                *over = true;
                break;
            }
            fclose(f);
            free(buf);
            snprintf(err, err_len, "'%s' is larger than %zu bytes", path, max_bytes);
            return NULL;
        }
        if (n + CHUNK > cap) buf = acc_xrealloc(buf, (cap *= 2) + 1);
    }
    bool failed = ferror(f);
    fclose(f);
    if (failed) {
        free(buf);
        snprintf(err, err_len, "cannot read '%s'", path);
        return NULL;
    }
    buf[n] = 0;
    *len_bytes = n;
    return buf;
}
