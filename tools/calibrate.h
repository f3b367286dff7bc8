/* calibrate.h - `acc calibrate`: measure this CPU into a hardware profile. */
#ifndef ACC_CALIBRATE_H
#define ACC_CALIBRATE_H

#include <stdio.h>

/* Writes the profile (the format of hw/<name>.hw) named name to out; 0 on success. */
int calibrate(const char *name, FILE *out);

#endif
