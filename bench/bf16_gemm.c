/*
 * bf16_gemm.c - the AMX BF16 GEMM (bf16x3) alone, against its instruction count
 * (docs/performance.md section 16).
 *
 * usage: skycmd-bf16-gemm ROWS N_IN N_OUT [CALLS]
 *
 * One random [N_OUT][N_IN] f32 matrix packed for the tiles as a SKYCMD_WEIGHTS_BF16X3 load
 * packs it, ROWS x N_IN activations. Prints the best of CALLS (default 2000, fewer for large
 * shapes) calls of sk_gemm_amx_bf16 and of the f32 FMA kernel (sk_gemm_avx512) on the same
 * data, the number of TDPBF16PS instructions the tile kernel issues (16-row blocks x 16-column
 * panels x 32-deep steps x 3 products) and the time per instruction: one TDPBF16PS takes 16
 * cycles of the tile unit whatever its row count, so that figure against the unit's own rate
 * (4.27 ns on the Sapphire Rapids guest of section 16) is the kernel's efficiency. Not a test:
 * test_amx holds the kernel to the scalar reference.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kernels/cpu.h"
#include "kernels/kernels.h"

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int parse(const char *s, size_t *out) {
    char *end;
    unsigned long long v = strtoull(s, &end, 10);
    if (!*s || *end || v == 0 || v > (1u << 20)) return -1;
    *out = (size_t)v;
    return 0;
}

typedef void (*gemm_fn)(const float *, size_t, size_t, const sk_packed *, float *, size_t);

static double best_of(gemm_fn f, const float *x, size_t rows, const sk_packed *w, float *y,
                      size_t calls) {
    double best = 1e30;
    for (size_t i = 0; i < calls; i++) {
        double t = now_s();
        f(x, w->n_in, rows, w, y, w->n_out);
        t = now_s() - t;
        if (t < best) best = t;
    }
    return best;
}

int main(int argc, char **argv) {
    size_t rows, k, n, calls = 0;
    if (argc < 4 || argc > 5 || parse(argv[1], &rows) || parse(argv[2], &k) || parse(argv[3], &n) ||
        (argc == 5 && parse(argv[4], &calls))) {
        fprintf(stderr, "usage: skycmd-bf16-gemm ROWS N_IN N_OUT [CALLS]  (each 1..1048576)\n");
        return 2;
    }
    const int f = sk_cpu_features();
    if (!sk_amx_usable() || !(f & SK_CPU_AMX_BF16) || !(f & SK_CPU_AVX512BF16)) {
        fprintf(stderr, "skycmd-bf16-gemm: this CPU (or its OS) gives no AMX-BF16 tiles\n");
        return 1;
    }
    if (!calls) calls = rows * k * n > 10000000 ? 20 : 2000;
    float *w = malloc(n * k * sizeof *w), *x = malloc(rows * k * sizeof *x);
    float *y = malloc(rows * n * sizeof *y), *bias = calloc((n + 15) / 16 * 16, sizeof *bias);
    const size_t pf = sk_packed_floats(n, k), el = sk_amx_bf16_packed_elems(n, k);
    float *pk = pf ? aligned_alloc(64, (pf * 4 + 63) / 64 * 64) : NULL;
    uint16_t *tiles = el ? aligned_alloc(64, (el * 4 + 63) / 64 * 64) : NULL;
    if (!w || !x || !y || !bias || !pk || !tiles) {
        fprintf(stderr, "skycmd-bf16-gemm: out of memory\n");
        return 1;
    }
    srand(42);
    for (size_t i = 0; i < n * k; i++) w[i] = (float)rand() / (float)RAND_MAX - 0.5f;
    for (size_t i = 0; i < rows * k; i++) x[i] = (float)rand() / (float)RAND_MAX - 0.5f;
    sk_pack(w, k, n, k, pk);
    /* no bias, as ModernBERT's encoder (biases off) */
    sk_packed f32 = {.data = pk, .bias = NULL, .n_in = k, .n_out = n, .pstride = k * 16};
    sk_packed amx = f32;
    amx.wtype = SK_PACK_AMX_BF16X3;
    sk_pack_amx_bf16(&f32, amx.wtype, tiles);
    amx.data = tiles;
    amx.pstride = (k + 31) / 32 * 32 * 16;
    double t_amx = 1e30, t_f32 = 1e30;
    for (int round = 0; round < 3; round++) {  /* interleaved: other load slows both alike */
        double a = best_of(sk_gemm_amx_bf16, x, rows, &amx, y, calls);
        double b = best_of(sk_gemm_avx512, x, rows, &f32, y, calls);
        if (a < t_amx) t_amx = a;
        if (b < t_f32) t_f32 = b;
    }
    const double tdp = (double)((rows + 15) / 16) * (double)((n + 15) / 16) * (double)((k + 31) / 32) * 3;
    const double flop = 2.0 * (double)rows * (double)k * (double)n;
    printf("%zu x %zu -> %zu: bf16x3 tiles %.2f us (%.0f TDPBF16PS, %.2f ns each, %.1f GFLOP/s), "
           "f32 FMA %.2f us (%.1f GFLOP/s), tiles / FMA speed %.2fx\n",
           rows, k, n, t_amx * 1e6, tdp, t_amx * 1e9 / tdp, flop / t_amx * 1e-9, t_f32 * 1e6,
           flop / t_f32 * 1e-9, t_f32 / t_amx);
    free(w), free(x), free(y), free(bias), free(pk), free(tiles);
    return 0;
}
