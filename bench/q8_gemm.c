/*
 * q8_gemm.c - the int8 GEMM kernels alone, side by side (docs/performance.md section 13).
 *
 * usage: skycmd-q8-gemm ROWS N_IN N_OUT [CALLS] [COLD]
 *
 * One random [N_OUT][N_IN] matrix made both ways (Q8_0 blocks, sk_q8_build; row-scaled,
 * sk_q8_build_rows; on AMX also in the tiles' K = 64 pair order, "amx rows, K=64", which is
 * what a model load makes there) and ROWS x N_IN activations quantized for each (Q8, row). Prints GOP/s
 * (2 x ROWS x N_IN x N_OUT per call) of every kernel this CPU can run: the best of CALLS
 * (default 60) calls on the same weights (they stay in cache when they fit), then, with
 * COLD = K > 0, the mean over calls that take K copies of the row-scaled matrix in turn
 * (weights from memory, as in a model whose matrices do not fit the caches). Kernels run in
 * interleaved rounds, so a burst of other load slows all of them alike. Not a test: it
 * asserts nothing; test_quant and test_amx hold the kernels to the reference.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "skycmd.h"
#include "kernels/cpu.h"
#include "kernels/q8.h"
#include "quant/outlier_calib.h"

typedef void (*gemm_fn)(const sk_q8_act *, const sk_q8_packed *, size_t, size_t, float *, size_t);

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static uint32_t g_seed = 1;
static float frand(void) {
    g_seed = g_seed * 1664525u + 1013904223u;
    return (float)((g_seed >> 8) % 20001) / 10000.0f - 1.0f;
}

static double best_of(gemm_fn f, const sk_q8_act *a, const sk_q8_packed *p, float *y, int calls) {
    double best = 1e30;
    for (int i = 0; i < calls; i++) {
        const double t0 = now_s();
        f(a, p, 0, p->n_out, y, p->n_out);
        const double t = now_s() - t0;
        if (t < best) best = t;
    }
    return best;
}

int main(int argc, char **argv) {
    if (argc < 4) {
        fprintf(stderr, "usage: skycmd-q8-gemm ROWS N_IN N_OUT [CALLS] [COLD]\n");
        return 2;
    }
    const size_t m = strtoul(argv[1], NULL, 10), k = strtoul(argv[2], NULL, 10),
                 n = strtoul(argv[3], NULL, 10);
    const int calls = argc > 4 ? atoi(argv[4]) : 60, cold = argc > 5 ? atoi(argv[5]) : 0;
    if (!m || !n || !k || k % 32 || k > SK_Q8_ROW_MAX_IN || calls < 1 || cold < 0) {
        fprintf(stderr, "skycmd-q8-gemm: ROWS, N_OUT > 0, N_IN a multiple of 32 (<= %d)\n",
                SK_Q8_ROW_MAX_IN);
        return 2;
    }
    float *w = malloc(n * k * sizeof(float)), *x = malloc(m * k * sizeof(float));
    float *y = malloc(m * n * sizeof(float));
    if (!w || !x || !y) return 1;
    for (size_t i = 0; i < n * k; i++) w[i] = frand() * 0.1f;
    for (size_t i = 0; i < m * k; i++) x[i] = frand();
    sk_err e = {0};
    sk_q8_owned blocks, rows;
    if (sk_q8_build(w, n, k, NULL, NULL, NULL, NULL, 0, "blocks", &blocks, NULL, NULL, &e) ||
        sk_q8_build_rows(w, n, k, NULL, NULL, "rows", &rows, NULL, NULL, &e)) {
        fprintf(stderr, "skycmd-q8-gemm: %s\n", e.msg);
        return 1;
    }
    /* the same row-scaled matrix in the tiles' pair order (what an AMX load makes) */
    sk_q8_owned pairs;
    if (sk_q8_build_rows(w, n, k, NULL, NULL, "pairs", &pairs, NULL, NULL, &e)) {
        fprintf(stderr, "skycmd-q8-gemm: %s\n", e.msg);
        return 1;
    }
    const int have_pairs = sk_q8_relayout_pairs(&pairs.w.p, pairs.panels);
    sk_q8_act ab = {0}, ar = {0};
    if (sk_q8_act_reserve(&ab, m, k) || sk_q8_act_reserve(&ar, m, k)) return 1;
    sk_q8_quantize_act(x, k, m, k, SK_Q8_ACT_Q8, NULL, &ab);
    sk_q8_quantize_act(x, k, m, k, SK_Q8_ACT_ROW, NULL, &ar);

    const int f = sk_cpu_features();
    const int vnni = (f & SK_CPU_AVX512VNNI) && (f & SK_CPU_AVX512BW);
    const int amx = vnni && (f & SK_CPU_AMX_INT8) && sk_amx_usable();
    struct { const char *name; gemm_fn fn; const sk_q8_act *a; const sk_q8_packed *p; int ok, rows; } k_[] = {
        {"avx2 blocks (Q8)", sk_q8_gemm_avx2, &ab, &blocks.w.p, (f & SK_CPU_AVX2) != 0, 0},
        {"vnni blocks (Q8)", sk_q8_gemm_vnni, &ab, &blocks.w.p, vnni, 0},
        {"amx  blocks (Q8)", sk_q8_gemm_amx, &ab, &blocks.w.p, amx, 0},
        {"avx2 rows", sk_q8_gemm_avx2, &ar, &rows.w.p, (f & SK_CPU_AVX2) != 0, 1},
        {"vnni rows", sk_q8_gemm_vnni, &ar, &rows.w.p, vnni, 1},
        {"amx  rows", sk_q8_gemm_amx, &ar, &rows.w.p, amx, 1},
        {"amx  rows, K=64", sk_q8_gemm_amx, &ar, &pairs.w.p, amx && have_pairs, 2},
    };
    const size_t nk = sizeof k_ / sizeof k_[0];
    const double ops = 2.0 * (double)m * (double)k * (double)n;
    double best[sizeof k_ / sizeof k_[0]];
    for (size_t i = 0; i < nk; i++) best[i] = 1e30;
    printf("%zu x %zu x %zu (rows x in x out), cpu features: %s\n", m, k, n, skycmd_cpu_features());
    for (int round = 0; round < 3; round++)
        for (size_t i = 0; i < nk; i++) {
            if (!k_[i].ok) continue;
            const double t = best_of(k_[i].fn, k_[i].a, k_[i].p, y, calls);
            if (t < best[i]) best[i] = t;
        }
    for (size_t i = 0; i < nk; i++)
        if (k_[i].ok)
            printf("  %-18s %8.1f GOP/s  %9.3f ms  (weights in cache, best of %d x 3)\n",
                   k_[i].name, ops / best[i] / 1e9, best[i] * 1e3, calls);
    if (cold) {
        sk_q8_owned *copies = calloc((size_t)cold, sizeof *copies);
        if (!copies) return 1;
        for (int c = 0; c < cold; c++)
            if (sk_q8_build_rows(w, n, k, NULL, NULL, "rows", &copies[c], NULL, NULL, &e)) return 1;
        for (size_t i = 0; i < nk; i++) {
            if (!k_[i].ok || !k_[i].rows) continue;
            double t = 1e30;
            for (int c = 0; c < cold; c++)  /* pair order for that line, the file's for the rest */
                if ((k_[i].rows == 2) != (copies[c].w.p.pairs != 0)) {
                    sk_q8_owned_free(&copies[c]);
                    if (sk_q8_build_rows(w, n, k, NULL, NULL, "rows", &copies[c], NULL, NULL, &e)) return 1;
                    if (k_[i].rows == 2) sk_q8_relayout_pairs(&copies[c].w.p, copies[c].panels);
                }
            for (int round = 0; round < 3; round++) {
                const double t0 = now_s();
                for (int c = 0; c < cold; c++) k_[i].fn(&ar, &copies[c].w.p, 0, n, y, n);
                const double tr = (now_s() - t0) / cold;
                if (tr < t) t = tr;
            }
            printf("  %-18s %8.1f GOP/s  %9.3f ms  (%d matrices in turn, %.1f MB)\n", k_[i].name,
                   ops / t / 1e9, t * 1e3, cold,
                   (double)cold * (double)sk_q8_panel_bytes(n, k) / 1e6);
        }
        for (int c = 0; c < cold; c++) sk_q8_owned_free(&copies[c]);
        free(copies);
    }
    sk_q8_act_free(&ab);
    sk_q8_act_free(&ar);
    sk_q8_owned_free(&blocks);
    sk_q8_owned_free(&rows);
    sk_q8_owned_free(&pairs);
    free(w);
    free(x);
    free(y);
    return 0;
}
