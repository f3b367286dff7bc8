/* glpk_guard.h - every use of GLPK runs under glpk_guarded (glpk_guard.c).
 * Shared by the model planner (planner/) and the planner of published
 * graphs (dag/). */
#ifndef ACC_GLPK_GUARD_H
#define ACC_GLPK_GUARD_H

#include <stdbool.h>
#include <stddef.h>

/* Run body(arg) with GLPK's terminal output captured (not printed) and an
 * error hook installed. GLPK answers an internal error or a misuse of its
 * API by printing a message and calling abort(); here the hook jumps back
 * instead, GLPK's environment is freed (every problem object with it: the
 * body's problem pointers are dangling then) and false is returned with
 * GLPK's message in err. Memory the body took from malloc and had not freed
 * yet is lost on that path. A run inside a run is the outer one's: an error
 * ends the outermost run, whose problems are gone too. */
bool glpk_guarded(void (*body)(void *arg), void *arg, char *err, size_t err_len);

#endif
