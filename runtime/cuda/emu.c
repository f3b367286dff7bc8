/* emu.c - runs CUDA thread blocks on the CPU: the device emulator's executor.
 *
 * A kernel that does not synchronize runs its threads as plain calls, one
 * after another. A kernel that does (abi.h says which) runs every thread of a
 * block as a coroutine with its own stack; __syncthreads parks a thread until
 * every thread of the block has arrived; a warp shuffle parks it until the
 * 32 lanes of its warp have deposited their values, which is when CUDA's
 * converged warp would exchange them, and __syncwarp is the same warp
 * barrier without a value. A barrier that some thread never reaches (it
 * returned, or waits at another one) is reported as an error, not a hang,
 * and so are the lanes of one warp meeting at different warp barriers (a
 * shuffle and a __syncwarp). Blocks run one after another, so results do not
 * depend on any thread count.
 *
 * A cp.async copy (emu_cp_async) fills its destination with NaN when it is
 * issued and lands at the issuing thread's next wait (emu_cp_async_wait):
 * on a GPU the destination is undefined in between, so a read before the
 * wait (a missing wait or barrier) and a copy into data other threads still
 * read both show as NaN; a thread that ends with copies it never waited for,
 * or a copy not aligned to its size, is an error.
 *
 * Not emulated: memory races between threads of a block without a barrier
 * (coroutines only switch at barriers, so such a race reads consistently
 * here), dynamic shared memory, clusters, atomics.
 */
#define _XOPEN_SOURCE 700
#include "emu_exec.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <ucontext.h>

#if defined(__SANITIZE_ADDRESS__)
#define EMU_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define EMU_ASAN 1
#endif
#endif
#ifdef EMU_ASAN
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
#endif

enum { TH_RUN, TH_BLOCK, TH_WARP, TH_DONE };

/* Switching between the scheduler and a thread: on x86-64 a few
 * instructions (callee-saved registers and the stack pointer), elsewhere
 * ucontext (which also saves the signal mask: a system call per switch). */
#if defined(__x86_64__) && defined(__ELF__)
#define EMU_FAST_SWITCH 1
/* emu_swap(&save, next): push the callee-saved registers, store the stack
 * pointer in *save, load next, pop its registers and return into it. */
void emu_swap(void **save, void *next);
__asm__(".text\n"
        ".globl emu_swap\n"
        ".hidden emu_swap\n"
        ".type emu_swap,@function\n"
        "emu_swap:\n"
        "    pushq %rbp\n    pushq %rbx\n    pushq %r12\n    pushq %r13\n    pushq %r14\n    pushq %r15\n"
        "    movq %rsp, (%rdi)\n"
        "    movq %rsi, %rsp\n"
        "    popq %r15\n    popq %r14\n    popq %r13\n    popq %r12\n    popq %rbx\n    popq %rbp\n"
        "    ret\n"
        ".size emu_swap, .-emu_swap\n");
typedef void *EmuContext;
#else
typedef ucontext_t EmuContext;
#endif

/* What a lane parked at a warp barrier is waiting in. */
enum { WB_SHFL, WB_SYNCWARP, WB_LDSM };

typedef struct {
    EmuContext uc;
    emu_dim3 idx;
    int state;
    int warp_kind;                  /* WB_*, while parked at a warp barrier */
    float shfl_in, shfl_out;        /* a shuffle's deposited value and its result */
    int shfl_lane;                  /* the lane to read from */
    const unsigned short *ldsm_row; /* an ldmatrix's row address, its shape and result */
    int ldsm_n, ldsm_trans;
    uint32_t ldsm_out[4];
    struct EmuCopy *pend; /* cp.async copies not landed yet */
    int n_pend, cap_pend;
} EmuThread;

typedef struct EmuCopy {
    void *dst;
    const void *src;
    int size, bytes; /* copy `bytes` of `size`, zero-fill the rest */
} EmuCopy;

typedef struct {
    emu_kernel fn;
    const acc_kargs *args;
    emu_dim3 grid, block, block_idx;
    int n_threads, cur;
    int sync; /* coroutines (the kernel synchronizes) */
    EmuThread *th;
    char *stacks;
    size_t stack_bytes;
    EmuContext main_uc;
    int block_waiting;    /* threads parked at __syncthreads */
    int warp_waiting[32]; /* lanes parked at a warp barrier, per warp */
    const char *error;
#ifdef EMU_ASAN
    void *fake_stack;
    const void *main_bottom;
    size_t main_size;
#endif
} Emu;

static _Thread_local Emu *emu_now;       /* the launch this OS thread is running */
static _Thread_local emu_dim3 plain_idx; /* thread index when running plainly */

static EmuThread *self(void) { return &emu_now->th[emu_now->cur]; }

const emu_dim3 *emu_thread_idx(void) { return emu_now->sync ? &self()->idx : &plain_idx; }
const emu_dim3 *emu_block_idx(void) { return &emu_now->block_idx; }
const emu_dim3 *emu_block_dim(void) { return &emu_now->block; }
const emu_dim3 *emu_grid_dim(void) { return &emu_now->grid; }

/* Switch from thread `cur` back to the scheduler, or from the scheduler to
 * thread `cur`; tells AddressSanitizer about the change of stacks. */
static void swap_to(EmuContext *save, EmuContext *next) {
#ifdef EMU_FAST_SWITCH
    emu_swap(save, *next);
#else
    swapcontext(save, next);
#endif
}

static void to_scheduler(Emu *e) {
#ifdef EMU_ASAN
    void *fake = NULL;
    __sanitizer_start_switch_fiber(&fake, e->main_bottom, e->main_size);
    swap_to(&e->th[e->cur].uc, &e->main_uc);
    __sanitizer_finish_switch_fiber(fake, NULL, NULL);
#else
    swap_to(&e->th[e->cur].uc, &e->main_uc);
#endif
}

static void to_thread(Emu *e, int t) {
    e->cur = t;
#ifdef EMU_ASAN
    __sanitizer_start_switch_fiber(&e->fake_stack, e->stacks + (size_t)t * e->stack_bytes, e->stack_bytes);
    swap_to(&e->main_uc, &e->th[t].uc);
    __sanitizer_finish_switch_fiber(e->fake_stack, &e->main_bottom, &e->main_size);
#else
    swap_to(&e->main_uc, &e->th[t].uc);
#endif
}

/* abi.h declared the running kernel as not synchronizing: it cannot park */
static void fail_sync(const char *what) {
    if (!emu_now->error) emu_now->error = what;
}

void emu_syncthreads(void) {
    Emu *e = emu_now;
    if (!e->sync) {
        fail_sync("__syncthreads in a kernel that abi.h lists as not synchronizing");
        return;
    }
    EmuThread *t = self();
    if (++e->block_waiting == e->n_threads) {
        e->block_waiting = 0;
        for (int i = 0; i < e->n_threads; i++)
            if (e->th[i].state == TH_BLOCK) e->th[i].state = TH_RUN;
        return;
    }
    t->state = TH_BLOCK;
    to_scheduler(e);
}

/* ldmatrix.m8n8.xN[.trans].b16 for the 32 lanes w of a warp that all
 * arrived with their row addresses: matrix i's row r is 8 elements from the
 * address of lane 8i + r; lane l receives, in register i, matrix i's row
 * l / 4 at columns 2 (l % 4) and 2 (l % 4) + 1 (trans: column l / 4 of rows
 * 2 (l % 4) and 2 (l % 4) + 1), the lower index in the low half. The shape
 * must agree across the warp and every row address used must be 16-byte
 * aligned, as the hardware requires. */
static void ldsm_exchange(Emu *e, EmuThread *w) {
    int n = w[0].ldsm_n, trans = w[0].ldsm_trans;
    for (int l = 0; l < 32; l++)
        if ((w[l].ldsm_n != n || w[l].ldsm_trans != trans) && !e->error)
            e->error = "the lanes of a warp at an ldmatrix of different shapes";
    for (int l = 0; l < 8 * n; l++)
        if (((uintptr_t)w[l].ldsm_row & 15) && !e->error) e->error = "an ldmatrix row address not 16-byte aligned";
    if (e->error) return;
    for (int l = 0; l < 32; l++)
        for (int i = 0; i < n; i++) {
            int q = l & 3, g = l >> 2;
            const unsigned short *lo = trans ? w[8 * i + 2 * q].ldsm_row + g : w[8 * i + g].ldsm_row + 2 * q;
            const unsigned short *hi = trans ? w[8 * i + 2 * q + 1].ldsm_row + g : lo + 1;
            w[l].ldsm_out[i] = (uint32_t)*lo | (uint32_t)*hi << 16;
        }
}

/* Park the running lane at a warp barrier of the given kind until the 32
 * lanes of its warp have arrived; the last one to arrive checks that they all
 * came to the same kind of barrier, exchanges the shuffle values and lets the
 * warp go on. */
static void warp_barrier(Emu *e, int kind) {
    int me = e->cur, warp = me / 32;
    EmuThread *t = &e->th[me];
    t->warp_kind = kind;
    if (++e->warp_waiting[warp] == 32) {
        e->warp_waiting[warp] = 0;
        EmuThread *w = &e->th[warp * 32];
        for (int i = 0; i < 32; i++)
            if (w[i].warp_kind != kind && !e->error)
                e->error = "the lanes of a warp at different warp barriers (a shuffle and __syncwarp)";
        if (kind == WB_SHFL)
            for (int i = 0; i < 32; i++) w[i].shfl_out = w[w[i].shfl_lane].shfl_in;
        if (kind == WB_LDSM) ldsm_exchange(e, w);
        for (int i = 0; i < 32; i++)
            if (w[i].state == TH_WARP) w[i].state = TH_RUN;
        return;
    }
    t->state = TH_WARP;
    to_scheduler(e);
}

float emu_shfl(unsigned mask, float v, int src_lane) {
    Emu *e = emu_now;
    if (!e->sync) {
        fail_sync("a warp shuffle in a kernel that abi.h lists as not synchronizing");
        return v;
    }
    if (mask != 0xffffffffu && !e->error) e->error = "a warp shuffle with a partial mask (not emulated)";
    EmuThread *t = self();
    t->shfl_in = v;
    t->shfl_lane = src_lane & 31;
    warp_barrier(e, WB_SHFL);
    return t->shfl_out;
}

void emu_ldmatrix(uint32_t *r, int n, int trans, const unsigned short *row) {
    Emu *e = emu_now;
    if (!e->sync) {
        fail_sync("an ldmatrix in a kernel that abi.h lists as not synchronizing");
        return;
    }
    EmuThread *t = self();
    t->ldsm_row = row;
    t->ldsm_n = n;
    t->ldsm_trans = trans;
    warp_barrier(e, WB_LDSM);
    for (int i = 0; i < n; i++) r[i] = t->ldsm_out[i];
}

float emu_shfl_xor(unsigned mask, float v, int lane_mask) { return emu_shfl(mask, v, (emu_now->cur % 32) ^ lane_mask); }

void emu_syncwarp(void) {
    Emu *e = emu_now;
    if (!e->sync) {
        fail_sync("__syncwarp in a kernel that abi.h lists as not synchronizing");
        return;
    }
    warp_barrier(e, WB_SYNCWARP);
}

static void land(const EmuCopy *c) {
    memcpy(c->dst, c->src, (size_t)c->bytes);
    memset((char *)c->dst + c->bytes, 0, (size_t)(c->size - c->bytes));
}

void emu_cp_async(void *dst, const void *src, int size, int bytes) {
    EmuCopy c = {dst, src, size, bytes};
    Emu *e = emu_now;
    if (!e->sync) {
        land(&c);
        return;
    }
    if (((uintptr_t)dst | (uintptr_t)src) % (uintptr_t)size) {
        if (!e->error) e->error = "a cp.async copy not aligned to its size (the GPU faults)";
        return;
    }
    EmuThread *th = self();
    if (th->n_pend == th->cap_pend) {
        int cap = th->cap_pend ? 2 * th->cap_pend : 16;
        EmuCopy *p = realloc(th->pend, (size_t)cap * sizeof *p);
        if (!p) {
            land(&c);
            if (!e->error) e->error = "out of memory for cp.async copies";
            return;
        }
        th->pend = p;
        th->cap_pend = cap;
    }
    th->pend[th->n_pend++] = c;
    memset(dst, 0xff, (size_t)size); /* NaN until the copy lands */
}

void emu_cp_async_wait(void) {
    if (!emu_now->sync) return;
    EmuThread *th = self();
    for (int i = 0; i < th->n_pend; i++) land(&th->pend[i]);
    th->n_pend = 0;
}

static void thread_main(void) {
    Emu *e = emu_now;
#ifdef EMU_ASAN
    __sanitizer_finish_switch_fiber(NULL, &e->main_bottom, &e->main_size);
#endif
    e->fn(*e->args);
    e = emu_now;
    if (e->th[e->cur].n_pend && !e->error) e->error = "a thread ended with cp.async copies it never waited for";
    e->th[e->cur].n_pend = 0;
    e->th[e->cur].state = TH_DONE;
#ifdef EMU_ASAN
    __sanitizer_start_switch_fiber(NULL, e->main_bottom, e->main_size);
#endif
#ifdef EMU_FAST_SWITCH
    void *dead;
    emu_swap(&dead, e->main_uc); /* never resumed */
#else
    setcontext(&e->main_uc);
#endif
}

/* A fresh context that starts in thread_main on the given stack. */
static void start_context(EmuContext *uc, char *stack, size_t size) {
#ifdef EMU_ASAN
    /* the stack held an earlier thread's frames: forget their redzones */
    __asan_unpoison_memory_region(stack, size);
#endif
#ifdef EMU_FAST_SWITCH
    /* emu_swap pops six registers and returns: lay out zeros for them, then
     * thread_main's address, then a fake return address, so that thread_main
     * starts with the stack aligned as the ABI requires after a call */
    uintptr_t top = ((uintptr_t)(stack + size)) & ~(uintptr_t)15;
    void **sp = (void **)top - 8;
    for (int i = 0; i < 6; i++) sp[i] = NULL;
    sp[6] = (void *)(uintptr_t)thread_main;
    sp[7] = NULL;
    *uc = sp;
#else
    getcontext(uc);
    uc->uc_stack.ss_sp = stack;
    uc->uc_stack.ss_size = size;
    uc->uc_link = NULL;
    makecontext(uc, thread_main, 0);
#endif
}

/* Run one block whose threads are coroutines; returns an error or NULL. */
static const char *run_block_sync(Emu *e) {
    for (int t = 0; t < e->n_threads; t++) {
        EmuThread *th = &e->th[t];
        th->idx = (emu_dim3){(unsigned)t % e->block.x, (unsigned)t / e->block.x % e->block.y,
                             (unsigned)t / (e->block.x * e->block.y)};
        th->state = TH_RUN;
        th->n_pend = 0;
        start_context(&th->uc, e->stacks + (size_t)t * e->stack_bytes, e->stack_bytes);
    }
    e->block_waiting = 0;
    memset(e->warp_waiting, 0, sizeof e->warp_waiting);
    for (;;) {
        int ran = 0, done = 0;
        for (int t = 0; t < e->n_threads; t++) {
            if (e->th[t].state == TH_RUN) {
                to_thread(e, t);
                ran = 1;
            }
            if (e->th[t].state == TH_DONE) done++;
        }
        if (e->error) return e->error;
        if (done == e->n_threads) return NULL;
        if (!ran) return "a barrier or warp shuffle that not every thread reached (divergent __syncthreads)";
    }
}

const char *emu_launch(emu_kernel fn, int sync, emu_dim3 grid, emu_dim3 block, const acc_kargs *args) {
    Emu e = {0};
    e.fn = fn;
    e.args = args;
    e.grid = grid;
    e.block = block;
    e.n_threads = (int)(block.x * block.y * block.z);
    e.sync = sync;
    if (e.n_threads < 1 || e.n_threads > 1024 || grid.x < 1 || grid.y < 1 || grid.z < 1)
        return "launch geometry out of range";
    if (sync && e.n_threads % 32) return "a synchronizing kernel launched with a partial warp";
    Emu *outer = emu_now;
    emu_now = &e;
    const char *err = NULL;
    if (sync) {
#ifdef EMU_ASAN
        e.stack_bytes = 256 * 1024;
#else
        e.stack_bytes = 64 * 1024;
#endif
        e.th = calloc((size_t)e.n_threads, sizeof *e.th);
        e.stacks = malloc((size_t)e.n_threads * e.stack_bytes);
        if (!e.th || !e.stacks) err = "out of memory for thread stacks";
    }
    for (unsigned z = 0; !err && z < grid.z; z++)
        for (unsigned y = 0; !err && y < grid.y; y++)
            for (unsigned x = 0; !err && x < grid.x; x++) {
                e.block_idx = (emu_dim3){x, y, z};
                if (sync) {
                    err = run_block_sync(&e);
                    continue;
                }
                for (int t = 0; t < e.n_threads; t++) {
                    plain_idx = (emu_dim3){(unsigned)t % block.x, (unsigned)t / block.x % block.y,
                                           (unsigned)t / (block.x * block.y)};
                    fn(*args);
                }
                err = e.error;
            }
    for (int t = 0; e.th && t < e.n_threads; t++) free(e.th[t].pend);
    free(e.th);
    free(e.stacks);
    emu_now = outer;
    return err;
}
