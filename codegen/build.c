/* build.c - turning emitted C into a static library: runs the host C
 * compiler and ar (fork/exec, no shell, so paths need no quoting) and puts
 * the runtime archive and header beside the model's library; on request
 * links a shared library of the model and the whole runtime as well.
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

/* Append the words of a space-separated list to argv at *n (at most max). */
static void split_words(const char *list, char *buf, size_t size, const char **argv, int *n, int max) {
    snprintf(buf, size, "%s", list);
    for (char *w = strtok(buf, " "); w && *n < max; w = strtok(NULL, " ")) argv[(*n)++] = w;
}

/* cc -shared -o DIR/lib<model>.so OBJS -Wl,--whole-archive DIR/<archives>
 * -Wl,--no-whole-archive -L<blas> -Wl,-rpath,<blas> LIBS: every runtime
 * object is kept (the model's objects call only part of the API; Python
 * calls the rest), and --no-undefined makes a missing symbol a link error
 * here rather than a failed dlopen later. Position-independent throughout:
 * the model's objects are compiled with -fPIC and CMake builds the runtime
 * archives so. */
static int link_shared(const char *dir, const char *model, const char *obj, const char *obj_img, const CgTarget *target,
                       FILE *err) {
    char so[4096], blas_l[4200], blas_rpath[4200], archives[512], libs[512], flags[1024], paths[8][4200];
    const char *argv[64];
    int n = 0;
    snprintf(so, sizeof so, "%s/lib%s.so", dir, model);
    snprintf(blas_l, sizeof blas_l, "-L%s", cg_blas_dir());
    snprintf(blas_rpath, sizeof blas_rpath, "-Wl,-rpath,%s", cg_blas_dir());
    argv[n++] = env_or("CC", "cc");
    argv[n++] = "-shared";
    argv[n++] = "-fopenmp";
    argv[n++] = "-o";
    argv[n++] = so;
    argv[n++] = obj;
    if (obj_img) argv[n++] = obj_img;
    argv[n++] = "-Wl,--whole-archive";
    const char *names[8];
    int n_names = 0;
    split_words(target->archives, archives, sizeof archives, names, &n_names, 8);
    for (int i = 0; i < n_names; i++) {
        snprintf(paths[i], sizeof paths[i], "%s/%s", dir, names[i]);
        argv[n++] = paths[i];
    }
    argv[n++] = "-Wl,--no-whole-archive";
    argv[n++] = "-Wl,--no-undefined";
    argv[n++] = blas_l;
    argv[n++] = blas_rpath;
    split_words(target->libs, libs, sizeof libs, argv, &n, 40);
    split_words(cg_gen_flags(), flags, sizeof flags, argv, &n, 60);
    argv[n] = NULL;
    unlink(so);
    return cg_run(argv, err);
}

/* An optional runtime library (the communicators) and its header, beside
 * the model's when acc was built with it (next to libaccrt.a). */
static int copy_sibling(const char *archive, const char *header, const char *dir, FILE *err) {
    char from[4096], to[4096];
    const char *rt = cg_runtime_lib(), *slash = strrchr(rt, '/');
    snprintf(from, sizeof from, "%.*s%s", slash ? (int)(slash - rt + 1) : 0, rt, archive);
    if (access(from, R_OK)) return 0; /* not built */
    snprintf(to, sizeof to, "%s/%s", dir, archive);
    if (copy_file(from, to, err)) return -1;
    snprintf(from, sizeof from, "%s/%s", cg_runtime_include(), header);
    snprintf(to, sizeof to, "%s/%s", dir, header);
    return copy_file(from, to, err);
}

int cg_build_library(const char *dir, const char *model, const CgTarget *target, bool shared, FILE *err) {
    char obj[4096], obj_img[4096], lib[4096], rt[4096], hdr_from[4096], hdr_to[4096], name[300];
    bool cuda = target->nvrtc; /* the kernel images are a second object */
    snprintf(lib, sizeof lib, "%s/lib%s.a", dir, model);
    if (compile_c(dir, model, obj, sizeof obj, err)) return -1;
    snprintf(name, sizeof name, "%s_images", model);
    if (cuda && compile_c(dir, name, obj_img, sizeof obj_img, err)) return -1;
    unlink(lib);
    const char *ar_argv[] = {"ar", "rcs", lib, obj, cuda ? obj_img : NULL, NULL};
    int rc = cg_run(ar_argv, err);
    snprintf(rt, sizeof rt, "%s/libaccrt.a", dir);
    if (!rc) rc = copy_file(cg_runtime_lib(), rt, err);
    if (!rc && target->device_archive) {
        const char *dev_lib = env_or(target->device_lib_env, target->device_lib_default);
        if (!*dev_lib) {
            fprintf(err, "acc: error: this acc was built without the CUDA Toolkit, so it has no %s\n",
                    target->device_archive);
            rc = -1;
        } else {
            snprintf(rt, sizeof rt, "%s/%s", dir, target->device_archive);
            rc = copy_file(dev_lib, rt, err);
        }
    }
    if (!rc && shared) rc = link_shared(dir, model, obj, cuda ? obj_img : NULL, target, err);
    if (!shared) { /* a shared library of an earlier compile would no longer match lib<model>.a */
        char so[4096];
        snprintf(so, sizeof so, "%s/lib%s.so", dir, model);
        unlink(so);
    }
    unlink(obj);
    if (cuda) unlink(obj_img);
    if (rc) return -1;
    snprintf(hdr_from, sizeof hdr_from, "%s/accrt.h", cg_runtime_include());
    snprintf(hdr_to, sizeof hdr_to, "%s/accrt.h", dir);
    if (copy_file(hdr_from, hdr_to, err)) return -1;
    /* the communicators: MPI for any target, NCCL for the cuda target */
    if (copy_sibling("libaccrt_mpi.a", "accrt_mpi.h", dir, err)) return -1;
    return target->nvrtc ? copy_sibling("libaccrt_nccl.a", "accrt_nccl.h", dir, err) : 0;
}
