/*
 * tok_decode.c - ids back to text (sk_tokenizer_decode): the byte-level mapping, or the
 * SentencePiece-style decoder chains (Replace / ByteFallback / Fuse / Metaspace / Strip) as
 * HF tokenizers runs them, with invalid UTF-8 replaced as Rust's from_utf8_lossy does.
 */
#include <stdlib.h>
#include <string.h>

#include "tokenizer.h"

/* Append bytes to b replacing invalid UTF-8 the way Rust's from_utf8_lossy does (one
 * U+FFFD per maximal invalid subpart). */
static void append_lossy(sk_buf *b, const unsigned char *p, size_t n) {
    size_t i = 0;
    while (i < n) {
        unsigned c = p[i];
        size_t need = 0;
        unsigned lo = 0x80, hi = 0xBF;
        if (c < 0x80) {
            sk_buf_putc(b, (char)c);
            i++;
            continue;
        } else if (c >= 0xC2 && c <= 0xDF) need = 1;
        else if (c >= 0xE0 && c <= 0xEF) {
            need = 2;
            if (c == 0xE0) lo = 0xA0;
            if (c == 0xED) hi = 0x9F;
        } else if (c >= 0xF0 && c <= 0xF4) {
            need = 3;
            if (c == 0xF0) lo = 0x90;
            if (c == 0xF4) hi = 0x8F;
        } else {
            sk_buf_append(b, "\xEF\xBF\xBD", 3);
            i++;
            continue;
        }
        size_t j = 1;
        for (; j <= need; j++) {
            if (i + j >= n) break;
            unsigned d = p[i + j];
            unsigned l = j == 1 ? lo : 0x80, h = j == 1 ? hi : 0xBF;
            if (d < l || d > h) break;
        }
        if (j == need + 1) {
            sk_buf_append(b, p + i, need + 1);
            i += need + 1;
        } else {
            sk_buf_append(b, "\xEF\xBF\xBD", 3);
            i += j;
        }
    }
}

/* "<0xNN>" -> NN like ByteFallback (u8::from_str_radix(&tok[3..5], 16), "+N" too); -1 if not. */
static int byte_token(const char *p, size_t n) {
    if (n != 6 || memcmp(p, "<0x", 3) != 0 || p[5] != '>') return -1;
    int v = 0;
    for (int i = 3; i < 5; i++) {
        char ch = p[i];
        int d = ch >= '0' && ch <= '9' ? ch - '0' : ch >= 'a' && ch <= 'f' ? ch - 'a' + 10
              : ch >= 'A' && ch <= 'F' ? ch - 'A' + 10 : -1;
        if (d < 0) {
            if (i == 3 && ch == '+') continue;
            return -1;
        }
        v = v * 16 + d;
    }
    return v;
}

/* The decoder chain over the token strings (tokenizers' decode_chain per step, then join). */
static int decode_chain(const skycmd_tokenizer *t, sk_buf *toks, size_t n, sk_buf *out) {
    sk_buf *tmp = calloc(n ? n : 1, sizeof *tmp);
    if (!tmp) return SKYCMD_E_NOMEM;
    int failed = 0;
    for (int k = 0; k < t->n_dec; k++) {
        const sk_step *st = &t->dec[k];
        size_t m = 0;
        if (st->kind == SK_STEP_FUSE) {
            if (n == 0) continue;
            for (size_t i = 1; i < n; i++) {
                sk_buf_append(&toks[0], toks[i].data ? toks[i].data : "", toks[i].len);
                sk_buf_free(&toks[i]);
            }
            n = 1;
            continue;
        }
        if (st->kind == SK_STEP_BYTE_FALLBACK) {
            sk_buf bytes;
            sk_buf_init(&bytes);
            size_t n_bytes = 0;
            for (size_t i = 0; i <= n; i++) {
                int v = i < n ? byte_token(toks[i].data ? toks[i].data : "", toks[i].len) : -1;
                if (v >= 0) {
                    sk_buf_putc(&bytes, (char)v);
                    n_bytes++;
                    sk_buf_free(&toks[i]);
                    continue;
                }
                if (n_bytes) {
                    if (sk_utf8_valid(bytes.data, bytes.len)) {
                        sk_buf_init(&tmp[m]);
                        sk_buf_append(&tmp[m++], bytes.data, bytes.len);
                    } else
                        for (size_t q = 0; q < n_bytes; q++) {
                            sk_buf_init(&tmp[m]);
                            sk_buf_append(&tmp[m++], "\xEF\xBF\xBD", 3);
                        }
                    bytes.len = 0;
                    n_bytes = 0;
                }
                if (i < n) tmp[m++] = toks[i];
            }
            failed |= bytes.failed;
            sk_buf_free(&bytes);
            memcpy(toks, tmp, m * sizeof *toks);
            n = m;
            continue;
        }
        for (size_t i = 0; i < n; i++) {
            sk_buf r;
            sk_buf_init(&r);
            const char *p = toks[i].data ? toks[i].data : "";
            size_t len = toks[i].len;
            if (st->kind == SK_STEP_REPLACE) sk_tok_replace_all(&r, p, len, st);
            else if (st->kind == SK_STEP_METASPACE) {
                int drop = i == 0 && st->opt != SK_PREPEND_NEVER;
                for (size_t j = 0; j < len;) {
                    if (len - j >= st->a_len && memcmp(p + j, st->a, st->a_len) == 0) {
                        if (!drop) sk_buf_putc(&r, ' ');
                        j += st->a_len;
                    } else sk_buf_putc(&r, p[j++]);
                }
            } else { /* Strip */
                size_t j0 = 0, j1 = len;
                for (int q = 0; q < st->opt && j1 - j0 >= st->a_len && memcmp(p + j0, st->a, st->a_len) == 0; q++)
                    j0 += st->a_len;
                for (int q = 0; q < st->opt2 && j1 - j0 >= st->a_len && memcmp(p + j1 - st->a_len, st->a, st->a_len) == 0; q++)
                    j1 -= st->a_len;
                sk_buf_append(&r, p + j0, j1 - j0);
            }
            sk_buf_free(&toks[i]);
            toks[i] = r;
        }
    }
    for (size_t i = 0; i < n; i++) {
        failed |= toks[i].failed;
        sk_buf_append(out, toks[i].data ? toks[i].data : "", toks[i].len);
        sk_buf_free(&toks[i]);
    }
    free(tmp);
    return failed || out->failed ? SKYCMD_E_NOMEM : SKYCMD_OK;
}

int sk_tokenizer_decode(const skycmd_tokenizer *t, const int32_t *ids, size_t n, sk_buf *b,
                        sk_err *e) {
    if (!t || (!ids && n) || !b) return sk_fail(e, SKYCMD_E_INVALID_ARGUMENT, "tokenizer: NULL argument");
    sk_buf raw;
    sk_buf_init(&raw);
    sk_buf *toks = NULL;
    if (t->n_dec && !(toks = sk_malloc_array(n ? n : 1, sizeof *toks)))
        return sk_fail(e, SKYCMD_E_NOMEM, "tokenizer: out of memory");
    for (size_t i = 0; i < n; i++) {
        if (ids[i] < 0 || (size_t)ids[i] >= t->n_ids || !t->piece[ids[i]]) {
            for (size_t q = 0; toks && q < i; q++) sk_buf_free(&toks[q]);
            free(toks);
            sk_buf_free(&raw);
            return sk_fail(e, SKYCMD_E_INVALID_ARGUMENT, "tokenizer: id %d at index %zu is not in the vocabulary",
                           (int)ids[i], i);
        }
        const char *p = t->piece[ids[i]];
        size_t len = t->piece_len[ids[i]];
        if (t->added_of_id[ids[i]] >= 0) {
            /* HF decodes a normalized added token from its normalized form */
            const sk_added_token *a = &t->added[t->added_of_id[ids[i]]];
            p = a->pattern;
            len = a->pattern_len;
        }
        if (t->n_dec) {
            toks[i].data = NULL;
            sk_buf_init(&toks[i]);
            sk_buf_append(&toks[i], p, len);
            continue;
        }
        if (!t->byte_level_decoder) {
            if (i) sk_buf_putc(&raw, ' '); /* no decoder: HF joins the tokens with spaces */
            sk_buf_append(&raw, p, len);
            continue;
        }
        /* ByteLevel decoder: a token made only of byte-level chars becomes those bytes;
         * any other token is kept as its UTF-8 text. */
        size_t mark = raw.len, j = 0;
        int ok = 1;
        while (j < len) {
            uint32_t cp;
            j += sk_utf8_next(p, len, j, &cp);
            int by = sk_cp_to_byte(cp);
            if (by < 0) {
                ok = 0;
                break;
            }
            sk_buf_putc(&raw, (char)by);
        }
        if (!ok) {
            raw.len = mark;
            sk_buf_append(&raw, p, len);
        }
    }
    if (toks) {
        int rc = decode_chain(t, toks, n, b);
        free(toks);
        sk_buf_free(&raw);
        return rc ? sk_fail(e, SKYCMD_E_NOMEM, "tokenizer: out of memory") : SKYCMD_OK;
    }
    if (raw.failed) {
        sk_buf_free(&raw);
        return sk_fail(e, SKYCMD_E_NOMEM, "tokenizer: out of memory");
    }
    if (t->byte_level_decoder) append_lossy(b, (const unsigned char *)raw.data, raw.len);
    else sk_buf_append(b, raw.data, raw.len);
    sk_buf_free(&raw);
    if (b->failed) return sk_fail(e, SKYCMD_E_NOMEM, "tokenizer: out of memory");
    return SKYCMD_OK;
}
