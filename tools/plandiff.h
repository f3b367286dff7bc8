/* plandiff.h - `acc diff`: compare two plan.json files. */
#ifndef ACC_PLANDIFF_H
#define ACC_PLANDIFF_H

#include <stdio.h>

/* Prints the differences; returns 0 if equal, 1 if different, 2 on bad input. */
int plan_diff(const char *path_a, const char *path_b, FILE *out);

#endif
