/*
 * tok_bpe.c - the tokenizer object (arena, vocabulary and merge tables) and encoding.
 * Decoding is tok_decode.c's; the finish step a loader ends with (byte ids, the added-token
 * index, the cut rules) is tok_finish.c's.
 *
 * Encoding follows HF tokenizers step by step, because each step changes ids:
 *  1. non-normalized added tokens are found on the raw text (leftmost-longest, then the
 *     single_word / lstrip / rstrip rules of AddedVocabulary::find_matches);
 *  2. every remaining piece is normalized (NFC) on its own, and normalized added tokens are
 *     found on it with the same rules;
 *  3. every remaining piece is split by the GPT-2 pattern, each word is byte-mapped and BPE'd
 *     (ignore_merges: a word that is itself in the vocabulary is emitted directly).
 * The BPE merge loop is HF's (entries taken by (rank, position)): a binary heap for short
 * words, rank buckets for long ones (a 2 MB word of one letter run, or a whole text under the
 * Gemma pipelines, costs about what 2 MB of ordinary words do), so that pathological words
 * need no cap.
 */
#include <stdlib.h>
#include <string.h>

#include <utf8proc.h>

#include "tokenizer.h"

/* ------------------------------------------------------------------ id lists ---- */

int sk_ids_push(sk_ids *v, int32_t id) {
    if (v->n == v->cap) {
        size_t nc = v->cap ? v->cap * 2 : 64;
        if (nc < v->cap || nc > SIZE_MAX / sizeof(int32_t)) return SKYCMD_E_NOMEM;
        int32_t *p = realloc(v->ids, nc * sizeof(int32_t));
        if (!p) return SKYCMD_E_NOMEM;
        v->ids = p;
        v->cap = nc;
    }
    v->ids[v->n++] = id;
    return SKYCMD_OK;
}

void sk_ids_free(sk_ids *v) {
    if (!v) return;
    free(v->ids);
    v->ids = NULL;
    v->n = v->cap = 0;
}

/* ------------------------------------------------------------------ arena ------- */

skycmd_tokenizer *sk_tok_alloc(void) {
    skycmd_tokenizer *t = calloc(1, sizeof *t);
    if (!t) return NULL;
    t->bpe_unk_id = -1;
    for (int i = 0; i < 5; i++) t->special[i] = -1;
    for (int i = 0; i < 256; i++) t->byte_id[i] = -1;
    return t;
}

char *sk_tok_strdup(skycmd_tokenizer *t, const char *s, size_t n) {
    if (n >= SIZE_MAX / 2) return NULL;
    if (t->cur_left < n + 1) {
        size_t bs = n + 1 > 65536 ? n + 1 : 65536;
        if (t->n_blocks == t->cap_blocks) {
            size_t nc = t->cap_blocks ? t->cap_blocks * 2 : 16;
            char **nb = realloc(t->blocks, nc * sizeof *nb);
            if (!nb) return NULL;
            t->blocks = nb;
            t->cap_blocks = nc;
        }
        char *b = malloc(bs);
        if (!b) return NULL;
        t->blocks[t->n_blocks++] = b;
        t->cur = b;
        t->cur_left = bs;
    }
    char *r = t->cur;
    if (n) memcpy(r, s, n);
    r[n] = 0;
    t->cur += n + 1;
    t->cur_left -= n + 1;
    return r;
}

void sk_tokenizer_free(skycmd_tokenizer *t) {
    if (!t) return;
    for (size_t i = 0; i < t->n_blocks; i++) free(t->blocks[i]);
    free(t->blocks);
    free(t->piece);
    free(t->piece_len);
    free(t->model_tok);
    free(t->model_tok_len);
    free(t->added_of_id);
    free(t->vocab.slots);
    free(t->vocab.keys);
    free(t->vocab.key_len);
    free(t->vocab.ids);
    free(t->merges.keys);
    free(t->merges.rank);
    free(t->merges.merged);
    free(t->merges.by_rank);
    free(t->added);
    for (int p = 0; p < 2; p++) {
        free(t->first_start[p]);
        free(t->first_list[p]);
    }
    free(t->bpe_unk);
    free(t->run_merges);
    free(t);
}

/* ------------------------------------------------------------------ hashing ----- */

static uint64_t hash_bytes(const char *s, size_t n) {
    uint64_t h = sk_fnv1a64(s, n);
    return h ^ (h >> 29);
}

static uint64_t mix64(uint64_t x) {
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ull;
    x ^= x >> 33;
    return x;
}

int32_t sk_strmap_get(const sk_strmap *m, const char *s, size_t n) {
    if (!m->slots) return -1;
    uint32_t i = (uint32_t)hash_bytes(s, n) & m->mask;
    for (;;) {
        uint32_t k = m->slots[i];
        if (!k) return -1;
        k--;
        if (m->key_len[k] == n && memcmp(m->keys[k], s, n) == 0) return m->ids[k];
        i = (i + 1) & m->mask;
    }
}

/* Insert or replace (later duplicates win, like a serde HashMap). */
static int strmap_put(sk_strmap *m, const char *s, uint32_t n, int32_t id) {
    uint32_t i = (uint32_t)hash_bytes(s, n) & m->mask;
    for (;;) {
        uint32_t k = m->slots[i];
        if (!k) break;
        k--;
        if (m->key_len[k] == n && memcmp(m->keys[k], s, n) == 0) {
            m->ids[k] = id;
            return 0;
        }
        i = (i + 1) & m->mask;
    }
    if (m->n >= m->cap) return -1;
    m->keys[m->n] = s;
    m->key_len[m->n] = n;
    m->ids[m->n] = id;
    m->slots[i] = ++m->n;
    return 0;
}

static int strmap_init(sk_strmap *m, size_t cap) {
    size_t sz = 16;
    while (sz < cap * 2 + 2) sz *= 2;
    if (sz > UINT32_MAX / 2) return -1;
    m->slots = calloc(sz, sizeof *m->slots);
    m->keys = sk_malloc_array(cap + 1, sizeof *m->keys);
    m->key_len = sk_malloc_array(cap + 1, sizeof *m->key_len);
    m->ids = sk_malloc_array(cap + 1, sizeof *m->ids);
    if (!m->slots || !m->keys || !m->key_len || !m->ids) return -1;
    m->mask = (uint32_t)sz - 1;
    m->cap = (uint32_t)cap;
    m->n = 0;
    return 0;
}

int sk_tok_merge_init(skycmd_tokenizer *t, size_t n_merges, sk_err *e) {
    size_t sz = 16;
    while (sz < n_merges * 2 + 2) sz *= 2;
    if (n_merges > (1u << 28))
        return sk_fail(e, SKYCMD_E_TOO_LARGE, "tokenizer: %zu merges is too many", n_merges);
    sk_merge_map *m = &t->merges;
    m->keys = calloc(sz, sizeof *m->keys);
    m->rank = sk_malloc_array(sz, sizeof *m->rank);
    m->merged = sk_malloc_array(sz, sizeof *m->merged);
    m->by_rank = sk_malloc_array(n_merges ? n_merges : 1, sizeof *m->by_rank);
    if (!m->keys || !m->rank || !m->merged || !m->by_rank)
        return sk_fail(e, SKYCMD_E_NOMEM, "tokenizer: out of memory for merges");
    m->mask = (uint32_t)sz - 1;
    m->n = 0;
    m->n_ranks = (uint32_t)n_merges;
    return SKYCMD_OK;
}

static inline int merge_get(const sk_merge_map *m, int32_t a, int32_t b, uint32_t *rank,
                            int32_t *merged) {
    if (!m->keys || m->n == 0) return 0;
    uint64_t key = (((uint64_t)(uint32_t)a << 32) | (uint32_t)b) + 1;
    uint32_t i = (uint32_t)mix64(key) & m->mask;
    for (;;) {
        uint64_t k = m->keys[i];
        if (!k) return 0;
        if (k == key) {
            *rank = m->rank[i];
            *merged = m->merged[i];
            return 1;
        }
        i = (i + 1) & m->mask;
    }
}

int sk_tok_add_merge(skycmd_tokenizer *t, const char *a, size_t alen, const char *b,
                     size_t blen, uint32_t rank, sk_err *e) {
    int32_t ia = sk_strmap_get(&t->vocab, a, alen), ib = sk_strmap_get(&t->vocab, b, blen);
    if (ia < 0 || ib < 0)
        return sk_fail(e, SKYCMD_E_FORMAT, "tokenizer: merge %u: token \"%.*s\" is not in the vocabulary",
                       rank, ia < 0 ? (int)(alen > 64 ? 64 : alen) : (int)(blen > 64 ? 64 : blen),
                       ia < 0 ? a : b);
    char stackbuf[256];
    size_t n = alen + blen;
    char *buf = n <= sizeof stackbuf ? stackbuf : malloc(n);
    if (!buf) return sk_fail(e, SKYCMD_E_NOMEM, "tokenizer: out of memory");
    memcpy(buf, a, alen);
    memcpy(buf + alen, b, blen);
    int32_t im = sk_strmap_get(&t->vocab, buf, n);
    if (buf != stackbuf) free(buf);
    if (im < 0)
        return sk_fail(e, SKYCMD_E_FORMAT, "tokenizer: merge %u: \"%.*s%.*s\" is not in the vocabulary",
                       rank, (int)(alen > 64 ? 64 : alen), a, (int)(blen > 64 ? 64 : blen), b);
    sk_merge_map *m = &t->merges;
    if ((size_t)m->n * 2 + 2 > (size_t)m->mask + 1 || rank >= m->n_ranks)
        return sk_fail(e, SKYCMD_E_INTERNAL, "tokenizer: merge table too small");
    uint64_t key = (((uint64_t)(uint32_t)ia << 32) | (uint32_t)ib) + 1;
    uint32_t i = (uint32_t)mix64(key) & m->mask;
    for (;;) {
        if (!m->keys[i]) {
            m->keys[i] = key;
            m->n++;
            break;
        }
        if (m->keys[i] == key) break; /* later duplicate replaces (HF collects into a map) */
        i = (i + 1) & m->mask;
    }
    m->rank[i] = rank;
    m->merged[i] = im;
    m->by_rank[rank] = im;
    if (rank + 1 > t->n_merges) t->n_merges = rank + 1;
    return SKYCMD_OK;
}

/* ------------------------------------------------------------------ NFC --------- */

static int is_ascii(const char *s, size_t n) {
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)s[i] >= 0x80) return 0;
    return 1;
}

/* Scratch of one encode call: stack first, heap for large inputs. */
typedef struct enc_scratch {
    uint32_t cps_stack[2048];
    uint32_t *cps;       /* input code points, then their NFC after them */
    size_t cps_cap;
    char nfc_stack[8192];
    char *nfc;
    size_t nfc_cap;
} enc_scratch;

static void scratch_init(enc_scratch *s) {
    s->cps = s->cps_stack;
    s->cps_cap = sizeof s->cps_stack / sizeof s->cps_stack[0];
    s->nfc = s->nfc_stack;
    s->nfc_cap = sizeof s->nfc_stack;
}

static void scratch_free(enc_scratch *s) {
    if (s->cps != s->cps_stack) free(s->cps);
    if (s->nfc != s->nfc_stack) free(s->nfc);
}

/* NFC of s into the scratch (valid UTF-8 in, valid UTF-8 out), with tokenizers' own
 * normalization data (nfc.c), not the system utf8proc's newer Unicode version. */
static int nfc_into(enc_scratch *sc, const char *s, size_t n, const char **out, size_t *out_len,
                    sk_err *e) {
    /* at most n code points in, SK_NFC_MAX_EXPANSION times that out */
    size_t need_cps, need_bytes;
    if (sk_mul_size(n, 1 + SK_NFC_MAX_EXPANSION, &need_cps) ||
        sk_mul_size(sk_nfc_max_len(n), 4, &need_bytes))
        return sk_fail(e, SKYCMD_E_TOO_LARGE, "tokenizer: text too large");
    if (need_cps > sc->cps_cap) {
        uint32_t *p = sk_malloc_array(need_cps, sizeof *p);
        if (!p) return sk_fail(e, SKYCMD_E_NOMEM, "tokenizer: out of memory");
        if (sc->cps != sc->cps_stack) free(sc->cps);
        sc->cps = p;
        sc->cps_cap = need_cps;
    }
    size_t m = 0;
    for (size_t i = 0; i < n;) {
        utf8proc_int32_t cp;
        utf8proc_ssize_t k = utf8proc_iterate((const utf8proc_uint8_t *)s + i,
                                              (utf8proc_ssize_t)(n - i), &cp);
        if (k <= 0) return sk_fail(e, SKYCMD_E_INVALID_ARGUMENT, "tokenizer: invalid UTF-8");
        sc->cps[m++] = (uint32_t)cp;
        i += (size_t)k;
    }
    uint32_t *nf = sc->cps + m;
    const size_t w = sk_nfc(sc->cps, m, nf);
    if (need_bytes > sc->nfc_cap) {
        char *p = malloc(need_bytes ? need_bytes : 1);
        if (!p) return sk_fail(e, SKYCMD_E_NOMEM, "tokenizer: out of memory");
        if (sc->nfc != sc->nfc_stack) free(sc->nfc);
        sc->nfc = p;
        sc->nfc_cap = need_bytes;
    }
    size_t o = 0;
    for (size_t i = 0; i < w; i++)
        o += (size_t)utf8proc_encode_char((utf8proc_int32_t)nf[i], (utf8proc_uint8_t *)sc->nfc + o);
    *out = sc->nfc;
    *out_len = o;
    return SKYCMD_OK;
}

/* ------------------------------------------------------------------ BPE --------- */

/* The merge loop is HF's (Word::merge_all): every adjacent pair that has a merge is an
 * entry (rank, pos, new id); the entry of smallest (rank, pos) is taken first; it is stale
 * (skipped) when the symbol at pos is gone or last, or when the pair there no longer merges
 * to the entry's new id; otherwise the pair is merged and the new pairs on its left and
 * right become entries. Two queues hand the entries out in exactly that order:
 *  - a binary heap, for words under BPE_BUCKET_MIN symbols or an eighth of the merges
 *    (O(n log n), in cache);
 *  - rank buckets for longer words (one pre-token of a hash dump or a run of one letter;
 *    the whole text under the Gemma pipelines): a heap over millions of entries misses the
 *    cache on every level; the buckets take entries rank by rank, in position order, in
 *    O(n) plus a sort per bucket: 2-9x faster on 2 MB words. See bq_pop. */

typedef struct sym {
    int32_t id;
    int32_t prev, next;
    int32_t alive;
} sym;

typedef struct hent {
    uint32_t rank;
    uint32_t pos;
    int32_t merged;
} hent;

static inline int hless(const hent *a, const hent *b) {
    return a->rank != b->rank ? a->rank < b->rank : a->pos < b->pos;
}

static void hpush(hent *h, size_t *n, hent v) {
    size_t i = (*n)++;
    while (i > 0) {
        size_t p = (i - 1) / 2;
        if (!hless(&v, &h[p])) break;
        h[i] = h[p];
        i = p;
    }
    h[i] = v;
}

static hent hpop(hent *h, size_t *n) {
    hent top = h[0];
    hent last = h[--(*n)];
    size_t i = 0, m = *n;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= m) break;
        if (c + 1 < m && hless(&h[c + 1], &h[c])) c++;
        if (!hless(&h[c], &last)) break;
        h[i] = h[c];
        i = c;
    }
    if (m) h[i] = last;
    return top;
}

/* One step of the loop for the entry (pos, new_id) just taken: 0 when it is stale; else
 * the pair at pos is merged and the pairs now left and right of it that have a merge are
 * written to add[] (how many: the return value minus 1). */
static inline int merge_step(const sk_merge_map *mm, sym *s, uint32_t pos, int32_t new_id, hent add[2]) {
    sym *a = &s[pos];
    if (!a->alive || a->next < 0) return 0;
    sym *b = &s[a->next];
    uint32_t r;
    int32_t m;
    if (!merge_get(mm, a->id, b->id, &r, &m) || m != new_id) return 0;
    a->id = new_id;
    b->alive = 0;
    a->next = b->next;
    if (b->next >= 0) s[b->next].prev = (int32_t)pos;
    int k = 0;
    if (a->prev >= 0 && merge_get(mm, s[a->prev].id, a->id, &r, &m)) add[k++] = (hent){r, (uint32_t)a->prev, m};
    if (a->next >= 0 && merge_get(mm, a->id, s[a->next].id, &r, &m)) add[k++] = (hent){r, pos, m};
    return k + 1;
}

/* ---- rank buckets ----
 * An entry's new id is the merge table's id for its rank (ranks are unique), so an entry
 * is (rank, pos). The entries of ranks above the bucket being taken wait in one array per
 * rank; the array of the next rank is sorted by position (when it is not already) and taken
 * in order when the current one is used up. A merge pushes entries of higher ranks in every
 * vocabulary trained by BPE (a merge's operands exist before it); an entry of the current
 * rank or a lower one (converted SentencePiece merge lists have them) goes to a small heap
 * that is merged in by key, so the order stays exactly (rank, pos) for any merge list. */
#define BPE_BUCKET_MIN 4096
#define BQ_AHEAD 16

typedef struct bq_vec {
    uint32_t *v;
    uint32_t n, cap;
} bq_vec;

typedef struct bqueue {
    uint32_t n_ranks;
    bq_vec *bucket;          /* per rank: the positions of its entries */
    uint64_t *bits;          /* ranks whose bucket is not empty */
    uint32_t *cur;           /* the bucket being taken (owned), sorted by position */
    size_t cur_n, ci;
    uint32_t *tmp;           /* sort scratch */
    size_t tmp_cap;
    int64_t cur_rank;        /* -1 before the first */
    uint64_t *low;           /* heap of (rank << 32 | pos) with rank <= cur_rank */
    size_t low_n, low_cap;
    int failed;
} bqueue;

static void u64_push(uint64_t *h, size_t *n, uint64_t v) {
    size_t i = (*n)++;
    while (i > 0) {
        size_t p = (i - 1) / 2;
        if (h[p] <= v) break;
        h[i] = h[p];
        i = p;
    }
    h[i] = v;
}

static uint64_t u64_pop(uint64_t *h, size_t *n) {
    uint64_t top = h[0], last = h[--(*n)];
    size_t i = 0, m = *n;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= m) break;
        if (c + 1 < m && h[c + 1] < h[c]) c++;
        if (h[c] >= last) break;
        h[i] = h[c];
        i = c;
    }
    if (m) h[i] = last;
    return top;
}

static void bq_push(bqueue *q, uint32_t rank, uint32_t pos) {
    if ((int64_t)rank <= q->cur_rank) {
        if (q->low_n == q->low_cap && sk_grow_array((void **)&q->low, &q->low_cap, q->low_n + 1, sizeof *q->low)) {
            q->failed = 1;
            return;
        }
        u64_push(q->low, &q->low_n, ((uint64_t)rank << 32) | pos);
        return;
    }
    bq_vec *b = &q->bucket[rank];
    if (b->n == b->cap) {
        uint32_t cap = b->cap ? b->cap * 2 : 8;
        uint32_t *v = cap > b->cap ? realloc(b->v, (size_t)cap * sizeof *v) : NULL;
        if (!v) {
            q->failed = 1;
            return;
        }
        b->v = v;
        b->cap = cap;
    }
    if (!b->n) q->bits[rank >> 6] |= 1ull << (rank & 63);
    b->v[b->n++] = pos;
}

/* Sort positions: insertion for a few, else LSD radix (3 x 11 bits). */
static void sort_pos(uint32_t *a, uint32_t *tmp, size_t n) {
    if (n < 64) {
        for (size_t i = 1; i < n; i++) {
            uint32_t x = a[i];
            size_t j = i;
            for (; j > 0 && a[j - 1] > x; j--) a[j] = a[j - 1];
            a[j] = x;
        }
        return;
    }
    uint32_t cnt[2048];
    for (int sh = 0; sh < 33; sh += 11) {
        memset(cnt, 0, sizeof cnt);
        for (size_t i = 0; i < n; i++) cnt[(a[i] >> sh) & 2047]++;
        uint32_t acc = 0;
        for (int b = 0; b < 2048; b++) {
            uint32_t k = cnt[b];
            cnt[b] = acc;
            acc += k;
        }
        for (size_t i = 0; i < n; i++) tmp[cnt[(a[i] >> sh) & 2047]++] = a[i];
        memcpy(a, tmp, n * sizeof *a);
    }
}

/* The entry of smallest (rank, pos): 1 and *rank, *pos; 0 when none is left (or on
 * failure: q->failed). Every bucket holds ranks above cur_rank and the low heap ranks at
 * or below it, so the next entry is the smaller of the low heap's top and the current
 * bucket's next; with both empty, the next bucket is the lowest rank left. */
static int bq_pop(bqueue *q, uint32_t *rank, uint32_t *pos) {
    for (;;) {
        if (q->ci < q->cur_n) {
            uint64_t k = ((uint64_t)q->cur_rank << 32) | q->cur[q->ci];
            if (q->low_n && q->low[0] < k) k = u64_pop(q->low, &q->low_n);
            else q->ci++;
            *rank = (uint32_t)(k >> 32);
            *pos = (uint32_t)k;
            return 1;
        }
        if (q->low_n) {
            uint64_t k = u64_pop(q->low, &q->low_n);
            *rank = (uint32_t)(k >> 32);
            *pos = (uint32_t)k;
            return 1;
        }
        uint64_t r = (uint64_t)(q->cur_rank + 1);
        if (r >= q->n_ranks) return 0;
        size_t w = (size_t)(r >> 6), nw = ((size_t)q->n_ranks + 63) / 64;
        uint64_t word = q->bits[w] & (~0ull << (r & 63));
        while (!word) {
            if (++w >= nw) return 0;
            word = q->bits[w];
        }
        uint32_t rk = (uint32_t)(w * 64 + (size_t)__builtin_ctzll(word));
        q->bits[w] &= ~(1ull << (rk & 63));
        bq_vec *b = &q->bucket[rk];
        size_t n = b->n;
        free(q->cur);
        q->cur = b->v;
        *b = (bq_vec){NULL, 0, 0};
        size_t i = 1;
        while (i < n && q->cur[i - 1] <= q->cur[i]) i++;
        if (i < n) {
            if (sk_grow_array((void **)&q->tmp, &q->tmp_cap, n, sizeof *q->tmp)) {
                q->cur_n = 0;
                q->failed = 1;
                return 0;
            }
            sort_pos(q->cur, q->tmp, n);
        }
        q->cur_n = n;
        q->ci = 0;
        q->cur_rank = rk;
    }
}

static void bq_free(bqueue *q) {
    if (q->bucket && q->bits)
        for (size_t w = 0; w < ((size_t)q->n_ranks + 63) / 64; w++)
            for (uint64_t b = q->bits[w]; b; b &= b - 1) free(q->bucket[w * 64 + (size_t)__builtin_ctzll(b)].v);
    free(q->bucket);
    free(q->bits);
    free(q->cur);
    free(q->tmp);
    free(q->low);
}

/* The merge loop over ns linked symbols: rank buckets for long words, else the heap (h:
 * hcap entries the caller has, used when they are enough). how: SK_BPE_AUTO, _HEAP,
 * _BUCKETS. */
static int merge_all(const skycmd_tokenizer *t, sym *s, size_t ns, hent *h, size_t hcap, int how) {
    const sk_merge_map *mm = &t->merges;
    hent add[2];
    if (ns < 2 || !mm->keys || mm->n == 0) return SKYCMD_OK;
    /* the buckets' per-rank arrays cost O(merges): worth it from a few thousand symbols */
    if (how == SK_BPE_AUTO) how = ns >= BPE_BUCKET_MIN && ns >= t->n_merges / 8 ? SK_BPE_BUCKETS : SK_BPE_HEAP;
    if (how == SK_BPE_BUCKETS && mm->by_rank) {
        bqueue q = {0};
        q.n_ranks = t->n_merges;
        q.cur_rank = -1;
        size_t nw = ((size_t)q.n_ranks + 63) / 64 + 1;
        q.bucket = calloc(q.n_ranks, sizeof *q.bucket);
        q.bits = calloc(nw, sizeof *q.bits);
        if (!q.bucket || !q.bits) q.failed = 1;
        for (size_t i = 0; i + 1 < ns && !q.failed; i++) {
            uint32_t r;
            int32_t m;
            if (merge_get(mm, s[i].id, s[i + 1].id, &r, &m)) bq_push(&q, r, (uint32_t)i);
        }
        uint32_t rank, pos;
        while (!q.failed && bq_pop(&q, &rank, &pos)) {
            /* a bucket's positions are known ahead: fetch their symbols early (a sparse
             * bucket touches one cache line per entry) */
            if (q.ci + BQ_AHEAD < q.cur_n) __builtin_prefetch(&s[q.cur[q.ci + BQ_AHEAD]], 1);
            int k = merge_step(mm, s, pos, mm->by_rank[rank], add);
            for (int i = 0; i + 1 < k; i++) bq_push(&q, add[i].rank, add[i].pos);
        }
        int failed = q.failed;
        bq_free(&q);
        return failed ? SKYCMD_E_NOMEM : SKYCMD_OK;
    }
    /* at most 2 ns entries: each merge takes one out and puts at most two in */
    hent *heap = h;
    if (!h || ns > hcap / 2) {
        size_t cap;
        if (sk_mul_size(ns, 2, &cap) || !(heap = sk_malloc_array(cap, sizeof *heap))) return SKYCMD_E_NOMEM;
    }
    size_t hn = 0;
    for (size_t i = 0; i + 1 < ns; i++) {
        uint32_t r;
        int32_t m;
        if (merge_get(mm, s[i].id, s[i + 1].id, &r, &m)) hpush(heap, &hn, (hent){r, (uint32_t)i, m});
    }
    while (hn) {
        hent top = hpop(heap, &hn);
        int k = merge_step(mm, s, top.pos, top.merged, add);
        for (int i = 0; i + 1 < k; i++) hpush(heap, &hn, add[i]);
    }
    if (heap != h) free(heap);
    return SKYCMD_OK;
}

int sk_tok_bpe_merge(const skycmd_tokenizer *t, int32_t *ids, size_t *n, int how) {
    size_t ns = *n;
    if (ns > INT32_MAX) return SKYCMD_E_TOO_LARGE;
    sym *s = sk_malloc_array(ns ? ns : 1, sizeof *s);
    if (!s) return SKYCMD_E_NOMEM;
    for (size_t i = 0; i < ns; i++) s[i] = (sym){ids[i], (int32_t)i - 1, i + 1 < ns ? (int32_t)i + 1 : -1, 1};
    int rc = merge_all(t, s, ns, NULL, 0, how);
    size_t k = 0;
    for (int32_t i = ns ? 0 : -1; i >= 0 && !rc; i = s[i].next) ids[k++] = s[i].id;
    if (!rc) *n = k;
    free(s);
    return rc;
}

typedef struct enc_ctx {
    const skycmd_tokenizer *t;
    sk_ids *out;
    sk_err *e;
    enc_scratch *sc;
    const char *text; /* the string pre-tokens refer to */
    int at_start;     /* the piece being pre-tokenized starts at offset 0 of the input */
    sk_buf norm;      /* normalized piece (normalizer chains other than NFC alone) */
    sk_buf meta;      /* Metaspace-transformed piece */
} enc_ctx;

#define BPE_STACK 256

static int emit(enc_ctx *c, int32_t id) {
    if (sk_ids_push(c->out, id)) return sk_fail(c->e, SKYCMD_E_NOMEM, "tokenizer: out of memory");
    return SKYCMD_OK;
}

/* BPE one pre-token (raw bytes; the byte-level mapping is implicit via byte_id). */
static int bpe_word(enc_ctx *c, const unsigned char *w, size_t n) {
    const skycmd_tokenizer *t = c->t;
    if (n == 0) return SKYCMD_OK;
    const int byte_level = t->pretok == SK_PRETOK_BYTELEVEL;
    if (!byte_level && t->ignore_merges) {
        int32_t id = sk_strmap_get(&t->vocab, (const char *)w, n);
        if (id >= 0) return emit(c, id);
    }
    if (byte_level) {
        /* the byte-level form of the word, for the ignore_merges lookup */
        if (t->ignore_merges) {
            char stackw[512];
            size_t need = n * 2;
            char *mw = need <= sizeof stackw ? stackw : malloc(need);
            if (!mw) return sk_fail(c->e, SKYCMD_E_NOMEM, "tokenizer: out of memory");
            size_t o = 0;
            for (size_t i = 0; i < n; i++) {
                uint32_t cp = sk_byte_to_cp(w[i]);
                if (cp < 0x80) mw[o++] = (char)cp;
                else {
                    mw[o++] = (char)(0xC0 | (cp >> 6));
                    mw[o++] = (char)(0x80 | (cp & 0x3F));
                }
            }
            int32_t id = sk_strmap_get(&t->vocab, mw, o);
            if (mw != stackw) free(mw);
            if (id >= 0) return emit(c, id);
        }
    }
    if (n > INT32_MAX) return sk_fail(c->e, SKYCMD_E_TOO_LARGE, "tokenizer: a word of %zu bytes is too long", n);
    sym stack_syms[BPE_STACK];
    hent stack_heap[BPE_STACK * 2];
    sym *s = stack_syms;
    if (n > BPE_STACK && !(s = sk_malloc_array(n, sizeof *s)))
        return sk_fail(c->e, SKYCMD_E_NOMEM, "tokenizer: out of memory");
    /* initial symbols, with HF's unknown-char handling (BPE::merge_word): one per char (per
     * byte-level char for the byte-level pipeline); a char missing from the vocabulary becomes
     * its <0xNN> tokens under byte_fallback when all of them exist (a pending unknown stays
     * pending across them, as in HF), else the unknown token (fused when fuse_unk). */
    size_t ns = 0;
    int32_t pend_unk = -1;
    for (size_t i = 0; i < n;) {
        int32_t id;
        size_t l = 1;
        if (byte_level) id = t->byte_id[w[i]];
        else {
            uint32_t cp;
            l = sk_utf8_next((const char *)w, n, i, &cp);
            id = sk_strmap_get(&t->vocab, (const char *)w + i, l);
        }
        if (id >= 0) {
            if (pend_unk >= 0) {
                s[ns++].id = pend_unk;
                pend_unk = -1;
            }
            s[ns++].id = id;
        } else {
            int fell_back = 0;
            if (!byte_level && t->byte_fallback) {
                fell_back = 1;
                for (size_t k = 0; k < l; k++)
                    if (t->fallback_id[w[i + k]] < 0) fell_back = 0;
                if (fell_back)
                    for (size_t k = 0; k < l; k++) s[ns++].id = t->fallback_id[w[i + k]];
            }
            if (!fell_back && t->bpe_unk_id >= 0) {
                if (pend_unk >= 0 && !t->fuse_unk) s[ns++].id = pend_unk;
                pend_unk = t->bpe_unk_id;
            }
        }
        i += l;
    }
    if (pend_unk >= 0) s[ns++].id = pend_unk;
    for (size_t i = 0; i < ns; i++) {
        s[i].prev = (int32_t)i - 1;
        s[i].next = i + 1 < ns ? (int32_t)i + 1 : -1;
        s[i].alive = 1;
    }
    int rc = merge_all(t, s, ns, stack_heap, sizeof stack_heap / sizeof stack_heap[0], SK_BPE_AUTO);
    if (rc) rc = sk_fail(c->e, rc, "tokenizer: out of memory");
    for (int32_t i = ns ? 0 : -1; i >= 0 && rc == SKYCMD_OK; i = s[i].next) rc = emit(c, s[i].id);
    if (s != stack_syms) free(s);
    return rc;
}

static int on_pretoken(void *ud, size_t start, size_t end) {
    enc_ctx *c = ud;
    return bpe_word(c, (const unsigned char *)c->text + start, end - start);
}

void sk_tok_replace_all(sk_buf *out, const char *s, size_t n, const sk_step *st) {
    size_t i = 0, start = 0;
    while (i + st->a_len <= n) {
        if (memcmp(s + i, st->a, st->a_len) == 0) {
            sk_buf_append(out, s + start, i - start);
            sk_buf_append(out, st->b, st->b_len);
            i += st->a_len;
            start = i;
        } else i++;
    }
    sk_buf_append(out, s + start, n - start);
}

int sk_tok_normalize(const skycmd_tokenizer *t, const char *s, size_t n, sk_buf *out) {
    sk_buf a, b;
    sk_buf_init(&a);
    sk_buf_init(&b);
    sk_buf_append(&a, s, n);
    for (int k = 0; k < t->n_norm && !a.failed; k++) {
        const sk_step *st = &t->norm[k];
        b.len = 0;
        if (st->kind == SK_STEP_NFC) {
            size_t l = 0;
            char *nf = sk_nfc_utf8(a.data ? a.data : "", a.len, &l);
            if (!nf) {
                b.failed = 1;
                break;
            }
            sk_buf_append(&b, nf, l);
            free(nf);
        } else sk_tok_replace_all(&b, a.data ? a.data : "", a.len, st);
        sk_buf tmp = a;
        a = b;
        b = tmp;
    }
    int failed = a.failed || b.failed;
    if (!failed) sk_buf_append(out, a.data ? a.data : "", a.len);
    sk_buf_free(&a);
    sk_buf_free(&b);
    return failed || out->failed ? SKYCMD_E_NOMEM : SKYCMD_OK;
}

/* A literal Split: pieces per behavior, empty ones dropped (NormalizedString::split). */
static int split_literal(enc_ctx *c, const char *s, size_t n) {
    const skycmd_tokenizer *t = c->t;
    const char *pat = t->split_pat;
    size_t pl = t->split_len, start = 0, i = 0;
    int rc = SKYCMD_OK;
    const unsigned char *u = (const unsigned char *)s;
#define PIECE(a, b) \
    do { \
        if ((b) > (a) && (rc = bpe_word(c, u + (a), (b) - (a)))) return rc; \
    } while (0)
    while (i + pl <= n) {
        if (memcmp(s + i, pat, pl) != 0) {
            i++;
            continue;
        }
        size_t m0 = i, m1 = i + pl;
        switch (t->split_behavior) {
        case SK_SPLIT_REMOVED: PIECE(start, m0); start = m1; break;
        case SK_SPLIT_ISOLATED: PIECE(start, m0); PIECE(m0, m1); start = m1; break;
        case SK_SPLIT_MERGED_PREV: PIECE(start, m1); start = m1; break;
        case SK_SPLIT_MERGED_NEXT: PIECE(start, m0); start = m0; break;
        default: /* Contiguous: a run of matches is one piece */
            while (m1 + pl <= n && memcmp(s + m1, pat, pl) == 0) m1 += pl;
            PIECE(start, m0);
            PIECE(m0, m1);
            start = m1;
            break;
        }
        i = m1;
    }
    PIECE(start, n);
#undef PIECE
    return rc;
}

/* Metaspace: ' ' -> replacement, prepend per scheme, then split before every replacement. */
static int metaspace(enc_ctx *c, const char *s, size_t n) {
    const skycmd_tokenizer *t = c->t;
    const char *rep = t->meta_rep;
    size_t rl = t->meta_rep_len;
    sk_buf *b = &c->meta;
    b->len = 0;
    int starts = n >= rl && memcmp(s, rep, rl) == 0;
    starts |= n > 0 && s[0] == ' '; /* becomes the replacement */
    if (!starts && (t->meta_prepend == SK_PREPEND_ALWAYS || (t->meta_prepend == SK_PREPEND_FIRST && c->at_start)))
        sk_buf_append(b, rep, rl);
    for (size_t i = 0; i < n; i++) {
        if (s[i] == ' ') sk_buf_append(b, rep, rl);
        else sk_buf_putc(b, s[i]);
    }
    if (b->failed) return sk_fail(c->e, SKYCMD_E_NOMEM, "tokenizer: out of memory");
    const unsigned char *u = (const unsigned char *)b->data;
    size_t m = b->len;
    if (!t->meta_split) return bpe_word(c, u, m);
    size_t start = 0;
    int rc;
    for (size_t i = 1; i + rl <= m; i++) {
        if (memcmp(u + i, rep, rl) != 0) continue;
        if ((rc = bpe_word(c, u + start, i - start))) return rc;
        start = i;
        i += rl - 1;
    }
    return bpe_word(c, u + start, m - start);
}

static int encode_plain(enc_ctx *c, const char *s, size_t n) {
    if (n == 0) return SKYCMD_OK;
    switch (c->t->pretok) {
    case SK_PRETOK_NONE: return bpe_word(c, (const unsigned char *)s, n);
    case SK_PRETOK_SPLIT: return split_literal(c, s, n);
    case SK_PRETOK_METASPACE: return metaspace(c, s, n);
    default: break;
    }
    const char *saved = c->text;
    c->text = s;
    int rc = sk_pretok_gpt2(s, n, on_pretoken, c);
    c->text = saved;
    return rc;
}

/* ------------------------------------------------------------------ added tokens - */

static size_t ws_trailing_start(const char *s, size_t n) {
    /* start of the maximal run of White_Space at the end of s[0..n) */
    size_t i = n;
    while (i > 0) {
        size_t j = i - 1;
        while (j > 0 && ((unsigned char)s[j] & 0xC0) == 0x80) j--;
        uint32_t cp;
        sk_utf8_next(s, n, j, &cp);
        if (!sk_uni_is_space(cp)) break;
        i = j;
    }
    return i;
}

static size_t ws_leading_len(const char *s, size_t n) {
    size_t i = 0;
    while (i < n) {
        uint32_t cp;
        size_t l = sk_utf8_next(s, n, i, &cp);
        if (!sk_uni_is_space(cp)) break;
        i += l;
    }
    return i;
}

static int ends_with_word(const char *s, size_t n) {
    if (n == 0) return 0;
    size_t j = n - 1;
    while (j > 0 && ((unsigned char)s[j] & 0xC0) == 0x80) j--;
    uint32_t cp;
    sk_utf8_next(s, n, j, &cp);
    return sk_uni_is_word(cp);
}

static int starts_with_word(const char *s, size_t n) {
    if (n == 0) return 0;
    uint32_t cp;
    sk_utf8_next(s, n, 0, &cp);
    return sk_uni_is_word(cp);
}

/* Longest added-token pattern of pass p matching at s[i]; -1 if none. */
static int32_t match_at(const skycmd_tokenizer *t, int p, const char *s, size_t n, size_t i) {
    unsigned b = (unsigned char)s[i];
    for (uint32_t k = t->first_start[p][b]; k < t->first_start[p][b + 1]; k++) {
        const sk_added_token *a = &t->added[t->first_list[p][k]];
        if (a->pattern_len <= n - i && memcmp(a->pattern, s + i, a->pattern_len) == 0)
            return (int32_t)t->first_list[p][k];
    }
    return -1;
}

typedef int (*piece_fn)(enc_ctx *c, const char *s, size_t n);

/* AddedVocabulary::find_matches + split: non-token pieces go to fn, tokens are emitted. */
static int split_added(enc_ctx *c, int p, const char *s, size_t n, piece_fn fn) {
    const skycmd_tokenizer *t = c->t;
    if (n == 0) return SKYCMD_OK;
    if (!t->first_start[p] || t->first_start[p][256] == 0) return fn(c, s, n);
    size_t start_offset = 0, pos = 0;
    int rc;
    while (pos < n) {
        size_t i = pos;
        int32_t k = -1;
        for (; i < n; i++)
            if ((k = match_at(t, p, s, n, i)) >= 0) break;
        if (k < 0) break;
        const sk_added_token *a = &t->added[k];
        size_t start = i, stop = i + a->pattern_len;
        pos = stop;
        if (a->flags & SK_ADDED_SINGLE_WORD) {
            int start_space = start == 0 || !ends_with_word(s, start);
            int stop_space = stop == n || !starts_with_word(s + stop, n - stop);
            if (!start_space || !stop_space) continue;
        }
        if (a->flags & SK_ADDED_LSTRIP) {
            size_t ns = ws_trailing_start(s, start);
            start = ns > start_offset ? ns : start_offset;
        }
        if (a->flags & SK_ADDED_RSTRIP) stop += ws_leading_len(s + stop, n - stop);
        if (start_offset < start) {
            int saved = c->at_start;
            c->at_start = saved && start_offset == 0;
            rc = fn(c, s + start_offset, start - start_offset);
            c->at_start = saved;
            if (rc) return rc;
        }
        if ((rc = emit(c, a->id))) return rc;
        start_offset = stop;
    }
    if (start_offset < n) {
        int saved = c->at_start;
        c->at_start = saved && start_offset == 0;
        rc = fn(c, s + start_offset, n - start_offset);
        c->at_start = saved;
        return rc;
    }
    return SKYCMD_OK;
}

static int on_normalized_piece(enc_ctx *c, const char *s, size_t n) {
    return split_added(c, 1, s, n, encode_plain);
}

static int on_raw_piece(enc_ctx *c, const char *s, size_t n) {
    const skycmd_tokenizer *t = c->t;
    if (t->n_norm == 0 || (t->n_norm == 1 && t->norm[0].kind == SK_STEP_NFC && is_ascii(s, n)))
        return on_normalized_piece(c, s, n);
    if (!(t->n_norm == 1 && t->norm[0].kind == SK_STEP_NFC)) {
        c->norm.len = 0;
        if (sk_tok_normalize(t, s, n, &c->norm)) return sk_fail(c->e, SKYCMD_E_NOMEM, "tokenizer: out of memory");
        return on_normalized_piece(c, c->norm.data ? c->norm.data : "", c->norm.len);
    }
    const char *ns = NULL;
    size_t nn = 0;
    int rc = nfc_into(c->sc, s, n, &ns, &nn, c->e);
    if (rc) return rc;
    /* the scratch NFC buffer is reused only by the next raw piece, after this one is done */
    return on_normalized_piece(c, ns, nn);
}

int sk_tokenizer_encode(const skycmd_tokenizer *t, const char *text, size_t len, sk_ids *out,
                        sk_err *e) {
    if (!t || !out || (!text && len))
        return sk_fail(e, SKYCMD_E_INVALID_ARGUMENT, "tokenizer: NULL argument");
    if (len && !sk_utf8_valid(text, len))
        return sk_fail(e, SKYCMD_E_INVALID_ARGUMENT, "tokenizer: text is not valid UTF-8");
    enc_scratch sc;
    scratch_init(&sc);
    enc_ctx c = {t, out, e, &sc, text, 1, {0}, {0}};
    sk_buf_init(&c.norm);
    sk_buf_init(&c.meta);
    size_t n0 = out->n;
    int rc = split_added(&c, 0, text, len, on_raw_piece);
    scratch_free(&sc);
    sk_buf_free(&c.norm);
    sk_buf_free(&c.meta);
    if (rc) out->n = n0;
    return rc;
}

/* ------------------------------------------------------------------ queries ----- */

int32_t sk_tokenizer_special(const skycmd_tokenizer *t, int which) {
    if (!t || which < 0 || which > 4) return -1;
    return t->special[which];
}

const char *sk_tokenizer_special_text(const skycmd_tokenizer *t, int which) {
    int32_t id = sk_tokenizer_special(t, which);
    return id >= 0 ? sk_tokenizer_piece(t, id) : NULL;
}

const char *sk_tokenizer_piece(const skycmd_tokenizer *t, int32_t id) {
    if (!t || id < 0 || (size_t)id >= t->n_ids) return NULL;
    return t->piece[id];
}

size_t sk_tokenizer_vocab_size(const skycmd_tokenizer *t) { return t ? t->n_ids : 0; }

int sk_tok_build_vocab(skycmd_tokenizer *t, sk_err *e) {
    size_t cnt = 0;
    for (size_t i = 0; i < t->n_ids; i++)
        if (t->model_tok[i]) cnt++;
    if (strmap_init(&t->vocab, cnt)) return sk_fail(e, SKYCMD_E_NOMEM, "tokenizer: out of memory");
    for (size_t i = 0; i < t->n_ids; i++)
        if (t->model_tok[i] && strmap_put(&t->vocab, t->model_tok[i], t->model_tok_len[i], (int32_t)i))
            return sk_fail(e, SKYCMD_E_INTERNAL, "tokenizer: vocabulary map overflow");
    return SKYCMD_OK;
}
