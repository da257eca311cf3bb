/*
 * fuzz_calibrate.c - libFuzzer target for the temperature calibration (`skycmd calibrate`):
 * the labelled JSONL file and the records it becomes.
 *
 * Two kinds of input, told apart by the first byte:
 *  - '{' or ' ': a labelled JSONL file (a /v1/systemone request per line plus "targets" or
 *    "expected"), read from memory by skycmd_calibrate's own work (sk_calibrate_stream) on
 *    fuzz_model's smallest seed (SKYCMD_FUZZ_TINY_MODEL: hidden size 32, 407 tokens),
 *    opened once (opening it for each input through skycmd_calibrate held the target to
 *    about 600 executions a second), without an output file, with and without the
 *    abstention fit. Every line that parses runs the forward pass: such inputs are the slow
 *    ones. The public function's own steps (arguments, the file, the open) are tested by
 *    test_calibrate.
 *  - anything else: binary records for the fit itself (src/decide/temperature_fit.c), fast:
 *    per record a type, an option count k (1..12), k logits and k targets from the bytes
 *    (non-finite values included, which sk_calib_add must refuse), repeated so that types
 *    pass the fit's floor; then the fit, the temperatures, the ECE of every type and the
 *    abstention thresholds. Checks: the fit's temperatures are finite and positive, the
 *    ECE is NaN (no record) or in [0, 1].
 * Seeds: corpus/calibrate/ (small labelled files in the docs/calibrate.md format, records).
 */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api.h"
#include "decide/temperature_fit.h"
#include "skycmd.h"

static skycmd_model *g_model;
static skycmd_options *g_opts[2];

static void cleanup(void) {
    skycmd_model_free(g_model);
    for (int i = 0; i < 2; i++) skycmd_options_free(g_opts[i]);
}

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc;
    (void)argv;
    if (g_model) return 0;
    if (skycmd_model_open(SKYCMD_FUZZ_TINY_MODEL, NULL, &g_model, NULL) != SKYCMD_OK) __builtin_trap();
    atexit(cleanup);
    for (int i = 0; i < 2; i++) {
        if (!(g_opts[i] = skycmd_options_new())) __builtin_trap();
        skycmd_options_set_int(g_opts[i], SKYCMD_OPT_JSON, i);
        skycmd_options_set_int(g_opts[i], SKYCMD_OPT_CALIB_ABSTENTION, i);
        skycmd_options_set_int(g_opts[i], SKYCMD_OPT_CALIB_ABSTAIN_MIN_N, 2);
    }
    return 0;
}

static void labelled(const uint8_t *data, size_t size) {
    FILE *f = fmemopen((void *)data, size, "rb");
    if (!f) __builtin_trap();
    char *report = NULL;
    sk_err e = {0};
    int st = sk_calibrate_stream(g_model, "tiny.gguf", f, "labelled.jsonl", size, NULL, g_opts[size & 1], &report, &e);
    fclose(f);
    if (st == SKYCMD_OK && (!report || !report[0])) __builtin_trap();
    if (st != SKYCMD_OK && (report || !e.msg[0])) __builtin_trap();
    skycmd_string_free(report);
}

static float f_of(const uint8_t *p, int raw) {
    if (raw) {
        float f;
        memcpy(&f, p, sizeof f);
        return f;
    }
    return (float)(int8_t)p[0] / 8.0f;
}

static void records(const uint8_t *data, size_t size) {
    sk_calib_set set;
    memset(&set, 0, sizeof set);
    size_t pos = 1;
    int raw = data[0] & 1;
    size_t vbytes = raw ? 4 : 1;
    while (pos + 2 <= size && set.n < 4096) {
        int qt = data[pos] % 3;
        size_t k = 1 + data[pos] / 3 % 12;
        size_t rep = 1 + data[pos + 1] % 32;
        pos += 2;
        if (pos + 2 * k * vbytes > size) break;
        float z[12];
        double t[12];
        for (size_t j = 0; j < k; j++) z[j] = f_of(data + pos + j * vbytes, raw);
        for (size_t j = 0; j < k; j++) t[j] = (double)f_of(data + pos + (k + j) * vbytes, raw);
        pos += 2 * k * vbytes;
        sk_err e = {0};
        for (size_t r = 0; r < rep; r++)
            if (sk_calib_add(&set, qt, z, t, k, &e) != 0) {
                if (!e.msg[0]) __builtin_trap();
                break;
            }
    }
    sk_calib_fit fit;
    sk_calib_fit_temperatures(&set, &fit);
    for (int i = 0; i < 3; i++)
        if (!isfinite(fit.temperature[i]) || !(fit.temperature[i] > 0)) __builtin_trap();
    sk_calib_temps after;
    sk_calib_temps_from_fit(&fit, &after);
    for (int qt = 0; qt < 3; qt++) {
        size_t n = 0;
        double ece = sk_calib_ece(&set, qt, &after, &n);
        if (!isnan(ece) && !(ece >= 0.0 && ece <= 1.0 + 1e-9)) __builtin_trap();
    }
    int has[SK_CALIB_BUCKETS];
    double thr[SK_CALIB_BUCKETS];
    sk_err e = {0};
    sk_calib_abstention(&set, &after, (double)(data[0] >> 1) / 127.0, 2, data[0] >> 7, has, thr, &e);
    sk_calib_set_free(&set);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (!g_model) LLVMFuzzerInitialize(NULL, NULL);
    if (size == 0) return 0;
    if (data[0] == '{' || data[0] == ' ') labelled(data, size);
    else records(data, size);
    return 0;
}
