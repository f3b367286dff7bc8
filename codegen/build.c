/* build.c - turning emitted C into a static library: runs the host C
 * compiler and ar (fork/exec, no shell, so paths need no quoting) and puts
 * the runtime archive and header beside the model's library.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "codegen.h"

#ifndef ACC_RUNTIME_INCLUDE_DEFAULT
#define ACC_RUNTIME_INCLUDE_DEFAULT "runtime"
#endif
#ifndef ACC_RUNTIME_LIB_DEFAULT
#define ACC_RUNTIME_LIB_DEFAULT "libaccrt.a"
#endif
/* Extra flags for compiling and linking generated code: a sanitizer build of
 * acc has a sanitized libaccrt, and what links it must be sanitized too. */
#ifndef ACC_GEN_FLAGS_DEFAULT
#define ACC_GEN_FLAGS_DEFAULT ""
#endif
#ifndef ACC_BLAS_DIR_DEFAULT
#define ACC_BLAS_DIR_DEFAULT "/usr/lib/x86_64-linux-gnu/openblas-openmp"
#endif

static const char *env_or(const char *name, const char *dflt) {
    const char *v = getenv(name);
    return v && *v ? v : dflt;
}

const char *cg_runtime_include(void) { return env_or("ACC_RUNTIME_DIR", ACC_RUNTIME_INCLUDE_DEFAULT); }
const char *cg_runtime_lib(void) { return env_or("ACC_RUNTIME_LIB", ACC_RUNTIME_LIB_DEFAULT); }
const char *cg_gen_flags(void) { return env_or("ACC_GEN_FLAGS", ACC_GEN_FLAGS_DEFAULT); }
const char *cg_blas_dir(void) { return env_or("ACC_BLAS_DIR", ACC_BLAS_DIR_DEFAULT); }

int cg_run(const char *const argv[], FILE *err) {
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        fprintf(err, "acc: error: cannot start %s: %s\n", argv[0], strerror(errno));
        return -1;
    }
    if (pid == 0) {
        execvp(argv[0], (char *const *)(uintptr_t)argv); /* execvp does not modify argv */
        fprintf(stderr, "acc: error: cannot run %s: %s\n", argv[0], strerror(errno));
        _exit(127);
    }
    int status;
    while (waitpid(pid, &status, 0) < 0)
        if (errno != EINTR) return -1;
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return 0;
    if (WIFEXITED(status) && WEXITSTATUS(status) != 127)
        fprintf(err, "acc: error: %s exited with status %d\n", argv[0], WEXITSTATUS(status));
    else if (WIFSIGNALED(status)) fprintf(err, "acc: error: %s was killed by signal %d\n", argv[0], WTERMSIG(status));
    return -1;
}

static int copy_file(const char *from, const char *to, FILE *err) {
    FILE *in = fopen(from, "rb");
    if (!in) {
        fprintf(err, "acc: error: cannot read %s: %s (set ACC_RUNTIME_LIB / ACC_RUNTIME_DIR)\n", from, strerror(errno));
        return -1;
    }
    FILE *out = fopen(to, "wb");
    if (!out) {
        fprintf(err, "acc: error: cannot write %s: %s\n", to, strerror(errno));
        fclose(in);
        return -1;
    }
    char buf[65536];
    size_t n;
    int rc = 0;
    while ((n = fread(buf, 1, sizeof buf, in)) > 0)
        if (fwrite(buf, 1, n, out) != n) rc = -1;
    if (ferror(in)) rc = -1;
    fclose(in);
    if (fclose(out)) rc = -1;
    if (rc) fprintf(err, "acc: error: copying %s to %s failed\n", from, to);
    return rc;
}

/* cc -c DIR/<name>.c -o DIR/<name>.o */
static int compile_c(const char *dir, const char *name, char *obj, size_t obj_size, FILE *err) {
    char src[4096], inc[4200], inc_dev[4200];
    snprintf(src, sizeof src, "%s/%s.c", dir, name);
    snprintf(obj, obj_size, "%s/%s.o", dir, name);
    snprintf(inc, sizeof inc, "-I%s", cg_runtime_include());
    snprintf(inc_dev, sizeof inc_dev, "-I%s/cuda", cg_runtime_include());
    const char *flags = cg_gen_flags();
    const char *cc_argv[] = {
        env_or("CC", "cc"),    "-std=c11", "-O2", "-fopenmp", "-fPIC", inc, inc_dev, "-c", src, "-o", obj,
        *flags ? flags : NULL, NULL};
    return cg_run(cc_argv, err);
}

int cg_build_library(const char *dir, const char *model, const CgTarget *target, FILE *err) {
    char obj[4096], obj_img[4096], lib[4096], rt[4096], hdr_from[4096], hdr_to[4096], name[300];
    bool cuda = target->nvrtc; /* the kernel images are a second object */
    snprintf(lib, sizeof lib, "%s/lib%s.a", dir, model);
    if (compile_c(dir, model, obj, sizeof obj, err)) return -1;
    snprintf(name, sizeof name, "%s_images", model);
    if (cuda && compile_c(dir, name, obj_img, sizeof obj_img, err)) return -1;
    unlink(lib);
    const char *ar_argv[] = {"ar", "rcs", lib, obj, cuda ? obj_img : NULL, NULL};
    if (cg_run(ar_argv, err)) return -1;
    unlink(obj);
    if (cuda) unlink(obj_img);
    snprintf(rt, sizeof rt, "%s/libaccrt.a", dir);
    if (copy_file(cg_runtime_lib(), rt, err)) return -1;
    if (target->device_archive) {
        const char *dev_lib = env_or(target->device_lib_env, target->device_lib_default);
        if (!*dev_lib) {
            fprintf(err, "acc: error: this acc was built without the CUDA Toolkit, so it has no %s\n",
                    target->device_archive);
            return -1;
        }
        snprintf(rt, sizeof rt, "%s/%s", dir, target->device_archive);
        if (copy_file(dev_lib, rt, err)) return -1;
    }
    snprintf(hdr_from, sizeof hdr_from, "%s/accrt.h", cg_runtime_include());
    snprintf(hdr_to, sizeof hdr_to, "%s/accrt.h", dir);
    if (copy_file(hdr_from, hdr_to, err)) return -1;
    return 0;
}
