/* policy.c - the --policy string, parsed once into a Policy.
 *
 * The driver parses the user's policy here (a usage error names what is
 * wrong); the planner only reads the struct, so an unknown op name or a bad
 * count cannot reach it. Not the policies' decisions: those are the
 * planner's (planner.c, policy_decisions).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "passes.h"

#define POLICY_ERR(...) (err && err_len ? (void)snprintf(err, err_len, __VA_ARGS__) : (void)0)

bool plan_policy_parse(const char *p, Policy *out, char *err, size_t err_len) {
    static const struct {
        const char *name;
        PolicyKind kind;
    } simple[] = {{"none", POL_NONE},
                  {"full", POL_FULL},
                  {"selective", POL_SELECTIVE},
                  {"sqrt", POL_SQRT},
                  {"optimal", POL_OPTIMAL}};
    memset(out, 0, sizeof *out);
    out->text = p;
    for (size_t i = 0; i < sizeof simple / sizeof *simple; i++)
        if (!strcmp(p, simple[i].name)) return out->kind = simple[i].kind, true;
    if (!strncmp(p, "every:", 6) || !strncmp(p, "uniform:", 8)) {
        const char *num = strchr(p, ':') + 1;
        char *end;
        long k = *num >= '0' && *num <= '9' ? strtol(num, &end, 10) : 0;
        if (!(k && !*end && k >= 1 && k <= 100000)) {
            POLICY_ERR("policy '%s': expected a whole number from 1 to 100000 after ':'", p);
            return false;
        }
        out->kind = p[0] == 'e' ? POL_EVERY : POL_UNIFORM;
        out->k = (int)k;
        return true;
    }
    if (!strncmp(p, "ops:", 4)) {
        char buf[256];
        if (strlen(p + 4) >= sizeof buf) { /* not cut short silently */
            POLICY_ERR("policy '%.32s...': the list of ops is longer than %zu characters", p, sizeof buf - 1);
            return false;
        }
        snprintf(buf, sizeof buf, "%s", p + 4);
        size_t len = strlen(buf);
        if (!*buf || buf[0] == ',' || buf[len - 1] == ',' || strstr(buf, ",,")) {
            POLICY_ERR("policy '%s': expected a comma-separated list of op names (none empty)", p);
            return false;
        }
        for (char *tok = strtok(buf, ","); tok; tok = strtok(NULL, ",")) {
            OpKind k = op_lookup(tok);
            if (k == OP_COUNT) {
                POLICY_ERR("policy '%s': unknown op '%s'", p, tok);
                return false;
            }
            out->keep[k] = true;
        }
        out->keep[OP_LINEAR] |= out->keep[OP_MATMUL]; /* a linear is a matmul with its bias (torch's addmm) */
        out->kind = POL_OPS;
        return true;
    }
    POLICY_ERR("unknown policy '%s' (none, full, every:K, uniform:N, selective, ops:LIST, sqrt, optimal)", p);
    return false;
}

Policy plan_policy(const char *p) {
    Policy pol;
    if (!plan_policy_parse(p, &pol, NULL, 0)) acc_panic(__FILE__, __LINE__, "bad built-in policy '%s'", p);
    return pol;
}
