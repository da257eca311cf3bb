/*
 * peak.c - `skycmd-peak [--ms N] [--threads N] [--json]`: the machine's f32 FMA peak in
 * GFLOP/s, one core and N threads (default: every online core), for each vector ISA the
 * CPU has, and the int8 dot-product peak in GOP/s (vpdpbusd, SDOT) the int8 kernels are held
 * against. The figures `skycmd bench` compares its achieved rates with (it runs the same
 * probe in-process, src/cli/peak_probe.h). Register-only chains: a ceiling, not a GEMM.
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../src/cli/peak_probe.h"

static void usage(FILE *out) {
    fprintf(out,
            "usage: skycmd-peak [--ms N] [--threads N] [--json]\n"
            "\n"
            "Measure the f32 FMA peak (GFLOP/s) with one thread and with N threads for each\n"
            "ISA this CPU supports (baseline = the compiler's default target, avx2, avx512, neon),\n"
            "and the int8 dot-product peak (GOP/s: vpdpbusd with AVX-512 VNNI, sdot with dotprod).\n"
            "  --ms N       wall time per measurement in milliseconds (default 500)\n"
            "  --threads N  threads of the all-core measurement (default: online cores)\n"
            "  --json       one JSON document on stdout\n");
}

/* Measure and print the peak of each supported ISA of the list: a line each, or the members
 * of a JSON object. */
static void print_peaks(const peak_isa *isas, size_t n, const char *unit, long ms, long threads, int json) {
    int first = 1;
    for (size_t k = 0; k < n; k++) {
        if (!peak_isa_supported(isas[k])) continue;
        double one = peak_measure(isas[k], 1, (double)ms * 1e-3);
        double all = threads > 1 ? peak_measure(isas[k], (int)threads, (double)ms * 1e-3) : one;
        if (json)
            printf("%s\"%s\":{\"1\":%.1f,\"%ld\":%.1f}", first ? "" : ",", peak_isa_name(isas[k]),
                   one, threads, all);
        else
            printf("%-8s 1 thread %8.1f %-7s   %ld threads %8.1f %s\n", peak_isa_name(isas[k]), one, unit,
                   threads, all, unit);
        first = 0;
    }
}

static int parse_pos(const char *s, long *out) {
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < 1 || v > 1000000) return -1;
    *out = v;
    return 0;
}

int main(int argc, char **argv) {
    long ms = 500, threads = sysconf(_SC_NPROCESSORS_ONLN);
    int json = 0;
    if (threads < 1) threads = 1;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(argv[i], "--json")) {
            json = 1;
        } else if ((!strcmp(argv[i], "--ms") || !strcmp(argv[i], "--threads")) && i + 1 < argc) {
            long v;
            if (parse_pos(argv[i + 1], &v) || (!strcmp(argv[i], "--threads") && v > 256)) {
                fprintf(stderr, "skycmd-peak: %s: bad value '%s'\n", argv[i], argv[i + 1]);
                return 2;
            }
            if (!strcmp(argv[i], "--ms")) ms = v;
            else threads = v;
            i++;
        } else {
            fprintf(stderr, "skycmd-peak: unknown argument '%s'\n", argv[i]);
            usage(stderr);
            return 2;
        }
    }
    const peak_isa f32[] = {PEAK_SCALAR, PEAK_AVX2, PEAK_AVX512, PEAK_NEON};
    /* the int8 dot-product peak of the instructions the int8 kernels use */
    const peak_isa i8[] = {PEAK_VNNI512, PEAK_MADDUBS, PEAK_SDOT};
    if (json) printf("{\"threads\":%ld,\"ms\":%ld,\"peak_gflops\":{", threads, ms);
    print_peaks(f32, sizeof f32 / sizeof f32[0], "GFLOP/s", ms, threads, json);
    if (json) printf("},\"peak_int8_gops\":{");
    print_peaks(i8, sizeof i8 / sizeof i8[0], "GOP/s", ms, threads, json);
    if (json) printf("}}\n");
    return 0;
}
