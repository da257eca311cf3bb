/*
 * nfc.c - Unicode NFC exactly as Hugging Face tokenizers 0.23.3 computes it.
 *
 * Contract: sk_nfc() normalizes code points to NFC with the data of nfc_tables.h, generated
 * from the Rust crate tokenizers uses (unicode-normalization-alignments 0.1.12, Unicode
 * 9.0.0; tools/golden/gen_nfc_tables.py), and with that crate's algorithm: full canonical
 * decomposition (Hangul algorithmically), a stable sort of each run of non-starters by
 * combining class, then canonical composition where a character composes with the last
 * starter unless a character of the same or higher class (or a starter) lies between.
 * Code points the tables do not know (assigned after Unicode 9.0) are starters that neither
 * decompose nor compose, as they are for tokenizers. The system's utf8proc follows its own,
 * newer Unicode version, so it is not used here: the normalization is pinned to the
 * reference on purpose, not by luck.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "tokenizer.h"
#include "nfc_tables.h"

const char *const sk_nfc_unicode_version = SK_NFC_UNICODE_VERSION;

enum {
    S_BASE = 0xAC00, L_BASE = 0x1100, V_BASE = 0x1161, T_BASE = 0x11A7,
    L_COUNT = 19, V_COUNT = 21, T_COUNT = 28, N_COUNT = V_COUNT * T_COUNT,
    S_COUNT = L_COUNT * N_COUNT
};

static unsigned ccc_of(uint32_t cp) {
    size_t lo = 0, hi = sizeof sk_nfc_ccc / sizeof sk_nfc_ccc[0];
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        uint32_t k = sk_nfc_ccc[mid] >> 8;
        if (k == cp) return sk_nfc_ccc[mid] & 0xff;
        if (k < cp) lo = mid + 1;
        else hi = mid;
    }
    return 0;
}

/* The full canonical decomposition of cp, or NULL (*n = 0). */
static const uint32_t *decomposition(uint32_t cp, size_t *n) {
    size_t lo = 0, hi = sizeof sk_nfc_dec / sizeof sk_nfc_dec[0];
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (sk_nfc_dec[mid].cp == cp) {
            *n = sk_nfc_dec[mid].len;
            return sk_nfc_dec_pool + sk_nfc_dec[mid].off;
        }
        if (sk_nfc_dec[mid].cp < cp) lo = mid + 1;
        else hi = mid;
    }
    *n = 0;
    return NULL;
}

/* The primary composite of a and b, or 0. */
static uint32_t compose(uint32_t a, uint32_t b) {
    if (a >= L_BASE && a < L_BASE + L_COUNT && b >= V_BASE && b < V_BASE + V_COUNT)
        return S_BASE + ((a - L_BASE) * V_COUNT + (b - V_BASE)) * T_COUNT;
    if (a >= S_BASE && a < S_BASE + S_COUNT && b > T_BASE && b < T_BASE + T_COUNT &&
        (a - S_BASE) % T_COUNT == 0)
        return a + (b - T_BASE);
    if (a >= (1u << 21) || b >= (1u << 21)) return 0;
    const uint64_t key = (uint64_t)a << 21 | b;
    size_t lo = 0, hi = sizeof sk_nfc_comp / sizeof sk_nfc_comp[0];
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (sk_nfc_comp[mid].key == key) return sk_nfc_comp[mid].res;
        if (sk_nfc_comp[mid].key < key) lo = mid + 1;
        else hi = mid;
    }
    return 0;
}

size_t sk_nfc_max_len(size_t n) { return n * SK_NFC_MAX_EXPANSION; }

size_t sk_nfc(const uint32_t *in, size_t n, uint32_t *out) {
    /* 1. decompose into out, sorting each run of non-starters by class as it grows
     * (insertion sort: stable, and runs are short) */
    size_t m = 0, run = 0;   /* run: start of the current non-starter run */
    for (size_t i = 0; i < n; i++) {
        uint32_t tmp[3];
        const uint32_t *d;
        size_t dn;
        const uint32_t c = in[i];
        if (c >= S_BASE && c < S_BASE + S_COUNT) {
            const uint32_t si = c - S_BASE;
            tmp[0] = L_BASE + si / N_COUNT;
            tmp[1] = V_BASE + (si % N_COUNT) / T_COUNT;
            tmp[2] = T_BASE + si % T_COUNT;
            d = tmp;
            dn = si % T_COUNT ? 3 : 2;
        } else if (!(d = decomposition(c, &dn))) {
            tmp[0] = c;
            d = tmp;
            dn = 1;
        }
        for (size_t j = 0; j < dn; j++) {
            const uint32_t x = d[j];
            const unsigned cx = ccc_of(x);
            if (cx == 0) {
                out[m++] = x;
                run = m;
                continue;
            }
            size_t k = m++;
            while (k > run && ccc_of(out[k - 1]) > cx) {
                out[k] = out[k - 1];
                k--;
            }
            out[k] = x;
        }
    }
    /* 2. compose in place (the crate's Recompositions) */
    size_t w = 0, starter = SIZE_MAX;   /* index in out[0..w) of the composee */
    unsigned last = 256;                /* class of the last character after it; 256 = none */
    for (size_t r = 0; r < m; r++) {
        const uint32_t c = out[r];
        const unsigned cc = ccc_of(c);
        if (starter != SIZE_MAX && (last == 256 || last < cc)) {
            const uint32_t comp = compose(out[starter], c);
            if (comp) {
                out[starter] = comp;
                continue;
            }
        }
        if (cc == 0) {
            starter = w;
            last = 256;
        } else {
            last = cc;
        }
        out[w++] = c;
    }
    return w;
}

/* UTF-8 in, UTF-8 out (malloc'd, NUL-terminated); NULL when out of memory or s is not
 * valid UTF-8. */
char *sk_nfc_utf8(const char *s, size_t n, size_t *out_len) {
    uint32_t *cp = malloc((n + sk_nfc_max_len(n) + 1) * sizeof *cp);
    char *o = cp ? malloc(sk_nfc_max_len(n) * 4 + 1) : NULL;
    if (!o) {
        free(cp);
        return NULL;
    }
    size_t m = 0;
    for (size_t i = 0; i < n;) {
        const unsigned char b = (unsigned char)s[i];
        size_t len = b < 0x80 ? 1 : b >= 0xF0 ? 4 : b >= 0xE0 ? 3 : b >= 0xC0 ? 2 : 0;
        if (!len || i + len > n || !sk_utf8_valid(s + i, len)) {
            free(cp);
            free(o);
            return NULL;
        }
        uint32_t c = len == 1 ? b : (uint32_t)(b & (0x7F >> len));
        for (size_t j = 1; j < len; j++) c = c << 6 | ((unsigned char)s[i + j] & 0x3F);
        cp[m++] = c;
        i += len;
    }
    const size_t w = sk_nfc(cp, m, cp + m);
    size_t k = 0;
    for (size_t i = 0; i < w; i++) {
        const uint32_t c = cp[m + i];
        if (c < 0x80) o[k++] = (char)c;
        else if (c < 0x800) {
            o[k++] = (char)(0xC0 | c >> 6);
            o[k++] = (char)(0x80 | (c & 0x3F));
        } else if (c < 0x10000) {
            o[k++] = (char)(0xE0 | c >> 12);
            o[k++] = (char)(0x80 | (c >> 6 & 0x3F));
            o[k++] = (char)(0x80 | (c & 0x3F));
        } else {
            o[k++] = (char)(0xF0 | c >> 18);
            o[k++] = (char)(0x80 | (c >> 12 & 0x3F));
            o[k++] = (char)(0x80 | (c >> 6 & 0x3F));
            o[k++] = (char)(0x80 | (c & 0x3F));
        }
    }
    o[k] = '\0';
    free(cp);
    *out_len = k;
    return o;
}
