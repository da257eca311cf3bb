/* cpu.c - run-time CPU feature detection that the kernels dispatch on.
 *
 * AMX needs three yeses before a kernel may touch a tile register: CPUID leaf 7 reports the
 * unit (AMX-TILE plus AMX-INT8 / AMX-BF16), XCR0 has the tile state enabled by the OS (bits
 * 17 XTILECFG and 18 XTILEDATA), and on Linux the process asked for the 8 KB tile data
 * state with arch_prctl(ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA) and was granted it (the
 * kernel refuses, for instance, when a thread's sigaltstack is too small for the larger
 * signal frame). Any no leaves the AMX bits clear and the AVX-512 kernels run as before. */
#define _DEFAULT_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#if defined(__linux__)
#include <sys/syscall.h>
#include <unistd.h>
#endif

#include "skycmd.h"
#include "cpu.h"

#if defined(__x86_64__)
#include <cpuid.h>
#endif
#if defined(__aarch64__) && defined(__linux__)
#include <sys/auxv.h>
#endif
#if defined(__aarch64__) && defined(__APPLE__)
#include <sys/sysctl.h>
#endif

static int g_features = -1;

#if defined(__x86_64__)
/* AVX2/FMA/F16C and AVX-512: what CPUID reports and the OS saves (XCR0: the YMM state for
 * the AVX family, also the opmask and ZMM states for AVX-512), as the compilers' own
 * __builtin_cpu_supports decides, asked directly: that builtin needs a runtime helper
 * (libgcc's or compiler-rt's __cpu_model) that not every toolchain links (zig cc for macOS). */
static int x86_features(void) {
    unsigned a, b, c, d;
    if (!__get_cpuid(1, &a, &b, &c, &d)) return 0;
    const unsigned c1 = c;
    if (!(c1 & (1u << 27)) || !(c1 & (1u << 28))) return 0;  /* OSXSAVE, AVX */
    unsigned xlo, xhi;
    __asm__ volatile("xgetbv" : "=a"(xlo), "=d"(xhi) : "c"(0));
    (void)xhi;
    if ((xlo & 0x6u) != 0x6u) return 0;  /* the OS saves XMM and YMM */
    int f = 0;
    if (c1 & (1u << 12)) f |= SK_CPU_FMA;
    if (c1 & (1u << 29)) f |= SK_CPU_F16C;
    if (__get_cpuid_max(0, NULL) < 7) return f;
    __cpuid_count(7, 0, a, b, c, d);
    if (b & (1u << 5)) f |= SK_CPU_AVX2;
    if ((xlo & 0xE0u) == 0xE0u) {  /* opmask, ZMM0-15 upper halves, ZMM16-31 */
        if (b & (1u << 16)) f |= SK_CPU_AVX512F;
        if (b & (1u << 30)) f |= SK_CPU_AVX512BW;
        if (c & (1u << 11)) f |= SK_CPU_AVX512VNNI;
        unsigned a1, b1, c1x, d1;
        __cpuid_count(7, 1, a1, b1, c1x, d1);
        (void)b1, (void)c1x, (void)d1;
        if ((a1 >> 5) & 1) f |= SK_CPU_AVX512BF16; /* vdpbf16ps: listed; used with AMX only */
    }
    return f;
}

/* The AMX bits (see the top of the file); asks Linux for the tile data state once. */
static int amx_features(void) {
    unsigned a, b, c, d;
    if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & (1u << 27))) return 0;  /* OSXSAVE */
    if (__get_cpuid_max(0, NULL) < 7) return 0;
    __cpuid_count(7, 0, a, b, c, d);
    const int tile = (d >> 24) & 1, i8 = (d >> 25) & 1, bf = (d >> 22) & 1;
    if (!tile || !(i8 || bf)) return 0;
    unsigned xlo, xhi;
    __asm__ volatile("xgetbv" : "=a"(xlo), "=d"(xhi) : "c"(0));
    (void)xhi;
    if ((xlo & (3u << 17)) != (3u << 17)) return 0;
#if defined(__linux__)
    /* ARCH_REQ_XCOMP_PERM = 0x1023, XFEATURE_XTILEDATA = 18 (asm/prctl.h, Linux >= 5.16);
     * an older kernel answers EINVAL: no AMX. */
    if (syscall(SYS_arch_prctl, 0x1023, 18) != 0) return 0;
#else
    return 0;  /* other systems: no known way to be granted the state here */
#endif
    int f = 0;
    if (i8) f |= SK_CPU_AMX_INT8;
    if (bf) f |= SK_CPU_AMX_BF16;
    return f;
}
#endif

#if defined(__aarch64__)
#if defined(__APPLE__)
static int sysctl_flag(const char *name) {
    int v = 0;
    size_t n = sizeof v;
    return sysctlbyname(name, &v, &n, NULL, 0) == 0 && v != 0;
}
#endif
/* Advanced SIMD is architectural on aarch64; the int8 and BF16 extensions are asked of the
 * OS (the instructions that read the ID registers directly trap in user space on some
 * kernels). */
static int arm_features(void) {
    int f = SK_CPU_NEON;
#if defined(__linux__)
    /* HWCAP_ASIMDDP (1 << 20), HWCAP2_I8MM (1 << 13), HWCAP2_BF16 (1 << 14): the values of
     * asm/hwcap.h, spelled out for C libraries whose headers predate them. */
    const unsigned long hw = getauxval(AT_HWCAP), hw2 = getauxval(AT_HWCAP2);
    if (hw & (1ul << 20)) f |= SK_CPU_DOTPROD;
    if (hw2 & (1ul << 13)) f |= SK_CPU_I8MM;
    if (hw2 & (1ul << 14)) f |= SK_CPU_ARM_BF16;
#elif defined(__APPLE__)
    if (sysctl_flag("hw.optional.arm.FEAT_DotProd")) f |= SK_CPU_DOTPROD;
    if (sysctl_flag("hw.optional.arm.FEAT_I8MM")) f |= SK_CPU_I8MM;
    if (sysctl_flag("hw.optional.arm.FEAT_BF16")) f |= SK_CPU_ARM_BF16;
#endif
    return f;
}
#endif

int sk_cpu_features(void) {
    int f = __atomic_load_n(&g_features, __ATOMIC_ACQUIRE);
    if (f >= 0) return f;
    f = 0;
#if defined(__x86_64__)
    f |= x86_features();
    f |= amx_features();
#elif defined(__aarch64__)
    f |= arm_features();
#endif
    __atomic_store_n(&g_features, f, __ATOMIC_RELEASE);
    return f;
}

int sk_kernels_cap(void) {
    static int cached = -1;
    int c = __atomic_load_n(&cached, __ATOMIC_ACQUIRE);
    if (c >= 0) return c;
    static const char *const names[] = {"scalar", "avx2", "avx512", "neon"}; /* SK_CAP_SCALAR.. */
    const char *env = getenv("SKYCMD_KERNELS");
    c = SK_CAP_NONE;
    for (int i = 0; env && i < (int)(sizeof names / sizeof names[0]); i++)
        if (!strcmp(env, names[i])) c = SK_CAP_SCALAR + i;
    __atomic_store_n(&cached, c, __ATOMIC_RELEASE);
    return c;
}

int sk_amx_usable(void) {
    static int cached = -1;
    int u = __atomic_load_n(&cached, __ATOMIC_ACQUIRE);
    if (u >= 0) return u;
    int cap = sk_kernels_cap();
    u = (sk_cpu_features() & (SK_CPU_AMX_INT8 | SK_CPU_AMX_BF16)) != 0 &&
        cap != SK_CAP_SCALAR && cap != SK_CAP_AVX2 && cap != SK_CAP_AVX512;
    __atomic_store_n(&cached, u, __ATOMIC_RELEASE);
    return u;
}

const char *skycmd_cpu_features(void) {
    static const char *names[] = {"avx2", "fma", "f16c", "avx512f", "avx512bw", "avx512vnni",
                                  "amx-int8", "amx-bf16", "avx512bf16", "neon", "dotprod",
                                  "i8mm", "bf16"};
    enum { n_names = sizeof names / sizeof names[0] };
    static char text[128];
    static int done;
    if (__atomic_load_n(&done, __ATOMIC_ACQUIRE)) return text;
    int f = sk_cpu_features();
    /* the features the kernels dispatch to: AMX not when SKYCMD_KERNELS caps it off */
    if (!sk_amx_usable()) f &= ~(SK_CPU_AMX_INT8 | SK_CPU_AMX_BF16);
    char buf[128] = "";
    for (int i = 0; i < n_names; i++)
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
