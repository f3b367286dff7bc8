/* memviz.c - pictures of a plan, for people.
 *
 * - memviz_svg: the memory held at every step of the schedule, stacked by
 *   category (parameters, gradients, optimizer state, ..., activations,
 *   recomputed activations' gradients), with the budget line, the
 *   forward/backward boundary and the peak marked;
 * - memviz_snapshot: the same timeline in PyTorch's memory-snapshot format
 *   (a pickle with "segments" and "device_traces", as
 *   torch.cuda.memory._snapshot() returns), so pytorch.org/memory_viz and
 *   torch.cuda._memory_viz open an acc plan like a PyTorch run: every buffer
 *   an allocation at its offset in the arena, with its tensor, DSL line and
 *   step as the stack frame;
 * - memviz_pareto_svg: recompute overhead against peak memory over a budget
 *   sweep, the optimal planner's curve and each policy's point.
 * All output is deterministic. Not here: anything that reads the files back.
 */
#include "memviz.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>


/* one colour per BufKind, persistent ones cool, per-step ones warm */
static const char *const kind_colour[BUF_KIND_COUNT] = {"#4c72b0", "#64b5cd", "#8172b2", "#a39fc9", "#55a868",
                                                        "#8c8c8c", "#dd8452", "#ccb974", "#c44e52"};

#define W 960.0
#define H 420.0
#define ML 80.0 /* margins: left, right, top, bottom */
#define MR 190.0
#define MT 30.0
#define MB 50.0

static void svg_begin(FILE *o, const char *title) {
    fprintf(o,
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" viewBox=\"0 0 %.0f %.0f\" "
            "font-family=\"sans-serif\" font-size=\"12\">\n<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n"
            "<text x=\"%.0f\" y=\"18\" font-size=\"14\">",
            W, H, W, H, ML);
    for (const char *p = title; *p; p++) {
        if (*p == '<') fputs("&lt;", o);
        else if (*p == '&') fputs("&amp;", o);
        else fputc(*p, o);
    }
    fputs("</text>\n", o);
}

/* A "nice" tick step near range/6 of the form 1, 2 or 5 x 10^k. */
static double tick_step(double range) {
    double raw = range / 6, p = 1;
    while (p * 10 <= raw) p *= 10;
    while (p > raw && p > 1e-12) p /= 10;
    return raw >= 5 * p ? 5 * p : raw >= 2 * p ? 2 * p : p;
}

/* y axis in MiB from ymin to ymax bytes (labels absolute); returns the
 * pixels per byte. */
static double y_axis(FILE *o, double ymin, double ymax) {
    double sy = (H - MT - MB) / (ymax - ymin), step = tick_step((ymax - ymin) / 1048576.0);
    for (double v = step * (double)(int64_t)(ymin / 1048576.0 / step + 0.999999); v <= ymax / 1048576.0 * 1.0001;
         v += step) {
        double y = H - MB - (v * 1048576.0 - ymin) * sy;
        fprintf(o, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#e0e0e0\"/>\n", ML, y, W - MR, y);
        fprintf(o, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%g</text>\n", ML - 6, y + 4, v);
    }
    fprintf(o, "<text x=\"16\" y=\"%.1f\" transform=\"rotate(-90 16 %.1f)\" text-anchor=\"middle\">MiB</text>\n",
            (H - MB + MT) / 2, (H - MB + MT) / 2);
    return sy;
}

void memviz_svg(const Graph *g, const Schedule *s, int64_t budget_bytes, const StepMemory *mem, bool zoom, FILE *o) {
    int n = s->steps.n;
    int64_t extra_bytes = mem->total_bytes - mem->schedule_bytes; /* the staging, the workspace with its alignment */
    /* bytes live per step and kind: persistent buffers at every step (left
     * out when zoomed: they and the device's workspace are the floor) */
    int64_t *live = calloc((size_t)n * BUF_KIND_COUNT, sizeof *live);
    if (!live) return;
    int64_t floor_bytes = zoom ? extra_bytes : 0;
    /* a difference array per kind: + at the first step, - after the last */
    for (int i = 0; i < s->bufs.n; i++) {
        const Buffer *b = &s->bufs.v[i];
        if (b->host) continue; /* offloaded copies are in host memory */
        if (zoom && b->persistent) {
            floor_bytes += b->size_bytes;
            continue;
        }
        int lo = b->persistent ? 0 : b->first, hi = b->persistent ? n - 1 : b->last;
        if (lo < 0) lo = 0;
        if (hi > n - 1) hi = n - 1;
        if (lo > hi) continue;
        live[(size_t)lo * BUF_KIND_COUNT + b->kind] += b->size_bytes;
        if (hi + 1 < n) live[(size_t)(hi + 1) * BUF_KIND_COUNT + b->kind] -= b->size_bytes;
    }
    for (int t = 1; t < n; t++)
        for (int c = 0; c < BUF_KIND_COUNT; c++)
            live[(size_t)t * BUF_KIND_COUNT + c] += live[(size_t)(t - 1) * BUF_KIND_COUNT + c];
    int64_t top = mem->total_bytes;
    double ymax = (double)(budget_bytes > top ? budget_bytes : top), ymin = (double)floor_bytes;
    ymax += (ymax - ymin) * 0.08;
    char title[300], b1[32], b2[32], b3[32];
    if (zoom)
        snprintf(title, sizeof title, "%s: memory over the step above the %s held throughout (peak %s at step %d)",
                 g->model, format_bytes(floor_bytes, b3, sizeof b3), format_bytes(top, b1, sizeof b1), s->peak_step);
    else
        snprintf(title, sizeof title, "%s: memory over the training step (peak %s at step %d, budget %s)", g->model,
                 format_bytes(top, b1, sizeof b1), s->peak_step,
                 budget_bytes > 0 ? format_bytes(budget_bytes, b2, sizeof b2) : "none");
    svg_begin(o, title);
    double sy = y_axis(o, ymin, ymax), sx = (W - ML - MR) / (n > 0 ? n : 1);
#define Y(bytes) (H - MB - ((double)(bytes)-ymin) * sy)
    /* the device's workspace at the bottom, then the categories in order */
    double base = (double)extra_bytes;
    if (extra_bytes && !zoom)
        fprintf(o, "<rect x=\"%.1f\" y=\"%.2f\" width=\"%.1f\" height=\"%.2f\" fill=\"#bbbbbb\"/>\n", ML,
                H - MB - base * sy, W - ML - MR, base * sy);
    if (zoom) base = (double)floor_bytes;
    int64_t *below = calloc((size_t)n, sizeof *below);
    for (int c = 0; below && c < BUF_KIND_COUNT; c++) {
        int64_t any = 0;
        for (int t = 0; t < n; t++) any |= live[(size_t)t * BUF_KIND_COUNT + c];
        if (!any) continue;
        fprintf(o, "<path fill=\"%s\" d=\"M%.1f %.2f", kind_colour[c], ML, Y(base + (double)below[0]));
        for (int t = 0; t < n; t++) { /* the upper edge, a step function */
            double y = Y(base + (double)(below[t] + live[(size_t)t * BUF_KIND_COUNT + c]));
            fprintf(o, " L%.1f %.2f L%.1f %.2f", ML + t * sx, y, ML + (t + 1) * sx, y);
        }
        for (int t = n - 1; t >= 0; t--) { /* back along the lower edge */
            double y = Y(base + (double)below[t]);
            fprintf(o, " L%.1f %.2f L%.1f %.2f", ML + (t + 1) * sx, y, ML + t * sx, y);
        }
        fprintf(o, " Z\"/>\n");
        for (int t = 0; t < n; t++) below[t] += live[(size_t)t * BUF_KIND_COUNT + c];
    }
    /* forward | backward, the budget, the peak */
    double xb = ML + s->first_bwd_step * sx;
    fprintf(o, "<line x1=\"%.1f\" y1=\"%.0f\" x2=\"%.1f\" y2=\"%.0f\" stroke=\"#555\" stroke-dasharray=\"3 3\"/>\n", xb,
            MT, xb, H - MB);
    fprintf(
        o,
        "<text x=\"%.1f\" y=\"%.0f\" text-anchor=\"end\">forward</text><text x=\"%.1f\" y=\"%.0f\">backward</text>\n",
        xb - 4, MT + 12, xb + 4, MT + 12);
    if (budget_bytes > 0 && (double)budget_bytes <= ymax) {
        double y = Y(budget_bytes);
        fprintf(o,
                "<line x1=\"%.1f\" y1=\"%.2f\" x2=\"%.1f\" y2=\"%.2f\" stroke=\"#d62728\" stroke-width=\"1.5\" "
                "stroke-dasharray=\"6 4\"/>\n<text x=\"%.1f\" y=\"%.2f\" fill=\"#d62728\">budget</text>\n",
                ML, y, W - MR, y, W - MR + 4, y + 4);
    }
    double px = ML + (s->peak_step + 0.5) * sx, py = Y(s->peak_live_bytes + extra_bytes);
    const Step *pk = &s->steps.v[s->peak_step];
    fprintf(o,
            "<circle cx=\"%.1f\" cy=\"%.2f\" r=\"4\" fill=\"black\"/>\n<text x=\"%.1f\" y=\"%.2f\">peak: %s of %s"
            "</text>\n",
            px, py, px + 6, py - 6, sched_step_kinds[pk->kind], graph_node(g, pk->node)->name);
    /* x axis: ticks at round step numbers, the recompute steps marked under it */
    fprintf(o, "<line x1=\"%.0f\" y1=\"%.0f\" x2=\"%.0f\" y2=\"%.0f\" stroke=\"black\"/>\n", ML, H - MB, W - MR,
            H - MB);
    double xstep = n > 1 ? tick_step((double)n) : 1;
    if (xstep < 1) xstep = 1;
    for (double v = 0; v <= (double)n; v += xstep) {
        double x = ML + v * sx;
        fprintf(o,
                "<line x1=\"%.1f\" y1=\"%.0f\" x2=\"%.1f\" y2=\"%.0f\" stroke=\"black\"/>"
                "<text x=\"%.1f\" y=\"%.0f\" text-anchor=\"middle\">%g</text>\n",
                x, H - MB, x, H - MB + 4, x, H - MB + 22, v);
    }
    for (int t = 0; t < n; t++) { /* recompute steps red, offload and fetch steps pink */
        StepKind k = s->steps.v[t].kind;
        if (k == ST_RECOMPUTE || k == ST_OFFLOAD || k == ST_FETCH)
            fprintf(o, "<rect x=\"%.1f\" y=\"%.0f\" width=\"%.1f\" height=\"6\" fill=\"%s\"/>\n", ML + t * sx,
                    H - MB + 1, sx > 1 ? sx : 1, k == ST_RECOMPUTE ? "#c44e52" : "#da8bc3");
    }
    if (s->n_offload)
        fprintf(o,
                "<text x=\"%.0f\" y=\"%.0f\" text-anchor=\"middle\">schedule step (0 .. %d; %d recomputed, %d "
                "offloaded: marked under the axis)</text>\n",
                (ML + W - MR) / 2, H - 10, n - 1, s->n_recompute, s->n_offload);
    else
        fprintf(o,
                "<text x=\"%.0f\" y=\"%.0f\" text-anchor=\"middle\">schedule step (0 .. %d; %d recomputed, marked "
                "under the axis)</text>\n",
                (ML + W - MR) / 2, H - 10, n - 1, s->n_recompute);
#undef Y
    double ly = MT + 10;
    for (int c = BUF_KIND_COUNT - 1; c >= 0; c--) {
        int64_t any = 0;
        for (int t = 0; t < n; t++) any |= live[(size_t)t * BUF_KIND_COUNT + c];
        if (!any) continue;
        fprintf(o,
                "<rect x=\"%.0f\" y=\"%.0f\" width=\"12\" height=\"12\" fill=\"%s\"/><text x=\"%.0f\" y=\"%.0f\">%s"
                "</text>\n",
                W - MR + 50, ly, kind_colour[c], W - MR + 68, ly + 10, buf_kind_name((BufKind)c));
        ly += 18;
    }
    if (extra_bytes && !zoom) { /* after the schedule's arena: the staged batch, the workspace */
        const char *what = !mem->staging_bytes    ? "GEMM workspace"
                           : mem->workspace_bytes ? "batch inputs, GEMM workspace"
                                                  : "batch inputs (micro-batches)";
        fprintf(o,
                "<rect x=\"%.0f\" y=\"%.0f\" width=\"12\" height=\"12\" fill=\"#bbbbbb\"/><text x=\"%.0f\" "
                "y=\"%.0f\">%s</text>\n",
                W - MR + 50, ly, W - MR + 68, ly + 10, what);
        ly += 18;
    }
    fprintf(o,
            "<rect x=\"%.0f\" y=\"%.0f\" width=\"12\" height=\"6\" fill=\"#c44e52\"/><text x=\"%.0f\" y=\"%.0f\">"
            "recompute step</text>\n",
            W - MR + 50, ly + 3, W - MR + 68, ly + 10);
    if (s->n_offload)
        fprintf(o,
                "<rect x=\"%.0f\" y=\"%.0f\" width=\"12\" height=\"6\" fill=\"#da8bc3\"/><text x=\"%.0f\" "
                "y=\"%.0f\">offload or fetch step</text>\n",
                W - MR + 50, ly + 21, W - MR + 68, ly + 28);
    fputs("</svg>\n", o);
    free(below);
    free(live);
}

/* ---- PyTorch's memory snapshot: a pickle (protocol 2) ---------------------------- */

static void pk_u32(FILE *o, uint32_t v) {
    for (int i = 0; i < 4; i++) fputc((int)(v >> (8 * i)) & 0xff, o);
}

static void pk_int(FILE *o, int64_t v) {
    if (v >= 0 && v < ((int64_t)1 << 31)) {
        fputc('J', o); /* BININT */
        pk_u32(o, (uint32_t)v);
        return;
    }
    unsigned char b[9];
    int n = 0;
    uint64_t u = (uint64_t)v;
    do { /* LONG1: little-endian two's complement, as few bytes as keep the sign */
        b[n++] = (unsigned char)(u & 0xff);
        u >>= 8;
    } while (n < 8 &&
             !((v >= 0 && u == 0 && !(b[n - 1] & 0x80)) || (v < 0 && u == UINT64_MAX >> (8 * n) && (b[n - 1] & 0x80))));
    fputc(0x8a, o);
    fputc(n, o);
    fwrite(b, 1, (size_t)n, o);
}

static void pk_str(FILE *o, const char *s) {
    fputc('X', o); /* BINUNICODE */
    pk_u32(o, (uint32_t)strlen(s));
    fputs(s, o);
}

/* dicts and lists: '}' or ']', then MARK items SETITEMS / APPENDS */
static void pk_dict(FILE *o) { fputs("}(", o); }
static void pk_dict_end(FILE *o) { fputc('u', o); }
static void pk_list(FILE *o) { fputs("](", o); }
static void pk_list_end(FILE *o) { fputc('e', o); }
static void pk_key_int(FILE *o, const char *k, int64_t v) { pk_str(o, k), pk_int(o, v); }
static void pk_key_str(FILE *o, const char *k, const char *v) { pk_str(o, k), pk_str(o, v); }

/* [{"filename": source, "line": the node's DSL line, "name": what}] */
static void pk_frames(FILE *o, const Graph *g, const Buffer *b, const char *when) {
    const Node *x = graph_node(g, b->node);
    char name[300];
    snprintf(name, sizeof name, "%s %s (%s)", buf_kind_name(b->kind), x->name, when);
    pk_str(o, "frames");
    pk_list(o);
    pk_dict(o);
    pk_key_str(o, "filename", g->source);
    pk_key_int(o, "line", x->loc.line);
    pk_key_str(o, "name", name);
    pk_dict_end(o);
    pk_list_end(o);
}

static void pk_event(FILE *o, const Graph *g, const Buffer *b, const char *action, int t) {
    char when[64];
    snprintf(when, sizeof when, "step %d", t);
    pk_dict(o);
    pk_key_str(o, "action", action);
    pk_key_int(o, "addr", MEMVIZ_BASE + b->offset);
    pk_key_int(o, "size", b->size_bytes);
    pk_key_int(o, "stream", 0);
    pk_key_int(o, "time_us", t);
    pk_key_str(o, "category", buf_kind_name(b->kind)); /* memory_viz colours by it */
    pk_frames(o, g, b, when);
    pk_dict_end(o);
}

void memviz_snapshot(const Graph *g, const Schedule *s, FILE *o) {
    fputs("\x80\x02", o); /* PROTO 2 */
    pk_dict(o);
    pk_str(o, "segments");
    pk_list(o);
    pk_dict(o);
    int64_t persistent = 0;
    for (int i = 0; i < s->bufs.n; i++)
        if (s->bufs.v[i].persistent) persistent += s->bufs.v[i].size_bytes;
    pk_key_int(o, "device", 0);
    pk_key_int(o, "address", MEMVIZ_BASE);
    pk_key_int(o, "total_size", s->arena_bytes);
    pk_key_int(o, "stream", 0);
    pk_key_str(o, "segment_type", "large");
    pk_key_int(o, "allocated_size", persistent);
    pk_key_int(o, "active_size", persistent);
    pk_key_int(o, "requested_size", persistent);
    /* the blocks at the end of the step: the persistent buffers (they come
     * first in the arena, back to back) and the free rest */
    pk_str(o, "blocks");
    pk_list(o);
    for (int i = 0; i < s->bufs.n; i++) {
        const Buffer *b = &s->bufs.v[i];
        if (!b->persistent) continue;
        pk_dict(o);
        pk_key_int(o, "address", MEMVIZ_BASE + b->offset);
        pk_key_int(o, "size", b->size_bytes);
        pk_key_int(o, "requested_size", b->size_bytes);
        pk_key_str(o, "state", "active_allocated");
        pk_frames(o, g, b, "persistent");
        pk_dict_end(o);
    }
    if (s->arena_bytes > s->persistent_bytes) {
        pk_dict(o);
        pk_key_int(o, "address", MEMVIZ_BASE + s->persistent_bytes);
        pk_key_int(o, "size", s->arena_bytes - s->persistent_bytes);
        pk_key_int(o, "requested_size", 0);
        pk_key_str(o, "state", "inactive");
        pk_str(o, "frames");
        fputc(']', o);
        pk_dict_end(o);
    }
    pk_list_end(o);
    pk_dict_end(o);
    pk_list_end(o);
    /* one device's trace: at each step, its buffers' allocations, then the
     * frees of the buffers whose last use it was */
    pk_str(o, "device_traces");
    pk_list(o);
    pk_list(o);
    /* memory_viz colours the blocks allocated before the trace (here the
     * persistent buffers) as category "unknown", and some versions fail
     * unless an event names it: a zero-byte allocation that does */
    static const char *const actions[] = {"alloc", "free_requested", "free_completed"};
    for (int k = 0; k < 3; k++) {
        pk_dict(o);
        pk_key_str(o, "action", actions[k]);
        pk_key_int(o, "addr", MEMVIZ_BASE);
        pk_key_int(o, "size", 0);
        pk_key_int(o, "stream", 0);
        pk_key_int(o, "time_us", 0);
        pk_key_str(o, "category", "unknown");
        pk_str(o, "frames");
        pk_list(o);
        pk_dict(o);
        pk_key_str(o, "filename", g->source);
        pk_key_int(o, "line", 0);
        pk_key_str(o, "name", "category 'unknown': the persistent buffers (parameters, gradients, optimizer state)");
        pk_dict_end(o);
        pk_list_end(o);
        pk_dict_end(o);
    }
    /* the buffers by first and by last step, in index order (counting sort) */
    int n_steps = s->steps.n, nb = s->bufs.n;
    int *first_at = calloc((size_t)n_steps + 2, sizeof(int)), *last_at = calloc((size_t)n_steps + 2, sizeof(int));
    int *by_first = malloc(((size_t)nb + 1) * sizeof(int)), *by_last = malloc(((size_t)nb + 1) * sizeof(int));
    if (!first_at || !last_at || !by_first || !by_last) acc_panic(__FILE__, __LINE__, "out of memory");
    for (int i = 0; i < nb; i++) {
        const Buffer *b = &s->bufs.v[i];
        if (b->persistent || b->host) continue;
        if (b->first >= 0 && b->first < n_steps) first_at[b->first + 1]++;
        if (b->last >= 0 && b->last < n_steps) last_at[b->last + 1]++;
    }
    for (int t = 0; t < n_steps; t++) first_at[t + 1] += first_at[t], last_at[t + 1] += last_at[t];
    for (int i = 0; i < nb; i++) {
        const Buffer *b = &s->bufs.v[i];
        if (b->persistent || b->host) continue;
        if (b->first >= 0 && b->first < n_steps) by_first[first_at[b->first]++] = i;
        if (b->last >= 0 && b->last < n_steps) by_last[last_at[b->last]++] = i;
    }
    for (int t = 0, fi = 0, li = 0; t < n_steps; t++) {
        for (; fi < first_at[t]; fi++) pk_event(o, g, &s->bufs.v[by_first[fi]], "alloc", t);
        for (; li < last_at[t]; li++) {
            pk_event(o, g, &s->bufs.v[by_last[li]], "free_requested", t);
            pk_event(o, g, &s->bufs.v[by_last[li]], "free_completed", t);
        }
    }
    free(first_at), free(last_at), free(by_first), free(by_last);
    pk_list_end(o);
    pk_list_end(o);
    pk_dict_end(o);
    fputc('.', o); /* STOP */
}

/* ---- the Pareto curve ------------------------------------------------------------ */

void memviz_pareto_svg(const char *model, const MemvizPoint *pts, int n, FILE *o) {
    double xmin = 0, xmax = 0, ymax = 0;
    for (int i = 0; i < n; i++) {
        double x = (double)pts[i].peak_bytes;
        if (!i || x < xmin) xmin = x;
        if (!i || x > xmax) xmax = x;
        if (pts[i].overhead > ymax) ymax = pts[i].overhead;
    }
    double pad = (xmax - xmin) * 0.05 + 1;
    xmin -= pad, xmax += pad, ymax = ymax * 1.1 + 1e-3;
    char title[200];
    snprintf(title, sizeof title, "%s: recompute overhead against peak memory", model);
    svg_begin(o, title);
    double sx = (W - ML - MR) / (xmax - xmin), sy = (H - MT - MB) / (ymax * 100);
    double ystep = tick_step(ymax * 100);
    for (double v = 0; v <= ymax * 100 * 1.0001; v += ystep) {
        double y = H - MB - v * sy;
        fprintf(o, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#e0e0e0\"/>\n", ML, y, W - MR, y);
        fprintf(o, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%g%%</text>\n", ML - 6, y + 4, v);
    }
    double xstep = tick_step((xmax - xmin) / 1048576.0);
    for (double v = xstep * (double)(int64_t)(xmin / 1048576.0 / xstep + 1); v <= xmax / 1048576.0; v += xstep) {
        double x = ML + (v * 1048576.0 - xmin) * sx;
        fprintf(o, "<line x1=\"%.1f\" y1=\"%.0f\" x2=\"%.1f\" y2=\"%.0f\" stroke=\"#e0e0e0\"/>\n", x, MT, x, H - MB);
        fprintf(o, "<text x=\"%.1f\" y=\"%.0f\" text-anchor=\"middle\">%g</text>\n", x, H - MB + 16, v);
    }
    fprintf(o, "<text x=\"%.0f\" y=\"%.0f\" text-anchor=\"middle\">peak memory (MiB)</text>\n", (ML + W - MR) / 2,
            H - 12);
    fprintf(o,
            "<text x=\"16\" y=\"%.1f\" transform=\"rotate(-90 16 %.1f)\" text-anchor=\"middle\">recompute overhead"
            "</text>\n",
            (H - MB + MT) / 2, (H - MB + MT) / 2);
    /* the optimal planner's points as steps in order of memory: between two
     * sampled peaks the best known plan is the one at the lower peak, so the
     * curve stays level until the next point (a straight line between them
     * would claim plans nobody found) */
    int *ord = malloc(((size_t)n + 1) * sizeof *ord), n_opt = 0;
    for (int i = 0; ord && i < n; i++)
        if (!pts[i].label) {
            int k = n_opt++;
            for (; k > 0 && pts[ord[k - 1]].peak_bytes > pts[i].peak_bytes; k--) ord[k] = ord[k - 1];
            ord[k] = i;
        }
    fprintf(o, "<polyline fill=\"none\" stroke=\"#4c72b0\" stroke-width=\"2\" points=\"");
    for (int k = 0; k < n_opt; k++) {
        const MemvizPoint *p = &pts[ord[k]];
        double x = ML + ((double)p->peak_bytes - xmin) * sx, y = H - MB - p->overhead * 100 * sy;
        if (k) fprintf(o, "%.1f,%.1f ", x, H - MB - pts[ord[k - 1]].overhead * 100 * sy);
        fprintf(o, "%.1f,%.1f ", x, y);
    }
    if (n_opt) fprintf(o, "%.1f,%.1f", W - MR, H - MB - pts[ord[n_opt - 1]].overhead * 100 * sy);
    fprintf(o, "\"/>\n");
    free(ord);
    for (int i = 0; i < n; i++) {
        double x = ML + ((double)pts[i].peak_bytes - xmin) * sx, y = H - MB - pts[i].overhead * 100 * sy;
        if (!pts[i].label) {
            fprintf(o, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3\" fill=\"#4c72b0\"/>\n", x, y);
        } else {
            fprintf(o, "<rect x=\"%.1f\" y=\"%.1f\" width=\"7\" height=\"7\" fill=\"#dd8452\"/>\n", x - 3.5, y - 3.5);
            fprintf(o, "<text x=\"%.1f\" y=\"%.1f\" fill=\"#a0522d\">%s</text>\n", x + 6, y - 6, pts[i].label);
        }
    }
    fprintf(
        o,
        "<circle cx=\"%.0f\" cy=\"%.0f\" r=\"3\" fill=\"#4c72b0\"/><text x=\"%.0f\" y=\"%.0f\">optimal (acc)"
        "</text>\n<rect x=\"%.0f\" y=\"%.0f\" width=\"7\" height=\"7\" fill=\"#dd8452\"/><text x=\"%.0f\" y=\"%.0f\">"
        "policies</text>\n",
        W - MR + 50, MT + 16, W - MR + 60, MT + 20, W - MR + 46.5, MT + 32.5, W - MR + 60, MT + 40);
    fputs("</svg>\n", o);
}
