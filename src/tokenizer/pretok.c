/*
 * pretok.c - the ByteLevel pre-tokenizer of HF tokenizers: the GPT-2 split pattern
 *   's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
 * evaluated by hand (no regex engine), the GPT-2 byte <-> char mapping, and the Unicode
 * classes the regex engines of `tokenizers` use.
 *
 * Classes: \p{L} and \p{N} are general categories from utf8proc, completed with the
 * letters and numbers that Unicode 16 added (HF's oniguruma knows them, utf8proc 2.8 only
 * has Unicode 15; the table below was measured against tokenizers 0.23.3 over every code
 * point). \s is the Unicode White_Space property (the same 25 code points in oniguruma and
 * the Rust regex crate, measured).
 */
#include <utf8proc.h>

#include "tokenizer.h"

/* Unicode 16.0 additions that utf8proc 15 reports as unassigned. */
static const uint32_t k_extra_letters[][2] = {
    {0x1C89, 0x1C8A},   {0xA7CB, 0xA7CD},   {0xA7DA, 0xA7DC},   {0x105C0, 0x105F3},
    {0x10D4A, 0x10D65}, {0x10D6F, 0x10D85}, {0x10EC2, 0x10EC4}, {0x11380, 0x11389},
    {0x1138B, 0x1138B}, {0x1138E, 0x1138E}, {0x11390, 0x113B5}, {0x113B7, 0x113B7},
    {0x113D1, 0x113D1}, {0x113D3, 0x113D3}, {0x11BC0, 0x11BE0}, {0x13460, 0x143FA},
    {0x16100, 0x1611D}, {0x16D40, 0x16D6C}, {0x18CFF, 0x18CFF}, {0x1E5D0, 0x1E5ED},
    {0x1E5F0, 0x1E5F0}, {0x2EBF0, 0x2EE5D},
};
static const uint32_t k_extra_numbers[][2] = {
    {0x10D40, 0x10D49}, {0x116D0, 0x116E3}, {0x11BF0, 0x11BF9}, {0x16130, 0x16139},
    {0x16D70, 0x16D79}, {0x1CCF0, 0x1CCF9}, {0x1E5F1, 0x1E5FA},
};

static int in_ranges(uint32_t cp, const uint32_t (*r)[2], size_t n) {
    for (size_t i = 0; i < n; i++)
        if (cp >= r[i][0] && cp <= r[i][1]) return 1;
    return 0;
}

int sk_uni_is_space(uint32_t cp) {
    if (cp >= 0x09 && cp <= 0x0D) return 1;
    if (cp == 0x20 || cp == 0x85 || cp == 0xA0) return 1;
    if (cp < 0x1680) return 0;
    return cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 || cp == 0x2029 ||
           cp == 0x202F || cp == 0x205F || cp == 0x3000;
}

int sk_uni_is_letter(uint32_t cp) {
    if (cp < 0x80)
        return (cp >= 'a' && cp <= 'z') || (cp >= 'A' && cp <= 'Z');
    utf8proc_category_t c = utf8proc_category((utf8proc_int32_t)cp);
    if (c >= UTF8PROC_CATEGORY_LU && c <= UTF8PROC_CATEGORY_LO) return 1;
    if (c == UTF8PROC_CATEGORY_CN)
        return in_ranges(cp, k_extra_letters, sizeof k_extra_letters / sizeof k_extra_letters[0]);
    return 0;
}

int sk_uni_is_number(uint32_t cp) {
    if (cp < 0x80) return cp >= '0' && cp <= '9';
    utf8proc_category_t c = utf8proc_category((utf8proc_int32_t)cp);
    if (c >= UTF8PROC_CATEGORY_ND && c <= UTF8PROC_CATEGORY_NO) return 1;
    if (c == UTF8PROC_CATEGORY_CN)
        return in_ranges(cp, k_extra_numbers, sizeof k_extra_numbers / sizeof k_extra_numbers[0]);
    return 0;
}

/* Rust regex \w: Alphabetic, marks, decimal numbers, connector punctuation, join controls.
 * Only used for added tokens with single_word (none in ModernBERT vocabularies). */
int sk_uni_is_word(uint32_t cp) {
    if (cp < 0x80)
        return (cp >= 'a' && cp <= 'z') || (cp >= 'A' && cp <= 'Z') ||
               (cp >= '0' && cp <= '9') || cp == '_';
    if (cp == 0x200C || cp == 0x200D) return 1;
    if ((cp >= 0x24B6 && cp <= 0x24E9) || (cp >= 0x1F130 && cp <= 0x1F149) ||
        (cp >= 0x1F150 && cp <= 0x1F169) || (cp >= 0x1F170 && cp <= 0x1F189))
        return 1; /* Other_Alphabetic symbols */
    if (sk_uni_is_letter(cp)) return 1;
    utf8proc_category_t c = utf8proc_category((utf8proc_int32_t)cp);
    return c == UTF8PROC_CATEGORY_MN || c == UTF8PROC_CATEGORY_MC ||
           c == UTF8PROC_CATEGORY_ME || c == UTF8PROC_CATEGORY_ND ||
           c == UTF8PROC_CATEGORY_NL || c == UTF8PROC_CATEGORY_PC;
}

size_t sk_utf8_next(const char *s, size_t n, size_t i, uint32_t *cp) {
    const unsigned char *p = (const unsigned char *)s + i;
    size_t left = n - i;
    unsigned c = p[0];
    if (c < 0x80 || left < 2) {
        *cp = c;
        return 1;
    }
    if (c < 0xE0) {
        *cp = ((uint32_t)(c & 0x1F) << 6) | (p[1] & 0x3F);
        return 2;
    }
    if (c < 0xF0 || left < 4) {
        if (left < 3) { *cp = c; return 1; }
        *cp = ((uint32_t)(c & 0x0F) << 12) | ((uint32_t)(p[1] & 0x3F) << 6) | (p[2] & 0x3F);
        return 3;
    }
    *cp = ((uint32_t)(c & 0x07) << 18) | ((uint32_t)(p[1] & 0x3F) << 12) |
          ((uint32_t)(p[2] & 0x3F) << 6) | (p[3] & 0x3F);
    return 4;
}

/* GPT-2 bytes_to_unicode: printable Latin-1 bytes map to themselves, the 68 others to
 * U+0100.. in byte order. */
static int byte_is_printable(unsigned b) {
    return (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255);
}

/* The 68 others, in byte order: 0x00-0x20 (33), 0x7F-0xA0 (34), 0xAD (1). */
uint32_t sk_byte_to_cp(uint8_t b) {
    if (byte_is_printable(b)) return b;
    if (b <= 0x20) return 256u + b;
    if (b >= 0x7F && b <= 0xA0) return 256u + 33u + (b - 0x7Fu);
    return 256u + 67u; /* 0xAD */
}

int sk_cp_to_byte(uint32_t cp) {
    if (cp < 256) return byte_is_printable(cp) ? (int)cp : -1;
    if (cp < 256 + 33) return (int)(cp - 256);
    if (cp < 256 + 67) return (int)(0x7F + (cp - 256 - 33));
    if (cp == 256 + 67) return 0xAD;
    return -1;
}

enum { C_L = 1, C_N = 2, C_S = 3, C_O = 4 };

static int cls_of(uint32_t cp) {
    if (sk_uni_is_letter(cp)) return C_L;
    if (sk_uni_is_number(cp)) return C_N;
    if (sk_uni_is_space(cp)) return C_S;
    return C_O;
}

/* Length of the class-`k` run starting at i. */
static size_t run_end(const char *s, size_t n, size_t i, int k) {
    while (i < n) {
        uint32_t cp;
        size_t l = sk_utf8_next(s, n, i, &cp);
        if (cls_of(cp) != k) break;
        i += l;
    }
    return i;
}

int sk_pretok_gpt2(const char *s, size_t n, sk_pretok_fn fn, void *ud) {
    size_t i = 0;
    while (i < n) {
        uint32_t cp;
        size_t l = sk_utf8_next(s, n, i, &cp);
        size_t end = 0;
        /* 's|'t|'re|'ve|'m|'ll|'d (ASCII, case-sensitive) */
        if (cp == '\'' && i + 1 < n) {
            char a = s[i + 1], b = i + 2 < n ? s[i + 2] : 0;
            if (a == 's' || a == 't' || a == 'm' || a == 'd') end = i + 2;
            else if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l'))
                end = i + 3;
        }
        if (!end) {
            int k = cls_of(cp);
            if (cp == ' ' && i + 1 < n) {
                /* ` ?X+` takes the space when the next char starts an X run */
                uint32_t cp2;
                sk_utf8_next(s, n, i + 1, &cp2);
                int k2 = cls_of(cp2);
                if (k2 != C_S) end = run_end(s, n, i + 1, k2);
            }
            if (!end) {
                if (k != C_S) {
                    end = run_end(s, n, i, k);
                } else {
                    /* \s+(?!\S) then \s+ : a whitespace run followed by a non-space gives
                     * back its last char, unless it is a single char. */
                    size_t j = run_end(s, n, i, C_S);
                    if (j == n) {
                        end = j;
                    } else {
                        size_t last = j - 1;
                        while (((unsigned char)s[last] & 0xC0) == 0x80) last--;
                        end = last > i ? last : j;
                    }
                }
            }
        }
        (void)l;
        int rc = fn(ud, i, end);
        if (rc) return rc;
        i = end;
    }
    return 0;
}
