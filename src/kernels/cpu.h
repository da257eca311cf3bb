/* cpu.h - CPU features detected once at run time (x86-64: CPUID; aarch64: the OS's hardware
 * capability report); kernels choose their SIMD path by them. */
#ifndef SK_CPU_H
#define SK_CPU_H
enum {
    SK_CPU_AVX2 = 1 << 0,
    SK_CPU_FMA = 1 << 1,
    SK_CPU_F16C = 1 << 2,
    SK_CPU_AVX512F = 1 << 3,
    SK_CPU_AVX512BW = 1 << 4,
    SK_CPU_AVX512VNNI = 1 << 5,
    /* AMX: set only when CPUID reports the unit, XCR0 has the tile state enabled and Linux
     * granted this process the tile data state (arch_prctl ARCH_REQ_XCOMP_PERM). */
    SK_CPU_AMX_INT8 = 1 << 6,
    SK_CPU_AMX_BF16 = 1 << 7,
    SK_CPU_AVX512BF16 = 1 << 8,
    /* aarch64: Advanced SIMD (every aarch64 CPU has it) and the optional int8 dot products
     * (FEAT_DotProd: SDOT/UDOT), int8 matrix multiply-accumulate (FEAT_I8MM: SMMLA) and
     * BF16 products (FEAT_BF16: BFDOT/BFMMLA). Linux: getauxval(AT_HWCAP/AT_HWCAP2);
     * macOS: sysctl hw.optional.arm.FEAT_*. */
    SK_CPU_NEON = 1 << 9,
    SK_CPU_DOTPROD = 1 << 10,
    SK_CPU_I8MM = 1 << 11,
    SK_CPU_ARM_BF16 = 1 << 12
};
int sk_cpu_features(void);
/* What SKYCMD_KERNELS caps (read once; any other value caps nothing): scalar, no SIMD
 * kernels; avx2, at most the AVX2 level and no AMX (x86-64); avx512, no AMX; neon, no BFMMLA
 * (aarch64). The one place the variable is read. */
enum { SK_CAP_NONE = 0, SK_CAP_SCALAR, SK_CAP_AVX2, SK_CAP_AVX512, SK_CAP_NEON };
int sk_kernels_cap(void);
/* 1 when the AMX kernels may run: the CPU and OS allow them (SK_CPU_AMX_*), the f32 kernels
 * are at the AVX-512 level and SKYCMD_KERNELS (scalar|avx2|avx512) does not cap them off.
 * Each AMX kernel also checks its own feature bit. */
int sk_amx_usable(void);
#endif
