/* passes.h - the compiler's middle: autodiff, the schedule with recompute
 * inserted, liveness, static arena allocation and the plan checker.
 *
 * Pipeline (tools/acc.c calls them in this order):
 *   ad_build        Graph -> which nodes get gradients, backward order, what
 *                   each backward reads (the planner's candidates)
 *   sched_build     + a SAVE/RECOMPUTE decision per node -> steps and buffers
 *                   with live intervals
 *   alloc_assign    offsets of every buffer in one arena; the arena size is
 *                   the step's memory
 *   plan_check      an independent simulation of the schedule
 * Includes only ir.h (layering: frontend and codegen are not visible here).
 */
#ifndef ACC_PASSES_H
#define ACC_PASSES_H

#include "ir.h"

/* ---- autodiff ------------------------------------------------------------ */

/* What one backward step reads of the forward pass. */
typedef struct {
    bool in[ACC_MAX_IN]; /* input j's tensor */
    bool out, aux;       /* the node's own tensor / statistics tail */
} GradReads;

typedef struct {
    const Graph *g;
    bool *live;      /* [n] node contributes to the loss (dead nodes are skipped) */
    bool *need_grad; /* [n] d loss / d node is computed */
    VEC(int) bwd;    /* nodes whose backward runs, in backward (reverse topological) order */
} Autodiff;

/* requires: a verified graph with a loss. provides: live, need_grad, bwd. */
void ad_build(const Graph *g, Autodiff *ad);
void ad_free(Autodiff *ad);
/* The forward buffers node n's backward reads, from the op table's grad column. */
GradReads ad_reads(const Autodiff *ad, int n);
/* Does input j of node n receive a gradient from n's backward? */
bool ad_input_gets_grad(const Autodiff *ad, int n, int j);

/* ---- schedule ------------------------------------------------------------ */

typedef enum { DEC_SAVE, DEC_RECOMPUTE } Decision;

typedef enum {
    BUF_PARAM,  /* parameters: persistent */
    BUF_PGRAD,  /* parameter gradients: persistent */
    BUF_ADAM_M, /* optimizer state: persistent */
    BUF_ADAM_V,
    BUF_INPUT,  /* model inputs: persistent (set before the step) */
    BUF_LOSS,   /* the loss value: persistent (read after the step) */
    BUF_ACT,    /* a node's tensor (one buffer per computation of it) */
    BUF_AUX,    /* a node's statistics tail */
    BUF_GRAD,   /* gradient of an activation */
    BUF_KIND_COUNT
} BufKind;

const char *buf_kind_name(BufKind k);

typedef struct {
    BufKind kind;
    int node;
    int64_t size_bytes; /* rounded up to ACC_ALIGN */
    int64_t offset;     /* in the arena, set by alloc_assign */
    int first, last;    /* live over steps [first, last]; persistent: all */
    bool persistent;
} Buffer;

#define ACC_ALIGN 64

typedef enum { ST_FWD, ST_RECOMPUTE, ST_SEED, ST_BWD } StepKind;

/* One kernel launch of the schedule. Buffer indices are -1 where unused. */
typedef struct {
    StepKind kind;
    int node;
    int out, aux;            /* FWD/RECOMPUTE: written; BWD: read if the rule says so */
    int in[ACC_MAX_IN];      /* input tensors read */
    int grad_out;            /* BWD: the node's gradient (read); SEED: d loss (written) */
    int grad_in[ACC_MAX_IN]; /* BWD: gradients accumulated into */
    bool zero_in[ACC_MAX_IN]; /* BWD: first contribution, zero the gradient first */
} Step;

typedef struct {
    const Graph *g;
    VEC(Step) steps;
    VEC(Buffer) bufs;
    int first_bwd_step;   /* index of the SEED step */
    int n_recompute;      /* RECOMPUTE steps */
    bool optimizer;       /* AdamW state is part of the arena */
    int *param_buf, *pgrad_buf, *adam_m_buf, *adam_v_buf, *input_buf; /* [n] by node, -1 */
    int loss_buf;
    int64_t persistent_bytes, arena_bytes;
    int peak_step;        /* step at which the most bytes are live */
    int64_t peak_live_bytes; /* max over steps of the live bytes (the allocation's lower bound) */
} Schedule;

/* requires: ad built for g; dec[n] for every node (only nodes whose tensors
 * the backward reads matter). provides: steps and buffers with live intervals. */
void sched_build(const Graph *g, const Autodiff *ad, const Decision *dec, bool optimizer, Schedule *s);
void sched_free(Schedule *s);

/* requires: a built schedule. provides: offsets, arena_bytes, peak_step,
 * peak_live_bytes. Persistent buffers first, then a best-fit placement of the
 * rest by decreasing size. */
void alloc_assign(Schedule *s);

/* Re-simulate the schedule: every read finds its buffer live and computed from
 * the right node, no two live buffers overlap, everything fits in the arena.
 * Prints the first violation and returns false. */
bool plan_check(const Schedule *s, FILE *err);

#endif
