/* memviz.h - pictures of a plan: memory over the schedule (SVG), PyTorch's
 * memory-snapshot pickle, the Pareto curve of a budget sweep (SVG). */
#ifndef ACC_MEMVIZ_H
#define ACC_MEMVIZ_H

#include <stdio.h>

#include "passes.h"

/* The arena's address in a snapshot (any value; viewers only show it). */
#define MEMVIZ_BASE ((int64_t)0x7f0000000000)

/* requires: an allocated schedule. mem: the step around it (what a device adds, its
 * workspace), drawn at the bottom; budget_bytes <= 0: no budget line. zoom:
 * the y axis starts at what is held throughout (persistent buffers and the
 * workspace), so the activations fill the picture. */
void memviz_svg(const Graph *g, const Schedule *s, int64_t budget_bytes, const StepMemory *mem, bool zoom, FILE *out);
void memviz_snapshot(const Graph *g, const Schedule *s, FILE *out);

typedef struct {
    int64_t peak_bytes;
    double overhead;   /* recompute time / step time without recompute */
    const char *label; /* a policy's name; NULL: a point of the optimal sweep */
} MemvizPoint;
void memviz_pareto_svg(const char *model, const MemvizPoint *pts, int n, FILE *out);

#endif
