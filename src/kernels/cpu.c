/* cpu.c - run-time CPU feature detection that the kernels dispatch on. */
#include <stdio.h>
#include <string.h>

#include "skycmd.h"
#include "cpu.h"

#if (defined(__x86_64__) || defined(__i386__)) && defined(__clang__)
#include <cpuid.h>
#endif

static int g_features = -1;

int sk_cpu_features(void) {
    int f = __atomic_load_n(&g_features, __ATOMIC_ACQUIRE);
    if (f >= 0) return f;
    f = 0;
#if defined(__x86_64__) || defined(__i386__)
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx2")) f |= SK_CPU_AVX2;
    if (__builtin_cpu_supports("fma")) f |= SK_CPU_FMA;
#if defined(__clang__) && __clang_major__ < 16
    /* clang < 16 does not know "f16c" in __builtin_cpu_supports: ask CPUID (leaf 1,
     * ECX bit 29) instead. */
    {
        unsigned a, b, c, d;
        if (__get_cpuid(1, &a, &b, &c, &d) && (c & (1u << 29))) f |= SK_CPU_F16C;
    }
#else
    if (__builtin_cpu_supports("f16c")) f |= SK_CPU_F16C;
#endif
    if (__builtin_cpu_supports("avx512f")) f |= SK_CPU_AVX512F;
    if (__builtin_cpu_supports("avx512bw")) f |= SK_CPU_AVX512BW;
    if (__builtin_cpu_supports("avx512vnni")) f |= SK_CPU_AVX512VNNI;
#endif
    __atomic_store_n(&g_features, f, __ATOMIC_RELEASE);
    return f;
}

const char *skycmd_cpu_features(void) {
    static const char *names[] = {"avx2", "fma", "f16c", "avx512f", "avx512bw", "avx512vnni"};
    static char text[96];
    static int done;
    if (__atomic_load_n(&done, __ATOMIC_ACQUIRE)) return text;
    int f = sk_cpu_features();
    char buf[96] = "";
    for (int i = 0; i < 6; i++)
        if (f & (1 << i)) {
            if (buf[0]) strcat(buf, " ");
            strcat(buf, names[i]);
        }
    if (!buf[0]) strcpy(buf, "scalar");
    /* Same content whichever thread writes it first. */
    memcpy(text, buf, sizeof text);
    __atomic_store_n(&done, 1, __ATOMIC_RELEASE);
    return text;
}
