/*
 * peak_probe.h - measure the machine's f32 FMA peak (GFLOP/s), single core and all cores.
 *
 * Contract: header-only (static functions), used by `skycmd bench` (in-process, ~200 ms,
 * src/cli/bench_measure.c) and by bench/peak.c (a standalone program that includes it from
 * here: the installed program compiles nothing from bench/). Each thread runs register-only chains of
 * fused multiply-adds (enough independent accumulators that two FMA pipes stay busy despite
 * the 4-cycle latency) for a given wall time; the result counts 2 FLOPs per lane per FMA.
 * The ISA is chosen at run time (CPUID and XCR0 on x86-64): AVX-512F (16 chains), AVX2+FMA
 * (12 chains), NEON FMLA on aarch64 (16 chains of 4 lanes: four FMA pipes of 4-cycle latency
 * on the widest cores), or a plain loop that the compiler vectorizes for its default target
 * ("baseline", no FMA) elsewhere. It measures the ceiling the GEMM kernels can approach, not
 * a sustainable GEMM rate (no loads). Uses only libc and pthreads; no skycmd internals.
 * The int8 dot-product peak is measured the same way, for the instruction the int8 kernels
 * are built on: AVX-512 VNNI `vpdpbusd` (64 u8 x s8 products per instruction) on x86-64,
 * SDOT (16 per instruction) on aarch64 with dotprod; 2 operations per product (GOP/s).
 */
#ifndef SKYCMD_BENCH_PEAK_PROBE_H
#define SKYCMD_BENCH_PEAK_PROBE_H

#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#if defined(__x86_64__) || defined(__i386__)
#  include <immintrin.h>
#  define PEAK_X86 1
#else
#  define PEAK_X86 0
#endif
#if defined(__aarch64__)
#  include <arm_neon.h>
#  if defined(__linux__)
#    include <sys/auxv.h>
#  elif defined(__APPLE__)
#    include <sys/sysctl.h>
#  endif
#  define PEAK_ARM 1
#else
#  define PEAK_ARM 0
#endif

#define PEAK_UNUSED __attribute__((unused))

/* The f32 ISAs, then the int8 products of the int8 kernels: the dot-product instructions
 * (PEAK_VNNI512, PEAK_SDOT) and AVX2's sequence without one (PEAK_MADDUBS). */
typedef enum peak_isa {
    PEAK_SCALAR = 0, PEAK_AVX2 = 1, PEAK_AVX512 = 2, PEAK_NEON = 3, PEAK_VNNI512 = 4, PEAK_SDOT = 5,
    PEAK_MADDUBS = 6
} peak_isa;

static PEAK_UNUSED const char *peak_isa_name(peak_isa isa) {
    static const char *const names[] = {"baseline", "avx2", "avx512", "neon", "vpdpbusd", "sdot", "maddubs"};
    return names[(unsigned)isa < sizeof names / sizeof names[0] ? isa : 0];
}

#if PEAK_X86
#  include <cpuid.h>
/* CPUID and XCR0 asked directly (__builtin_cpu_supports needs a runtime helper that not
 * every toolchain links): the feature bit, and the OS saving the registers it uses. */
static PEAK_UNUSED int peak_x86_has(peak_isa isa) {
    unsigned a, b, c, d, xlo, xhi;
    if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & (1u << 27)) || !(c & (1u << 28))) return 0;
    const int fma = (c >> 12) & 1;
    __asm__ volatile("xgetbv" : "=a"(xlo), "=d"(xhi) : "c"(0));
    (void)xhi;
    if ((xlo & 0x6u) != 0x6u || __get_cpuid_max(0, NULL) < 7) return 0;
    __cpuid_count(7, 0, a, b, c, d);
    if (isa == PEAK_AVX2) return fma && ((b >> 5) & 1);
    if (isa == PEAK_MADDUBS) return ((b >> 5) & 1) != 0;
    if (isa == PEAK_VNNI512) return (xlo & 0xE0u) == 0xE0u && ((b >> 16) & 1) && ((c >> 11) & 1);
    return isa == PEAK_AVX512 && (xlo & 0xE0u) == 0xE0u && ((b >> 16) & 1);
}
#endif

static PEAK_UNUSED int peak_isa_supported(peak_isa isa) {
#if PEAK_X86
    if (isa == PEAK_AVX512 || isa == PEAK_AVX2 || isa == PEAK_VNNI512 || isa == PEAK_MADDUBS)
        return peak_x86_has(isa);
#endif
#if PEAK_ARM && defined(__linux__)
    if (isa == PEAK_SDOT) return (getauxval(AT_HWCAP) >> 20) & 1; /* HWCAP_ASIMDDP */
#elif PEAK_ARM && defined(__APPLE__)
    if (isa == PEAK_SDOT) {
        int v = 0;
        size_t n = sizeof v;
        return sysctlbyname("hw.optional.arm.FEAT_DotProd", &v, &n, NULL, 0) == 0 && v;
    }
#endif
    if (isa == PEAK_NEON) return PEAK_ARM;  /* Advanced SIMD is architectural on aarch64 */
    return isa == PEAK_SCALAR;
}

/* The best ISA this CPU runs. */
static PEAK_UNUSED peak_isa peak_best_isa(void) {
    if (peak_isa_supported(PEAK_AVX512)) return PEAK_AVX512;
    if (peak_isa_supported(PEAK_AVX2)) return PEAK_AVX2;
    if (peak_isa_supported(PEAK_NEON)) return PEAK_NEON;
    return PEAK_SCALAR;
}

static PEAK_UNUSED double peak_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Each kernel runs `reps` rounds of 16 FMAs per accumulator set and returns a sum that
 * depends on every accumulator, so nothing is optimized away. x*a + b with a just below 1
 * keeps the values finite for any number of rounds. */
#define PEAK_ROUND 64 /* FMAs per accumulator per round */
/* OP(j) for the chains j = 0..15, spelled out so each chain is a named register variable */
#define PEAK_16(OP) OP(0) OP(1) OP(2) OP(3) OP(4) OP(5) OP(6) OP(7) \
                    OP(8) OP(9) OP(10) OP(11) OP(12) OP(13) OP(14) OP(15)

#if PEAK_X86
__attribute__((target("avx512f"))) static PEAK_UNUSED float peak_run_avx512(uint64_t reps) {
    __m512 a = _mm512_set1_ps(0.9999999f), b = _mm512_set1_ps(1e-7f);
    /* distinct start values: identical chains would be merged by the compiler */
    __m512 x0 = _mm512_set1_ps(1.00f), x1 = _mm512_set1_ps(1.01f), x2 = _mm512_set1_ps(1.02f),
           x3 = _mm512_set1_ps(1.03f), x4 = _mm512_set1_ps(1.04f), x5 = _mm512_set1_ps(1.05f),
           x6 = _mm512_set1_ps(1.06f), x7 = _mm512_set1_ps(1.07f), x8 = _mm512_set1_ps(1.08f),
           x9 = _mm512_set1_ps(1.09f), x10 = _mm512_set1_ps(1.10f), x11 = _mm512_set1_ps(1.11f),
           x12 = _mm512_set1_ps(1.12f), x13 = _mm512_set1_ps(1.13f), x14 = _mm512_set1_ps(1.14f),
           x15 = _mm512_set1_ps(1.15f);
    for (uint64_t r = 0; r < reps; r++) {
        for (int k = 0; k < PEAK_ROUND; k++) {
            x0 = _mm512_fmadd_ps(x0, a, b);   x1 = _mm512_fmadd_ps(x1, a, b);
            x2 = _mm512_fmadd_ps(x2, a, b);   x3 = _mm512_fmadd_ps(x3, a, b);
            x4 = _mm512_fmadd_ps(x4, a, b);   x5 = _mm512_fmadd_ps(x5, a, b);
            x6 = _mm512_fmadd_ps(x6, a, b);   x7 = _mm512_fmadd_ps(x7, a, b);
            x8 = _mm512_fmadd_ps(x8, a, b);   x9 = _mm512_fmadd_ps(x9, a, b);
            x10 = _mm512_fmadd_ps(x10, a, b); x11 = _mm512_fmadd_ps(x11, a, b);
            x12 = _mm512_fmadd_ps(x12, a, b); x13 = _mm512_fmadd_ps(x13, a, b);
            x14 = _mm512_fmadd_ps(x14, a, b); x15 = _mm512_fmadd_ps(x15, a, b);
        }
        __asm__ volatile("" : "+v"(x0), "+v"(x1), "+v"(x2), "+v"(x3), "+v"(x4), "+v"(x5),
                         "+v"(x6), "+v"(x7), "+v"(x8), "+v"(x9), "+v"(x10), "+v"(x11));
        __asm__ volatile("" : "+v"(x12), "+v"(x13), "+v"(x14), "+v"(x15));
    }
    __m512 s = _mm512_add_ps(_mm512_add_ps(_mm512_add_ps(x0, x1), _mm512_add_ps(x2, x3)),
                             _mm512_add_ps(_mm512_add_ps(x4, x5), _mm512_add_ps(x6, x7)));
    s = _mm512_add_ps(s, _mm512_add_ps(_mm512_add_ps(_mm512_add_ps(x8, x9), _mm512_add_ps(x10, x11)),
                                       _mm512_add_ps(_mm512_add_ps(x12, x13), _mm512_add_ps(x14, x15))));
    return _mm512_reduce_add_ps(s);
}

__attribute__((target("avx2,fma"))) static PEAK_UNUSED float peak_run_avx2(uint64_t reps) {
    __m256 a = _mm256_set1_ps(0.9999999f), b = _mm256_set1_ps(1e-7f);
    __m256 x0 = _mm256_set1_ps(1.00f), x1 = _mm256_set1_ps(1.01f), x2 = _mm256_set1_ps(1.02f),
           x3 = _mm256_set1_ps(1.03f), x4 = _mm256_set1_ps(1.04f), x5 = _mm256_set1_ps(1.05f),
           x6 = _mm256_set1_ps(1.06f), x7 = _mm256_set1_ps(1.07f), x8 = _mm256_set1_ps(1.08f),
           x9 = _mm256_set1_ps(1.09f), x10 = _mm256_set1_ps(1.10f), x11 = _mm256_set1_ps(1.11f);
    for (uint64_t r = 0; r < reps; r++) {
        for (int k = 0; k < PEAK_ROUND; k++) {
            x0 = _mm256_fmadd_ps(x0, a, b);   x1 = _mm256_fmadd_ps(x1, a, b);
            x2 = _mm256_fmadd_ps(x2, a, b);   x3 = _mm256_fmadd_ps(x3, a, b);
            x4 = _mm256_fmadd_ps(x4, a, b);   x5 = _mm256_fmadd_ps(x5, a, b);
            x6 = _mm256_fmadd_ps(x6, a, b);   x7 = _mm256_fmadd_ps(x7, a, b);
            x8 = _mm256_fmadd_ps(x8, a, b);   x9 = _mm256_fmadd_ps(x9, a, b);
            x10 = _mm256_fmadd_ps(x10, a, b); x11 = _mm256_fmadd_ps(x11, a, b);
        }
        __asm__ volatile("" : "+x"(x0), "+x"(x1), "+x"(x2), "+x"(x3), "+x"(x4), "+x"(x5),
                         "+x"(x6), "+x"(x7), "+x"(x8), "+x"(x9), "+x"(x10), "+x"(x11));
    }
    __m256 s = _mm256_add_ps(_mm256_add_ps(_mm256_add_ps(x0, x1), _mm256_add_ps(x2, x3)),
                             _mm256_add_ps(_mm256_add_ps(x4, x5), _mm256_add_ps(x6, x7)));
    s = _mm256_add_ps(s, _mm256_add_ps(_mm256_add_ps(x8, x9), _mm256_add_ps(x10, x11)));
    float t[8];
    _mm256_storeu_ps(t, s);
    return t[0] + t[1] + t[2] + t[3] + t[4] + t[5] + t[6] + t[7];
}

/* 16 chains of vpdpbusd: acc += u8 x s8 dot products of 4, 16 lanes. Sixteen named
 * accumulators, not an array: GCC kept an array of them in memory, a load and a store
 * around every vpdpbusd, which halved the measured peak on an AMX Xeon. */
__attribute__((target("avx512f,avx512vnni"))) static PEAK_UNUSED float peak_run_vnni512(uint64_t reps) {
    const __m512i a = _mm512_set1_epi8(1), b = _mm512_set1_epi8(-1);
#define PEAK_VNNI_INIT(j) __m512i x##j = _mm512_set1_epi32(j);
#define PEAK_VNNI_STEP(j) x##j = _mm512_dpbusd_epi32(x##j, a, b);
    PEAK_16(PEAK_VNNI_INIT)
    for (uint64_t r = 0; r < reps; r++) {
        for (int k = 0; k < PEAK_ROUND; k++) {
            PEAK_16(PEAK_VNNI_STEP)
        }
        __asm__ volatile("" : "+v"(x0), "+v"(x1), "+v"(x2), "+v"(x3), "+v"(x4), "+v"(x5),
                         "+v"(x6), "+v"(x7));
        __asm__ volatile("" : "+v"(x8), "+v"(x9), "+v"(x10), "+v"(x11), "+v"(x12), "+v"(x13),
                         "+v"(x14), "+v"(x15));
    }
    const __m512i s = _mm512_add_epi32(
        _mm512_add_epi32(_mm512_add_epi32(_mm512_add_epi32(x0, x1), _mm512_add_epi32(x2, x3)),
                         _mm512_add_epi32(_mm512_add_epi32(x4, x5), _mm512_add_epi32(x6, x7))),
        _mm512_add_epi32(_mm512_add_epi32(_mm512_add_epi32(x8, x9), _mm512_add_epi32(x10, x11)),
                         _mm512_add_epi32(_mm512_add_epi32(x12, x13), _mm512_add_epi32(x14, x15))));
    return (float)_mm512_reduce_add_epi32(s);
#undef PEAK_VNNI_INIT
#undef PEAK_VNNI_STEP
}

/* The AVX2 int8 kernel's own sequence, which has no dot-product instruction (q8_x86.c):
 * per row and 32 inputs sign (x by the weights' signs), maddubs (|w| x that, pairs into
 * s16), madd with ones (pairs into s32) and add, 32 products per four instructions. Four
 * chains; an empty asm makes each chain's weights opaque at every step, so none of the
 * four is hoisted out of the loop (and none is emitted for it). */
__attribute__((target("avx2"))) static PEAK_UNUSED float peak_run_maddubs(uint64_t reps) {
    const __m256i x = _mm256_set1_epi8(3), aw = _mm256_set1_epi8(2), ones = _mm256_set1_epi16(1);
#define PEAK_MB_INIT(j) __m256i s##j = _mm256_setzero_si256(), w##j = _mm256_set1_epi8((char)(j - 2));
#define PEAK_MB_STEP(j)                                                                        \
    __asm__("" : "+x"(w##j));                                                                  \
    s##j = _mm256_add_epi32(s##j, _mm256_madd_epi16(_mm256_maddubs_epi16(aw, _mm256_sign_epi8(x, w##j)), ones));
    PEAK_MB_INIT(0) PEAK_MB_INIT(1) PEAK_MB_INIT(2) PEAK_MB_INIT(3)
    for (uint64_t r = 0; r < reps; r++) {
        for (int k = 0; k < PEAK_ROUND; k++) {
            PEAK_MB_STEP(0) PEAK_MB_STEP(1) PEAK_MB_STEP(2) PEAK_MB_STEP(3)
        }
        __asm__ volatile("" : "+x"(s0), "+x"(s1), "+x"(s2), "+x"(s3));
    }
    const __m256i s = _mm256_add_epi32(_mm256_add_epi32(s0, s1), _mm256_add_epi32(s2, s3));
    const __m128i h = _mm_add_epi32(_mm256_castsi256_si128(s), _mm256_extracti128_si256(s, 1));
    return (float)(_mm_cvtsi128_si32(h) + _mm_extract_epi32(h, 1) + _mm_extract_epi32(h, 2) +
                   _mm_extract_epi32(h, 3));
#undef PEAK_MB_INIT
#undef PEAK_MB_STEP
}
#endif

#if PEAK_ARM
#  if defined(__clang__)
#    define PEAK_DOTPROD __attribute__((target("dotprod")))
#  else
#    define PEAK_DOTPROD __attribute__((target("arch=armv8.2-a+dotprod")))
#  endif
/* 16 chains of SDOT: acc += s8 x s8 dot products of 4, 4 lanes (named accumulators, as
 * peak_run_vnni512's). */
PEAK_DOTPROD static PEAK_UNUSED float peak_run_sdot(uint64_t reps) {
    const int8x16_t a = vdupq_n_s8(1), b = vdupq_n_s8(-1);
#define PEAK_SDOT_INIT(j) int32x4_t x##j = vdupq_n_s32(j);
#define PEAK_SDOT_STEP(j) x##j = vdotq_s32(x##j, a, b);
    PEAK_16(PEAK_SDOT_INIT)
    for (uint64_t r = 0; r < reps; r++) {
        for (int k = 0; k < PEAK_ROUND; k++) {
            PEAK_16(PEAK_SDOT_STEP)
        }
        __asm__ volatile("" : "+w"(x0), "+w"(x1), "+w"(x2), "+w"(x3), "+w"(x4), "+w"(x5),
                         "+w"(x6), "+w"(x7));
        __asm__ volatile("" : "+w"(x8), "+w"(x9), "+w"(x10), "+w"(x11), "+w"(x12), "+w"(x13),
                         "+w"(x14), "+w"(x15));
    }
    const int32x4_t s = vaddq_s32(
        vaddq_s32(vaddq_s32(vaddq_s32(x0, x1), vaddq_s32(x2, x3)), vaddq_s32(vaddq_s32(x4, x5), vaddq_s32(x6, x7))),
        vaddq_s32(vaddq_s32(vaddq_s32(x8, x9), vaddq_s32(x10, x11)), vaddq_s32(vaddq_s32(x12, x13), vaddq_s32(x14, x15))));
    return (float)vaddvq_s32(s);
#undef PEAK_SDOT_INIT
#undef PEAK_SDOT_STEP
}

static PEAK_UNUSED float peak_run_neon(uint64_t reps) {
    const float32x4_t a = vdupq_n_f32(0.9999999f), b = vdupq_n_f32(1e-7f);
#define PEAK_NEON_INIT(j) float32x4_t x##j = vdupq_n_f32(1.0f + 0.01f * (float)(j));
#define PEAK_NEON_STEP(j) x##j = vfmaq_f32(b, x##j, a);
    PEAK_16(PEAK_NEON_INIT)
    for (uint64_t r = 0; r < reps; r++) {
        for (int k = 0; k < PEAK_ROUND; k++) {
            PEAK_16(PEAK_NEON_STEP)
        }
        __asm__ volatile("" : "+w"(x0), "+w"(x1), "+w"(x2), "+w"(x3), "+w"(x4), "+w"(x5),
                         "+w"(x6), "+w"(x7));
        __asm__ volatile("" : "+w"(x8), "+w"(x9), "+w"(x10), "+w"(x11), "+w"(x12), "+w"(x13),
                         "+w"(x14), "+w"(x15));
    }
    const float32x4_t s = vaddq_f32(
        vaddq_f32(vaddq_f32(vaddq_f32(x0, x1), vaddq_f32(x2, x3)), vaddq_f32(vaddq_f32(x4, x5), vaddq_f32(x6, x7))),
        vaddq_f32(vaddq_f32(vaddq_f32(x8, x9), vaddq_f32(x10, x11)), vaddq_f32(vaddq_f32(x12, x13), vaddq_f32(x14, x15))));
    return vaddvq_f32(s);
#undef PEAK_NEON_INIT
#undef PEAK_NEON_STEP
}
#endif

static PEAK_UNUSED float peak_run_scalar(uint64_t reps) {
    volatile float seed = 1.0f; /* unknown to the compiler: the loop cannot be folded */
    float x[8];
    for (int j = 0; j < 8; j++) x[j] = seed + 0.01f * (float)j;
    for (uint64_t r = 0; r < reps; r++) {
        for (int k = 0; k < PEAK_ROUND; k++)
            for (int j = 0; j < 8; j++) x[j] = x[j] * 0.9999999f + 1e-7f;
        __asm__ volatile("" : : "g"(x) : "memory");
    }
    return x[0] + x[1] + x[2] + x[3] + x[4] + x[5] + x[6] + x[7];
}

/* FLOPs (int8: operations) of one round: accumulators x lanes x 2 x PEAK_ROUND, times the
 * 4 products each lane of a dot-product instruction adds. */
static PEAK_UNUSED double peak_round_flops(peak_isa isa) {
    if (isa == PEAK_VNNI512) return 16.0 * 16 * 4 * 2 * PEAK_ROUND;
    if (isa == PEAK_MADDUBS) return 4.0 * 32 * 2 * PEAK_ROUND;
    if (isa == PEAK_SDOT) return 16.0 * 4 * 4 * 2 * PEAK_ROUND;
    if (isa == PEAK_AVX512) return 16.0 * 16 * 2 * PEAK_ROUND;
    if (isa == PEAK_AVX2) return 12.0 * 8 * 2 * PEAK_ROUND;
    if (isa == PEAK_NEON) return 16.0 * 4 * 2 * PEAK_ROUND;
    return 8.0 * 2 * PEAK_ROUND;
}

static PEAK_UNUSED float peak_run(peak_isa isa, uint64_t reps) {
#if PEAK_X86
    if (isa == PEAK_AVX512) return peak_run_avx512(reps);
    if (isa == PEAK_AVX2) return peak_run_avx2(reps);
    if (isa == PEAK_VNNI512) return peak_run_vnni512(reps);
    if (isa == PEAK_MADDUBS) return peak_run_maddubs(reps);
#endif
#if PEAK_ARM
    if (isa == PEAK_NEON) return peak_run_neon(reps);
    if (isa == PEAK_SDOT) return peak_run_sdot(reps);
#endif
    return peak_run_scalar(reps);
}

typedef struct peak_job {
    peak_isa isa;
    double seconds;   /* wall time to run for */
    double gflops;    /* result */
    float sink;
} peak_job;

/* Runs chunks until `seconds` have passed; the rate is the best chunk's (the least
 * disturbed by other processes on a shared machine). */
static PEAK_UNUSED void *peak_thread(void *arg) {
    peak_job *j = arg;
    const double rf = peak_round_flops(j->isa);
    uint64_t reps = 256;
    double best = 0, start = peak_now(), sink = 0;
    /* grow the chunk to ~2 ms so the clock reads cost nothing */
    for (;;) {
        double t0 = peak_now();
        sink += peak_run(j->isa, reps);
        double dt = peak_now() - t0;
        if (dt > 0 && rf * (double)reps / dt > best) best = rf * (double)reps / dt;
        if (dt < 0.002 && reps < ((uint64_t)1 << 40)) reps *= 2;
        if (peak_now() - start >= j->seconds) break;
    }
    j->gflops = best * 1e-9;
    j->sink = (float)sink;
    return NULL;
}

/* Peak of `threads` threads (each pinned nowhere; the OS spreads them) in GFLOP/s, summed
 * over threads. Returns 0 if a thread cannot start. */
static PEAK_UNUSED double peak_measure(peak_isa isa, int threads, double seconds) {
    if (threads < 1) threads = 1;
    if (threads > 256) threads = 256;
    peak_job jobs[256];
    pthread_t tid[256];
    int started = 0;
    for (int i = 0; i < threads; i++) jobs[i] = (peak_job){isa, seconds, 0, 0};
    for (int i = 1; i < threads; i++) {
        if (pthread_create(&tid[i], NULL, peak_thread, &jobs[i]) != 0) break;
        started++;
    }
    peak_thread(&jobs[0]);
    for (int i = 1; i <= started; i++) pthread_join(tid[i], NULL);
    if (started != threads - 1) return 0;
    double sum = 0;
    for (int i = 0; i < threads; i++) sum += jobs[i].gflops;
    return sum;
}

#endif
