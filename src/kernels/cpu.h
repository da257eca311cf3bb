/* cpu.h - CPU features detected once at run time; kernels choose their SIMD path by them. */
#ifndef SK_CPU_H
#define SK_CPU_H
enum {
    SK_CPU_AVX2 = 1 << 0,
    SK_CPU_FMA = 1 << 1,
    SK_CPU_F16C = 1 << 2,
    SK_CPU_AVX512F = 1 << 3,
    SK_CPU_AVX512BW = 1 << 4,
    SK_CPU_AVX512VNNI = 1 << 5
};
int sk_cpu_features(void);
#endif
