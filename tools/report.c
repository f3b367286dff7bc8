/* report.c - plan.json and `acc explain`.
 *
 * plan.json is deterministic: the same input and flags give the same bytes
 * (no times, no paths other than the model's, floats printed with %.9g).
 * Memory categories: the persistent ones (parameters, gradients, optimizer
 * state, inputs, loss), then what is live at the peak step by kind, then the
 * allocation's fragmentation: together exactly the arena.
 */
#include "report.h"

#include <inttypes.h>
#include <string.h>


typedef struct {
    int64_t cat[BUF_KIND_COUNT];
    int64_t fragmentation;
} Breakdown;

static Breakdown breakdown(const Schedule *s) {
    Breakdown b;
    memset(&b, 0, sizeof b);
    int t = s->peak_step;
    for (int i = 0; i < s->bufs.n; i++) {
        const Buffer *x = &s->bufs.v[i];
        if (x->host) continue; /* an offloaded copy, in the host arena */
        if (x->persistent || (x->first >= 0 && x->first <= t && t <= x->last)) b.cat[x->kind] += x->size_bytes;
    }
    b.fragmentation = s->arena_bytes - s->peak_live_bytes;
    return b;
}

static void breakdown_row(FILE *out, const char *name, int64_t bytes) {
    char buf[32];
    fprintf(out, "  %-22s %14" PRId64 "  %s\n", name, bytes, format_bytes(bytes, buf, sizeof buf));
}

void report_breakdown(const Schedule *s, FILE *out) {
    Breakdown b = breakdown(s);
    char buf[32];
    for (int c = 0; c < BUF_KIND_COUNT; c++)
        if (b.cat[c]) breakdown_row(out, buf_kind_name((BufKind)c), b.cat[c]);
    breakdown_row(out, "fragmentation", b.fragmentation);
    const Step *st = &s->steps.v[s->peak_step];
    fprintf(out, "  %-22s %14" PRId64 "  %s   (peak at step %d: %s of %s)\n", "total (arena)", s->arena_bytes,
            format_bytes(s->arena_bytes, buf, sizeof buf), s->peak_step, sched_step_kinds[st->kind],
            graph_node(s->g, st->node)->name);
}

void report_step_rows(const StepMemory *m, const char *target, FILE *out) {
    if (m->total_bytes == m->schedule_bytes) return;
    if (m->staging_bytes) breakdown_row(out, "staging (full batch)", m->staging_bytes);
    if (m->workspace_bytes) {
        char name[64];
        snprintf(name, sizeof name, "workspace (%s)", target);
        breakdown_row(out, name, m->total_bytes - m->schedule_bytes - m->staging_bytes); /* with its alignment */
    }
    breakdown_row(out, "total (step)", m->total_bytes);
}

static void json_str(FILE *out, const char *s) {
    fputc('"', out);
    for (; *s; s++) {
        if (*s == '"' || *s == '\\') fputc('\\', out);
        if ((unsigned char)*s < 32) fprintf(out, "\\u%04x", *s);
        else fputc(*s, out);
    }
    fputc('"', out);
}

/* Does some backward step read node i (a tensor the plan decides on)? */
static bool is_candidate(const Autodiff *ad, const Graph *g, int i) {
    const Node *x = graph_node(g, i);
    return ad->live[i] && !(op_table[x->op].flags & OPF_LEAF) && i != g->loss;
}

/* --optimizer-state host: AdamW's m and v in f32 in host memory. */
static int64_t host_state_bytes(const Graph *g) { return 8 * graph_param_count(g); }

static const char *decision_name(Decision d) {
    return d == DEC_SAVE ? "save" : d == DEC_OFFLOAD ? "offload" : "recompute";
}

/* plan.json's "offload" (with --host-budget): the host memory allowed and
 * used, how many tensors are offloaded and the time of their copies. */
static void offload_json(const Schedule *s, const Plan *p, const ReportInfo *info, FILE *out) {
    fprintf(out,
            "  \"offload\": {\"host_budget_bytes\": %" PRId64 ", \"host_bytes\": %" PRId64
            ", \"tensors\": %d, \"transfer_time_est\": %.9g, \"exposed_time_est\": %.9g},\n",
            info->host_budget_bytes, p->host_bytes, s->n_offload, p->transfer_time, p->exposed_time);
}

/* Data parallel: each bucket's bytes and the step after which the
 * backward has written it (ready: [n_buckets]); the bytes of all. */
static int64_t dp_buckets(const Schedule *s, const DpLayout *dp, int64_t *bytes, int *ready) {
    int64_t all = 0;
    for (int k = 0; k < dp->n_buckets; k++) bytes[k] = 0;
    for (int i = 0; i < s->g->nodes.n; i++)
        if (dp->bucket_of[i] >= 0) {
            bytes[dp->bucket_of[i]] += s->bufs.v[s->pgrad_buf[i]].size_bytes;
            all += s->bufs.v[s->pgrad_buf[i]].size_bytes;
        }
    dp_ready_steps(dp, s, ready);
    return all;
}

/* plan.json's "data_parallel" (--ranks): the ranks the plan is each one's
 * for, ZeRO, and the buckets in the order the backward issues them. */
static void dp_json(const Schedule *s, const HwProfile *hw, const ReportInfo *info, FILE *out) {
    const DpLayout *dp = info->dp;
    int64_t *bytes = acc_xrealloc(NULL, (size_t)dp->n_buckets * sizeof *bytes);
    int *ready = acc_xrealloc(NULL, (size_t)dp->n_buckets * sizeof *ready);
    int64_t all = dp_buckets(s, dp, bytes, ready);
    int64_t shard = s->shard_m_buf >= 0 ? s->bufs.v[s->shard_m_buf].size_bytes * 2 : 0;
    fprintf(out,
            "  \"data_parallel\": {\"ranks\": %d, \"zero\": %d, \"bucket_cap_bytes\": %" PRId64
            ", \"gradient_bytes\": %" PRId64 ", \"optimizer_shard_bytes\": %" PRId64 ", \"buckets\": [",
            dp->ranks, dp->zero, info->bucket_cap_bytes, all, shard);
    for (int k = 0; k < dp->n_buckets; k++)
        fprintf(out, "%s{\"bytes\": %" PRId64 ", \"ready_step\": %d}", k ? ", " : "", bytes[k], ready[k]);
    DpTiming t = dp_timing(dp, s, hw);
    fprintf(out,
            "], \"comm_time_est\": %.6g, \"exposed_time_est\": %.6g, \"gather_time_est\": %.6g, "
            "\"backward_time_est\": %.6g},\n",
            t.comm_time, t.exposed_time, t.gather_time, t.backward_time);
    free(bytes);
    free(ready);
}

/* explain's data-parallel lines. */
static void dp_explain(const Schedule *s, const HwProfile *hw, const ReportInfo *info, FILE *out) {
    const DpLayout *dp = info->dp;
    char b1[32], b2[32];
    int64_t *bytes = acc_xrealloc(NULL, (size_t)dp->n_buckets * sizeof *bytes);
    int *ready = acc_xrealloc(NULL, (size_t)dp->n_buckets * sizeof *ready);
    int64_t all = dp_buckets(s, dp, bytes, ready);
    int first = s->first_bwd_step, n = s->steps.n;
    fprintf(out,
            "data parallel: %d ranks, this plan each one's (the budget is per rank); %s of gradients %s in %d "
            "bucket%s of at most %s",
            dp->ranks, format_bytes(all, b1, sizeof b1), dp->zero ? "reduce-scattered" : "all-reduced", dp->n_buckets,
            dp->n_buckets == 1 ? "" : "s", format_bytes(info->bucket_cap_bytes, b2, sizeof b2));
    if (dp->n_buckets)
        fprintf(out, ", the first issued %d%% into the backward",
                ready[0] >= first && n > first ? 100 * (ready[0] - first) / (n - first) : 100);
    fprintf(out, "\n");
    DpTiming t = dp_timing(dp, s, hw);
    fprintf(out,
            "collectives (est., coll_bw %.3g GB/s): %.3f ms beside a %.3f ms backward, %.3f ms after its end"
            "%s",
            hw->coll_bw * 1e-9, t.comm_time * 1e3, t.backward_time * 1e3, t.exposed_time * 1e3, dp->zero ? "" : "\n");
    if (dp->zero) fprintf(out, "; the update's all-gathers %.3f ms\n", t.gather_time * 1e3);
    if (s->shard_m_buf >= 0)
        fprintf(out, "zero-%d: this rank's AdamW state %s (1/%d of it)%s, its pieces updated and all-gathered\n",
                dp->zero, format_bytes(s->bufs.v[s->shard_m_buf].size_bytes * 2, b1, sizeof b1), dp->ranks,
                dp->zero == 2 ? " and its gradients' shard" : "");
    free(bytes);
    free(ready);
}

/* plan.json's "micro_batching": the whole batch, the count chosen, and
 * every count tried with its plan's memory and estimated step time. */
static void micro_json(const MicroReport *m, FILE *out) {
    fprintf(out,
            "  \"micro_batching\": {\"batch\": %" PRId64 ", \"micro_batches\": %d, \"micro_batch\": %" PRId64
            ", \"chosen_by\": \"%s\", \"loss_scale\": %.9g, \"tried\": [",
            m->batch, m->chosen, m->batch / m->chosen, m->automatic ? "planner" : "option", m->loss_scale);
    for (int i = 0; i < m->n_cand; i++) {
        const MicroCandidate *c = &m->cand[i];
        fprintf(out,
                "%s{\"micro_batches\": %d, \"fits\": %s, \"%s\": %" PRId64
                ", \"step_time_est\": %.9g, \"recompute_time_est\": %.9g}",
                i ? ", " : "", c->n, c->fits ? "true" : "false", c->fits ? "peak_bytes" : "min_peak_bytes",
                c->peak_bytes, c->step_time, c->recompute_time);
    }
    fprintf(out, "]},\n");
}

void report_plan_json(const Graph *g, const Autodiff *ad, const Schedule *s, const Plan *p, const HwProfile *hw,
                      const ReportInfo *info, FILE *out) {
    Breakdown b = breakdown(s);
    fprintf(out, "{\n  \"acc_version\": \"%s\",\n  \"model\": ", ACC_VERSION);
    json_str(out, g->model);
    fprintf(out, ",\n  \"source\": ");
    json_str(out, g->source);
    fprintf(out, ",\n  \"hyperparameters\": {");
    for (int i = 0; i < g->hparams.n; i++) {
        const char *eq = strchr(g->hparams.v[i], '=');
        fprintf(out, "%s\"%.*s\": \"%s\"", i ? ", " : "", (int)(eq - g->hparams.v[i]), g->hparams.v[i], eq + 1);
    }
    fprintf(out, "},\n  \"target\": \"%s\",\n  \"hw\": ", info->target);
    json_str(out, hw->name);
    fprintf(out, ",\n  \"policy\": ");
    json_str(out, info->policy);
    fprintf(out, ",\n  \"precision\": \"%s\"", info->precision ? info->precision : "fp32");
    fprintf(out, ",\n  \"optimizer_state\": \"%s\"", opt_state_name(s->optimizer));
    if (s->optimizer == OPT_STATE_HOST) fprintf(out, ",\n  \"optimizer_host_bytes\": %" PRId64, host_state_bytes(g));
    /* the workspace after the schedule's arena (and the staging), with its alignment */
    int64_t peak = info->mem.total_bytes, staging = info->mem.staging_bytes;
    int64_t workspace = peak - info->mem.schedule_bytes - staging;
    fprintf(out,
            ",\n  \"budget_bytes\": %" PRId64 ",\n  \"peak_bytes\": %" PRId64 ",\n  \"max_live_bytes\": %" PRId64
            ",\n  \"fits\": %s,\n",
            info->budget_bytes, peak, s->peak_live_bytes + staging + workspace,
            info->budget_bytes <= 0 || peak <= info->budget_bytes ? "true" : "false");
    fprintf(out, "  \"memory\": {");
    const char *sep = "";
    for (int c = 0; c < BUF_KIND_COUNT; c++) {
        fprintf(out, "%s\"%s\": %" PRId64, sep, buf_kind_name((BufKind)c), b.cat[c]);
        sep = ", ";
    }
    if (staging) fprintf(out, ", \"batch_inputs\": %" PRId64, staging);
    if (workspace) fprintf(out, ", \"workspace\": %" PRId64, workspace);
    fprintf(out, ", \"fragmentation\": %" PRId64 "},\n", b.fragmentation);
    if (info->micro) micro_json(info->micro, out);
    if (info->host_budget_bytes) offload_json(s, p, info, out);
    if (info->dp && info->dp->ranks > 1) dp_json(s, hw, info, out);
    if (info->codegen_json) fprintf(out, "  \"codegen\": %s,\n", info->codegen_json);
    const Step *pk = &s->steps.v[s->peak_step];
    fprintf(out, "  \"peak_at\": {\"step\": %d, \"kind\": \"%s\", \"node\": ", s->peak_step,
            sched_step_kinds[pk->kind]);
    json_str(out, graph_node(g, pk->node)->name);
    fprintf(out, "},\n  \"steps\": %d,\n  \"recompute_steps\": %d,\n", s->steps.n, s->n_recompute);
    fprintf(out, "  \"recompute_flops\": %.9g,\n  \"recompute_time_est\": %.9g,\n", p->recompute_flops,
            p->recompute_time);
    int n = info->micro ? info->micro->chosen : 1; /* the step runs the plan n times */
    fprintf(out, "  \"step_time_est\": %.9g,\n  \"overhead\": %.9g,\n",
            n * (p->fwd_time + p->bwd_time + p->recompute_time), p->recompute_time / (p->fwd_time + p->bwd_time));
    double gap = p->recompute_time > 0 ? (p->recompute_time - p->bound) / p->recompute_time : 0;
    fprintf(out,
            "  \"solver\": {\"status\": \"%s\", \"objective\": %.9g, \"bound\": %.9g, \"gap\": %.9g, "
            "\"candidates\": %d, \"evaluations\": %d},\n",
            plan_status_name(p), p->recompute_time, p->bound, gap < 0 ? 0 : gap, p->n_candidates, p->n_evals);
    fprintf(out, "  \"tensors\": [\n");
    bool first = true;
    for (int i = 0; i < g->nodes.n; i++) {
        if (!is_candidate(ad, g, i)) continue;
        const Node *x = graph_node(g, i);
        fprintf(out, "%s    {\"name\": ", first ? "" : ",\n");
        json_str(out, x->name);
        fprintf(out,
                ", \"op\": \"%s\", \"dtype\": \"%s\", \"bytes\": %" PRId64 ", \"decision\": \"%s\", "
                "\"recompute_time\": %.9g, \"recompute_flops\": %.9g}",
                op_table[x->op].name, dtype_name(x->dtype), node_bytes(x), decision_name(p->dec[i]),
                cost_fwd_time(g, x, hw), op_table[x->op].flops(g, x));
        first = false;
    }
    fprintf(out, "\n  ]\n}\n");
}

/* The name of x after its block's prefix ("layers.3.attn.q" -> "attn.q"). */
static const char *local_name(const Node *x) {
    size_t n = strlen(x->group);
    return n && !strncmp(x->name, x->group, n) && x->name[n] == '.' ? x->name + n + 1 : x->name;
}

/* Whether candidates [a0, a1) and [b0, b1) are the same block: the same
 * tensors in the same order, by local name, op and size. */
static bool same_block(const Autodiff *ad, const Graph *g, int a0, int a1, int b0, int b1) {
    int i = a0, j = b0;
    for (;;) {
        while (i < a1 && !is_candidate(ad, g, i)) i++;
        while (j < b1 && !is_candidate(ad, g, j)) j++;
        if (i >= a1 || j >= b1) return i >= a1 && j >= b1;
        const Node *x = graph_node(g, i), *y = graph_node(g, j);
        if (x->op != y->op || node_bytes(x) != node_bytes(y) || strcmp(local_name(x), local_name(y))) return false;
        i++, j++;
    }
}

/* explain's micro-batch lines: the choice, and why (every count tried). */
static void micro_explain(const MicroReport *m, int64_t staging, FILE *out) {
    char b1[32];
    fprintf(out,
            "micro-batches: %d of %" PRId64 " rows (batch %" PRId64 ", %s), each seeding the loss's gradient with "
            "%.9g; the whole batch's inputs: %" PRId64 " bytes\n",
            m->chosen, m->batch / m->chosen, m->batch, m->automatic ? "chosen by the planner" : "--micro-batch",
            m->loss_scale, staging);
    if (!m->automatic) return;
    fprintf(out, "  %14s %-9s %14s %14s %14s\n", "micro-batches", "fits", "memory", "step (est.)", "recompute");
    for (int i = 0; i < m->n_cand; i++) {
        const MicroCandidate *c = &m->cand[i];
        fprintf(out, "  %14d %-9s %14s %11.3f ms %11.3f ms%s\n", c->n, c->fits ? "yes" : "no (min)",
                format_bytes(c->peak_bytes, b1, sizeof b1), c->step_time * 1e3, c->recompute_time * 1e3,
                c->n == m->chosen ? "  <- least time that fits" : "");
    }
    if (m->cand[m->n_cand - 1].fits && m->cand[m->n_cand - 1].recompute_time == 0)
        fprintf(out, "  (more micro-batches would only add time: the last plan recomputes nothing)\n");
}

void report_explain(const Graph *g, const Autodiff *ad, const Schedule *s, const Plan *p, const HwProfile *hw,
                    const ReportInfo *info, FILE *out) {
    char b1[32], b2[32];
    fprintf(out, "model %s (%s), policy %s, precision %s%s%s, hardware %s\n", g->model, g->source, info->policy,
            info->precision ? info->precision : "fp32", s->optimizer >= OPT_STATE_BF16 ? ", optimizer state " : "",
            s->optimizer >= OPT_STATE_BF16 ? opt_state_name(s->optimizer) : "", hw->name);
    if (s->optimizer == OPT_STATE_HOST)
        fprintf(out, "optimizer state in host memory: %s (AdamW m and v in fp32, updated there)\n",
                format_bytes(host_state_bytes(g), b1, sizeof b1));
    int64_t peak = info->mem.total_bytes, staging = info->mem.staging_bytes;
    int64_t workspace = peak - info->mem.schedule_bytes - staging;
    fprintf(out, "budget %s, planned peak %s (%" PRId64 " bytes)%s\n",
            info->budget_bytes > 0 ? format_bytes(info->budget_bytes, b1, sizeof b1) : "unbounded",
            format_bytes(peak, b2, sizeof b2), peak,
            info->budget_bytes > 0 && peak > info->budget_bytes ? "  DOES NOT FIT" : "");
    if (workspace)
        fprintf(out, "(of which the %s target's GEMM workspace: %" PRId64 " bytes)\n", info->target, workspace);
    if (info->micro) micro_explain(info->micro, staging, out);
    if (info->dp && info->dp->ranks > 1) dp_explain(s, hw, info, out);
    if (info->host_budget_bytes)
        fprintf(out,
                "offload: %d tensors to host memory, %s of the host budget of %s, copies %.3f ms (%.3f ms exposed)\n",
                s->n_offload, format_bytes(p->host_bytes, b1, sizeof b1),
                format_bytes(info->host_budget_bytes, b2, sizeof b2), p->transfer_time * 1e3, p->exposed_time * 1e3);
    int runs = info->micro ? info->micro->chosen : 1; /* the step runs the plan once per micro-batch */
    fprintf(out, "recompute %.3f ms of a %.3f ms step (+%.2f%%), solver %s", runs * p->recompute_time * 1e3,
            runs * (p->fwd_time + p->bwd_time) * 1e3, 100 * p->recompute_time / (p->fwd_time + p->bwd_time),
            plan_status_name(p));
    if (p->timed_out && p->status == PLAN_HEURISTIC) { /* the gap the time allowed to prove */
        double gap = p->recompute_time > 0 ? (p->recompute_time - p->bound) / p->recompute_time : 0;
        fprintf(out, " (--time-limit ended the search; gap %.2f%%)", 100 * (gap < 0 ? 0 : gap));
    }
    fprintf(out, "\n\n");
    fprintf(out, "memory at the peak:\n");
    report_breakdown(s, out);
    fprintf(out, "\n%-40s %-14s %-5s %12s  %-9s %12s\n", "tensor", "op", "dtype", "bytes", "decision", "recompute");
    /* block instances in order; an instance with the same tensors (names
     * after the block's prefix, ops, sizes) as the last one printed in full
     * is folded into one line: its totals and what it recomputes */
    int n = g->nodes.n, start = 0, full = -1, full_end = -1;
    while (start < n) {
        while (start < n && !is_candidate(ad, g, start)) start++;
        if (start >= n) break;
        const char *group = graph_node(g, start)->group;
        int end = start + 1; /* one past the group's last candidate */
        for (int i = start + 1; i < n; i++) {
            if (!is_candidate(ad, g, i)) continue;
            if (strcmp(graph_node(g, i)->group, group)) break;
            end = i + 1;
        }
        if (*group && full >= 0 && same_block(ad, g, full, full_end, start, end)) {
            int n_t = 0, n_rc = 0;
            int64_t bytes = 0;
            for (int i = start; i < end; i++)
                if (is_candidate(ad, g, i)) n_t++, n_rc += p->dec[i] != DEC_SAVE, bytes += node_bytes(graph_node(g, i));
            fprintf(out, "[%s] as [%s]: %d tensors, %" PRId64 " bytes, %d %s", group, graph_node(g, full)->group, n_t,
                    bytes, n_rc, p->host_bytes ? "recomputed or offloaded" : "recomputed");
            const char *sep = ": ";
            size_t glen = strlen(group);
            for (int i = start; i < end; i++)
                if (is_candidate(ad, g, i) && p->dec[i] != DEC_SAVE) {
                    const char *nm = graph_node(g, i)->name;
                    fprintf(out, "%s%s", sep, strncmp(nm, group, glen) || nm[glen] != '.' ? nm : nm + glen + 1);
                    sep = ", ";
                }
            fputc('\n', out);
        } else {
            fprintf(out, "[%s]\n", *group ? group : "top level");
            for (int i = start; i < end; i++) {
                if (!is_candidate(ad, g, i)) continue;
                const Node *x = graph_node(g, i);
                fprintf(out, "  %-38s %-14s %-5s %12" PRId64 "  %-9s %9.3f us\n", x->name, op_table[x->op].name,
                        dtype_name(x->dtype), node_bytes(x), decision_name(p->dec[i]), cost_fwd_time(g, x, hw) * 1e6);
            }
            if (*group) full = start, full_end = end;
        }
        start = end;
    }
}
