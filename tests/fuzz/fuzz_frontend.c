/* fuzz_frontend.c - libFuzzer target of the whole front end: each input is a
 * .acdsl source text, parsed, elaborated and (when it has no errors) verified
 * by fe_load_source, its messages written to /dev/null. A crash, a sanitizer
 * report, a leak, a timeout or a panic is a bug. Build with -DACC_FUZZ=ON and
 * clang; how to run it: tests/fuzz/README.md.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "frontend.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static FILE *devnull;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (!devnull) devnull = fopen("/dev/null", "w");
    if (!devnull) abort();
    /* a copy in a buffer of its own, so that any read past the end is caught */
    char *src = malloc(size ? size : 1);
    if (!src) abort();
    for (size_t i = 0; i < size; i++) src[i] = (char)data[i];
    Graph g;
    graph_init(&g, "model");
    int errs = fe_load_source("fuzz.acdsl", src, size, NULL, 0, &g, devnull);
    if (errs == 0 && (g.loss < 0 || !ir_verify(&g, devnull))) abort(); /* a clean file gives a verified graph */
    graph_free(&g);
    free(src);
    return 0;
}
