/* cost_model.c - hardware profiles and the roofline time of each op.
 *
 * requires: the op table's FLOP rules. provides: a node's forward time on a
 * profile: max(FLOPs / rate, bytes / bandwidth) + launch latency, where GEMM-like
 * ops (matmul, linear, attention) use the matmul rate (its bf16 rate on bf16
 * tensors); bytes come from the tensors' dtypes. This is what the planner
 * minimises: recompute time, not FLOPs, so a memory-bound op over a large
 * tensor weighs what it costs.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "passes.h"

#ifndef ACC_HW_DIR
#define ACC_HW_DIR "hw"
#endif

bool hw_load(const char *name, HwProfile *hw, char *err, size_t err_len) {
    char path[4096];
    size_t n = strlen(name);
    const char *dir = getenv("ACC_HW_DIR") && *getenv("ACC_HW_DIR") ? getenv("ACC_HW_DIR") : ACC_HW_DIR;
    if (n > 3 && !strcmp(name + n - 3, ".hw")) snprintf(path, sizeof path, "%s", name);
    else snprintf(path, sizeof path, "%s/%s.hw", dir, name);
    FILE *f = fopen(path, "r");
    if (!f) {
        snprintf(err, err_len, "no hardware profile '%s' (%s: %s)", name, path, strerror(errno));
        return false;
    }
    memset(hw, 0, sizeof *hw);
    char line[512];
    int lineno = 0;
    bool ok = true;
    while (ok && fgets(line, sizeof line, f)) {
        lineno++;
        char *hash = strchr(line, '#');
        if (hash) *hash = 0;
        char key[64], val[128];
        if (sscanf(line, " %63[a-z_0-9] = %127s", key, val) != 2) {
            if (strspn(line, " \t\r\n") != strlen(line)) {
                snprintf(err, err_len, "%s:%d: expected 'key = value'", path, lineno);
                ok = false;
            }
            continue;
        }
        char *end;
        double v = strtod(val, &end);
        if (!strcmp(key, "name")) {
            snprintf(hw->name, sizeof hw->name, "%s", val);
            continue;
        }
        double *field = !strcmp(key, "matmul_flops")        ? &hw->matmul_flops
                        : !strcmp(key, "matmul_flops_bf16") ? &hw->matmul_flops_bf16
                        : !strcmp(key, "vector_flops")      ? &hw->vector_flops
                        : !strcmp(key, "mem_bw")            ? &hw->mem_bw
                        : !strcmp(key, "launch_latency")    ? &hw->launch_latency
                        : !strcmp(key, "host_bw")           ? &hw->host_bw
                        : !strcmp(key, "host_latency")      ? &hw->host_latency
                        : !strcmp(key, "coll_bw")           ? &hw->coll_bw
                        : !strcmp(key, "coll_latency")      ? &hw->coll_latency
                                                            : NULL;
        if (!field || *end || !(v >= 0)) {
            snprintf(err, err_len, "%s:%d: unknown key or bad value '%s = %s'", path, lineno, key, val);
            ok = false;
            continue;
        }
        *field = v;
    }
    fclose(f);
    if (ok && (!(hw->matmul_flops > 0) || !(hw->vector_flops > 0) || !(hw->mem_bw > 0))) {
        snprintf(err, err_len, "%s: matmul_flops, vector_flops and mem_bw must be positive", path);
        ok = false;
    }
    if (ok && !hw->name[0]) snprintf(hw->name, sizeof hw->name, "%s", name);
    if (ok && !(hw->matmul_flops_bf16 > 0)) hw->matmul_flops_bf16 = hw->matmul_flops;
    if (ok && !(hw->host_bw > 0)) hw->host_bw = hw->mem_bw / 2;
    if (ok && !(hw->host_latency > 0)) hw->host_latency = hw->launch_latency;
    if (ok && !(hw->coll_bw > 0)) hw->coll_bw = hw->host_bw;
    if (ok && !(hw->coll_latency > 0)) hw->coll_latency = hw->host_latency;
    return ok;
}

double cost_transfer_time(const Node *n, const HwProfile *hw) {
    return 2 * ((double)node_bytes(n) / hw->host_bw + hw->host_latency);
}

double cost_bytes(const Graph *g, const Node *n) {
    double b = (double)node_bytes(n);
    for (int j = 0; j < n->n_in; j++) b += (double)node_bytes(graph_node(g, n->in[j]));
    return b;
}

double cost_fwd_time(const Graph *g, const Node *n, const HwProfile *hw) {
    if (op_table[n->op].flags & OPF_LEAF) return 0;
    double flops = op_table[n->op].flops(g, n);
    bool gemm = n->op == OP_MATMUL || n->op == OP_LINEAR || n->op == OP_ATTENTION;
    double rate = !gemm ? hw->vector_flops : n->dtype == DT_BF16 ? hw->matmul_flops_bf16 : hw->matmul_flops;
    double t_compute = flops / rate, t_mem = cost_bytes(g, n) / hw->mem_bw;
    return (t_compute > t_mem ? t_compute : t_mem) + hw->launch_latency;
}
