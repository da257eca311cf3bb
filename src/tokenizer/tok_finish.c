/*
 * tok_finish.c - what a loader ends with once a tokenizer's tables are in (sk_tok_finish:
 * the byte ids, the unknown token's check, the added-token index by first byte, the run
 * margins and the space cuts), and the cut rules a prompt reads from them
 * (sk_tokenizer_space_cut_safe, sk_tokenizer_cut_rules): the places where an encoding
 * splits exactly, so a long state can be tokenized in pieces.
 */
#include <stdlib.h>
#include <string.h>

#include "tokenizer.h"

/* Without a pre-tokenizer that starts a word at a space, BPE merges across any cut (the
 * Gemma pipeline BPEs a whole piece as one word); a normalizer other than NFC could
 * change the bytes around one. */
static int cuttable_pipeline(const skycmd_tokenizer *t) {
    return t->pretok == SK_PRETOK_BYTELEVEL && t->n_norm <= 1 && (t->n_norm == 0 || t->norm[0].kind == SK_STEP_NFC);
}

/* The SentencePiece-style pipelines turn a space into a replacement R (a Replace " " -> R
 * normalizer, or Metaspace) and BPE the whole text as one word (or Metaspace's pieces, each
 * starting at an R). A cut just before a space, after a printable ASCII byte, still splits
 * the encoding exactly when:
 *  - no vocabulary entry holds R right after another character: every merge makes an entry,
 *    so none joins the symbols on the cut's two sides;
 *  - the rest of the normalizer is NFC, which composes nothing across an ASCII space, and a
 *    Split pre-tokenizer only splits at spaces the Replace has already removed;
 *  - R is an entry of its own, so no unknown token is fused across the cut.
 * The prepend schemes add R only to a piece not starting with one: a piece from the cut on
 * starts with the space. Sets space_rep to R, else leaves it empty. */
static int spm_space_cut(skycmd_tokenizer *t) {
    t->space_rep = NULL;
    t->space_rep_len = 0;
    const char *r = NULL;
    size_t rl = 0;
    int replaces = 0;
    for (int k = 0; k < t->n_norm; k++) {
        const sk_step *st = &t->norm[k];
        if (st->kind == SK_STEP_NFC) continue;
        if (st->kind != SK_STEP_REPLACE || st->a_len != 1 || st->a[0] != ' ' || replaces++) return 0;
        r = st->b;
        rl = st->b_len;
    }
    if (t->pretok == SK_PRETOK_METASPACE) {
        if (replaces) return 0;
        r = t->meta_rep;
        rl = t->meta_rep_len;
    } else if (t->pretok == SK_PRETOK_SPLIT) {
        if (!replaces || t->split_len != 1 || t->split_pat[0] != ' ') return 0;
    } else if (t->pretok != SK_PRETOK_NONE || !replaces) {
        return 0;
    }
    if (!r || rl == 0 || memchr(r, ' ', rl)) return 0;
    if (sk_strmap_get(&t->vocab, r, rl) < 0) return 1;
    for (size_t id = 0; id < t->n_ids; id++) {
        const char *p = t->model_tok[id];
        size_t pl = p ? t->model_tok_len[id] : 0;
        for (size_t i = 1; i + rl <= pl; i++)
            if (memcmp(p + i, r, rl) == 0 && !(i >= rl && memcmp(p + i - rl, r, rl) == 0)) return 1;
    }
    t->space_rep = r;
    t->space_rep_len = (uint32_t)rl;
    return 1;
}

/* Pair cuts (sk_pair_cut_ok): a cut between two printable ASCII bytes x y that no merge's
 * result holds side by side splits the encoding exactly: no merge can join the symbols on
 * the two sides; both are entries of their own (no unknown token fused across); no added
 * token's text spans it. The pipeline must not split or change the text
 * differently there: the byte-level one (x and y in one cut class are inside one GPT-2
 * piece; NFC composes nothing onto an ASCII byte followed by one) or the SentencePiece
 * shapes of spm_space_cut (keeping the start only when Metaspace prepends its marker to a
 * piece, as it would to one from the cut on); and with ignore_merges every entry must be
 * shorter than the smallest piece a cut leaves (SK_CUT_MIN_PIECE), so that no piece is
 * looked up whole. The byte-level pipeline looks up each GPT-2 piece and Metaspace with
 * split each of its pieces, which a pair cut leaves short: no pair cuts there with
 * ignore_merges. */
static void pair_cuts(skycmd_tokenizer *t, int spm_shape) {
    memset(t->pair_join, 0, sizeof t->pair_join);
    /* the words ignore_merges looks up: GPT-2 pieces, Metaspace's split pieces (both short
     * beside a cut), else the whole text (a piece is at least SK_CUT_MIN_PIECE bytes) */
    const int one_word = spm_shape && !(t->pretok == SK_PRETOK_METASPACE && t->meta_split);
    t->pair_cuts = (cuttable_pipeline(t) && !t->ignore_merges) ||
                   (spm_shape && (!t->ignore_merges || (one_word && t->max_token_bytes < SK_CUT_MIN_PIECE)));
    const int byte_level = t->pretok == SK_PRETOK_BYTELEVEL;
#define JOIN(x, y) (t->pair_join[((unsigned)(x) * 128u + (unsigned)(y)) >> 6] |= 1ull << (((unsigned)(x) * 128u + (unsigned)(y)) & 63))
    for (int b = 0x21; b < 0x7F; b++) {
        char c = (char)b;
        int known = byte_level ? t->byte_id[b] >= 0 : sk_strmap_get(&t->vocab, &c, 1) >= 0;
        if (!known)
            for (int o = 0; o < 128; o++) JOIN(b, o), JOIN(o, b);
    }
    /* only what a merge makes can join two symbols (byte-fallback entries such as <0x12>
     * never are); printable ASCII is itself in the byte-level alphabet, so an entry is
     * searched as bytes */
    const sk_merge_map *mm = &t->merges;
    for (uint32_t slot = 0; mm->keys && slot <= mm->mask; slot++) {
        if (!mm->keys[slot] || mm->merged[slot] < 0 || (size_t)mm->merged[slot] >= t->n_ids) continue;
        const unsigned char *p = (const unsigned char *)t->model_tok[mm->merged[slot]];
        size_t pl = p ? t->model_tok_len[mm->merged[slot]] : 0;
        for (size_t i = 1; i < pl; i++)
            if (p[i - 1] < 0x80 && p[i] < 0x80) JOIN(p[i - 1], p[i]);
    }
    for (size_t i = 0; i < t->n_added; i++) {
        const unsigned char *p = (const unsigned char *)t->added[i].pattern;
        for (size_t j = 1; j < t->added[i].pattern_len; j++)
            if (p[j - 1] < 0x80 && p[j] < 0x80) JOIN(p[j - 1], p[j]);
        if (t->added[i].flags & SK_ADDED_SINGLE_WORD) t->pair_cuts = 0;
    }
#undef JOIN
}

int sk_tokenizer_space_cut_safe(const skycmd_tokenizer *t) {
    if (!t) return 0;
    unsigned cuts;
    if (cuttable_pipeline(t)) cuts = SK_CUT_SPACE | SK_CUT_CLASS_ALL;
    else if (t->space_rep_len && !(t->ignore_merges && t->max_token_bytes >= SK_CUT_MIN_PIECE)) cuts = SK_CUT_SPACE;
    else return 0;
    /* Both kinds of cut sit between two ASCII bytes that NFC never composes across and that
     * no GPT-2 piece spans: a piece holds a space only at its start or in a run of spaces,
     * and one class of letter / digit / other only (the contractions 's 't 're 've 'm 'll 'd
     * begin with the apostrophe, which is no cut class). Added tokens can break them: */
    for (size_t i = 0; i < t->n_added; i++) {
        const sk_added_token *a = &t->added[i];
        const unsigned char *p = (const unsigned char *)a->pattern;
        /* rstrip would take the space after the cut into a token left of it */
        if (a->flags & SK_ADDED_RSTRIP) cuts &= ~SK_CUT_SPACE;
        /* single_word looks at the bytes around a match: at a class cut the neighbour of a
         * match ending or starting there differs from the text's end; at a space cut only
         * a match starting with the space can tell */
        if (a->flags & SK_ADDED_SINGLE_WORD) {
            cuts &= ~SK_CUT_CLASS_ALL;
            if (a->pattern_len && p[0] == ' ') cuts &= ~SK_CUT_SPACE;
        }
        /* a match spanning a space cut holds the space and the printable byte before it;
         * runs of spaces alone (ModernBERT's "  " ... "        ") cannot */
        int space = 0, printable = 0;
        for (size_t j = 0; j < a->pattern_len; j++) {
            space |= p[j] == ' ';
            printable |= p[j] > 0x20 && p[j] < 0x7F;
        }
        if (space && printable) cuts &= ~SK_CUT_SPACE;
        /* the same in normalized text, where the space is the replacement */
        if (t->space_rep_len && printable) {
            for (size_t j = 0; j + t->space_rep_len <= a->pattern_len; j++)
                if (memcmp(p + j, t->space_rep, t->space_rep_len) == 0) cuts &= ~SK_CUT_SPACE;
        }
        /* a match spanning a class cut holds its two bytes side by side
         * ("|||IP_ADDRESS|||" rules out other-letter and letter-other cuts) */
        for (size_t j = 1; j < a->pattern_len; j++) {
            int ca = sk_cut_class(p[j - 1]), cb = sk_cut_class(p[j]);
            if (ca >= 0 && cb >= 0 && ca != cb) cuts &= ~SK_CUT_CLASS(ca, cb);
        }
    }
    return (int)cuts;
}

void sk_tokenizer_cut_rules(const skycmd_tokenizer *t, sk_cut_rules *rules) {
    memset(rules, 0, sizeof *rules);
    if (!t) return;
    rules->cuts = (unsigned)sk_tokenizer_space_cut_safe(t);
    if (t->pair_cuts) rules->pair_join = t->pair_join;
    rules->pair_start_only = t->pretok == SK_PRETOK_METASPACE && t->meta_prepend != SK_PREPEND_NEVER;
    if (!cuttable_pipeline(t)) return; /* run cuts: the byte-level pipeline's GPT-2 pieces */
    /* A run cut sits between two bytes of one class, inside one GPT-2 piece. An added
     * token's match spans it only if its pattern holds two bytes of that class side by
     * side; then the matches, and so the pieces, can differ up to its length from the cut
     * (leftmost-longest finds the same matches before that), and the merges' margin starts
     * there: run_edge. A cut never changes what NFC does (the run is ASCII). single_word
     * looks at the bytes around a match: no run cuts at all. */
    uint32_t edge[3] = {0, 0, 0};
    for (size_t i = 0; i < t->n_added; i++) {
        const sk_added_token *a = &t->added[i];
        const unsigned char *p = (const unsigned char *)a->pattern;
        if (a->flags & SK_ADDED_SINGLE_WORD) return;
        for (size_t j = 1; j < a->pattern_len; j++) {
            int c = sk_cut_class(p[j - 1]);
            if (c >= 0 && c == sk_cut_class(p[j]) && a->pattern_len > edge[c]) edge[c] = a->pattern_len;
        }
    }
    size_t off = 0;
    for (int c = 0; c < 3; c++) {
        if (t->run_margin[c] && edge[c] < (1u << 20)) {
            rules->run_margin[c] = t->run_margin[c] + edge[c];
            rules->run_edge[c] = edge[c];
            rules->run_merges[c] = t->run_merges + off;
            rules->n_run_merges[c] = t->n_run_merges[c];
        }
        off += t->n_run_merges[c];
    }
    rules->run_min = t->max_token_bytes + 1;
}

/* ------------------------------------------------------------------ finish ------ */

/* Insertion sort of one first-byte bucket: longest pattern first (buckets are small; no
 * qsort so that building tokenizers in several threads needs no shared state). */
static void sort_bucket(const sk_added_token *added, uint32_t *v, size_t n) {
    for (size_t i = 1; i < n; i++) {
        uint32_t x = v[i];
        size_t j = i;
        while (j > 0) {
            uint32_t y = v[j - 1];
            int before = added[x].pattern_len > added[y].pattern_len ||
                         (added[x].pattern_len == added[y].pattern_len && x < y);
            if (!before) break;
            v[j] = y;
            j--;
        }
        v[j] = x;
    }
}

/* ------------------------------------------------------------------ run cuts ---- */

/* Cuts inside a run of one cut class (a run of digits has no exact cut: BPE'ing a 2 MB one
 * whole costs 36x a state that fits). Why such a cut splits the encoding but near the cut:
 *  - When no token is created (by any merge) at a rank above that of a merge consuming it
 *    ("monotone" merges, true of trained BPE; checked here), every pair a merge makes ranks
 *    above it, so HF's merge loop applies the merges in rank order, each rank's pair (a, b)
 *    left to right across the word (only a == b overlaps, and the leftmost pair wins).
 *  - Compare a word with its prefix cut at k. Before any merge they agree left of k. One
 *    rank's pass decides each pair from its left neighbour's outcome, so pairs left of the
 *    point up to which both agree (the frontier) are decided alike; only the pair
 *    straddling it can differ, which moves the frontier left by the length of a at most.
 *  - In a run of class c the symbols near the frontier are tokens of class c alone, so it
 *    moves at most once per merge making such a token: the tokens of the prefix agree with
 *    the word's left of k - run_margin[c], run_margin[c] = 1 + the sum of those merges'
 *    left-token lengths (the 1 keeps 0 meaning "none").
 *  - The run must reach back past that by more than the longest token (run_min), so that
 *    the frontier meets no leading space or other piece, and the cut piece is not itself a
 *    vocabulary entry (ignore_merges would emit it whole).
 * Keeping the end instead (a suffix), the frontier moves right; a merge of a token with
 * itself can carry it across a whole run of copies, so that bound depends on the text:
 * run_merges lists each class's merges in rank order for the prompt to bound it
 * (src/prompt/prompt.c frontier_bound).
 * No run cuts (all 0) for merges that are not monotone, a class byte with no byte token,
 * or on allocation failure: the state is then tokenized whole, as before. */
static void run_margins(skycmd_tokenizer *t) {
    memset(t->run_margin, 0, sizeof t->run_margin);
    memset(t->n_run_merges, 0, sizeof t->n_run_merges);
    free(t->run_merges);
    t->run_merges = NULL;
    t->max_token_bytes = 0;
    if (t->pretok != SK_PRETOK_BYTELEVEL) return;
    const sk_merge_map *mm = &t->merges;
    size_t nid = t->n_ids;
    int8_t *cls = malloc(nid ? nid : 1);
    uint32_t *len = sk_malloc_array(nid ? nid : 1, sizeof *len);
    uint32_t *made_max = calloc(nid ? nid : 1, sizeof *made_max); /* highest creating rank + 1 */
    uint32_t *used_min = sk_malloc_array(nid ? nid : 1, sizeof *used_min);
    uint32_t *at_rank = NULL;
    if (!cls || !len || !made_max || !used_min) goto done;
    for (size_t id = 0; id < nid; id++) {
        used_min[id] = UINT32_MAX;
        cls[id] = -1;
        len[id] = 0;
        const char *p = t->model_tok[id];
        if (!p) continue;
        size_t pl = t->model_tok_len[id], nb = 0;
        int c = -2;
        for (size_t i = 0; i < pl;) {
            uint32_t cp;
            i += sk_utf8_next(p, pl, i, &cp);
            int b = sk_cp_to_byte(cp), bc = b >= 0 ? sk_cut_class((unsigned char)b) : -1;
            c = c == -2 || c == bc ? bc : -1;
            nb++;
        }
        cls[id] = (int8_t)(c == -2 ? -1 : c);
        len[id] = nb > UINT32_MAX ? UINT32_MAX : (uint32_t)nb;
        if (len[id] > t->max_token_bytes) t->max_token_bytes = len[id];
    }
    for (uint32_t i = 0; mm->keys && i <= mm->mask; i++) {
        if (!mm->keys[i]) continue;
        uint64_t key = mm->keys[i] - 1;
        uint32_t a = (uint32_t)(key >> 32), b = (uint32_t)key, m = (uint32_t)mm->merged[i], r = mm->rank[i];
        if (a >= nid || b >= nid || m >= nid) goto done;
        if (made_max[m] < r + 1) made_max[m] = r + 1;
        if (used_min[a] > r) used_min[a] = r;
        if (used_min[b] > r) used_min[b] = r;
    }
    for (size_t id = 0; id < nid; id++)
        if (made_max[id] && used_min[id] != UINT32_MAX && made_max[id] - 1 >= used_min[id]) goto done;
    /* the class merges in rank order (a slot per rank; duplicates keep their last rank) */
    at_rank = sk_malloc_array(mm->n_ranks ? mm->n_ranks : 1, sizeof *at_rank);
    if (!at_rank) goto done;
    for (uint32_t r = 0; r < mm->n_ranks; r++) at_rank[r] = UINT32_MAX;
    size_t n_class = 0;
    for (uint32_t i = 0; mm->keys && i <= mm->mask; i++)
        if (mm->keys[i] && cls[mm->merged[i]] >= 0 && mm->rank[i] < mm->n_ranks) {
            at_rank[mm->rank[i]] = i;
            n_class++;
        }
    if (!(t->run_merges = sk_malloc_array(n_class ? n_class : 1, sizeof *t->run_merges))) goto done;
    uint64_t sum[3] = {1, 1, 1};
    size_t off = 0;
    for (int c = 0; c < 3; c++) {
        sk_run_merge *list = t->run_merges + off;
        size_t k = 0;
        for (uint32_t r = 0; r < mm->n_ranks; r++) {
            uint32_t i = at_rank[r];
            if (i == UINT32_MAX || cls[mm->merged[i]] != c) continue;
            uint32_t a = (uint32_t)((mm->keys[i] - 1) >> 32), b = (uint32_t)(mm->keys[i] - 1);
            /* printable ASCII maps to itself in the byte-level alphabet: the token is its bytes */
            list[k++] = (sk_run_merge){t->model_tok[a], len[a], len[b], a == b};
            sum[c] += len[a];
        }
        t->n_run_merges[c] = k;
        off += k;
    }
    for (int c = 0; c < 3; c++) {
        int bytes_ok = 1;
        for (int b = 0x21; b < 0x7F; b++)
            if (sk_cut_class((unsigned char)b) == c && t->byte_id[b] < 0) bytes_ok = 0;
        if (bytes_ok && sum[c] < (1u << 30)) t->run_margin[c] = (uint32_t)sum[c];
    }
done:
    free(at_rank);
    free(cls);
    free(len);
    free(made_max);
    free(used_min);
}

int sk_tok_finish(skycmd_tokenizer *t, sk_err *e) {
    /* byte ids */
    for (int b = 0; b < 256; b++) {
        uint32_t cp = sk_byte_to_cp((uint8_t)b);
        char u[2];
        size_t l = 0;
        if (cp < 0x80) u[l++] = (char)cp;
        else {
            u[l++] = (char)(0xC0 | (cp >> 6));
            u[l++] = (char)(0x80 | (cp & 0x3F));
        }
        t->byte_id[b] = sk_strmap_get(&t->vocab, u, l);
    }
    run_margins(t);
    if (t->pretok != SK_PRETOK_BYTELEVEL)
        for (size_t id = 0; id < t->n_ids; id++)
            if (t->model_tok[id] && t->model_tok_len[id] > t->max_token_bytes) t->max_token_bytes = t->model_tok_len[id];
    pair_cuts(t, spm_space_cut(t));
    sk_tok_set_fallback_ids(t);
    if (t->bpe_unk) {
        t->bpe_unk_id = sk_strmap_get(&t->vocab, t->bpe_unk, strlen(t->bpe_unk));
        if (t->bpe_unk_id < 0 && t->pretok != SK_PRETOK_BYTELEVEL) {
            for (int b = 0; b < 256; b++)
                if (!t->byte_fallback || t->fallback_id[b] < 0)
                    return sk_fail(e, SKYCMD_E_FORMAT, "tokenizer: model.unk_token \"%s\" is not in the vocabulary",
                                   t->bpe_unk);
        } else if (t->bpe_unk_id < 0) {
            /* HF fails only when an unknown char is met; we refuse up front if it could be */
            for (int b = 0; b < 256; b++)
                if (t->byte_id[b] < 0)
                    return sk_fail(e, SKYCMD_E_FORMAT, "tokenizer: model.unk_token \"%s\" is not in the vocabulary",
                                   t->bpe_unk);
        }
    }
    /* added-token indices, one per pass */
    for (int p = 0; p < 2; p++) {
        uint32_t *start = calloc(257, sizeof *start);
        uint32_t *list = sk_malloc_array(t->n_added + 1, sizeof *list);
        if (!start || !list) {
            free(start);
            free(list);
            return sk_fail(e, SKYCMD_E_NOMEM, "tokenizer: out of memory");
        }
        uint32_t cnt[257] = {0};
        for (size_t i = 0; i < t->n_added; i++) {
            const sk_added_token *a = &t->added[i];
            if (a->pattern_len == 0 || a->id < 0) continue;
            if (((a->flags & SK_ADDED_NORMALIZED) != 0) != (p == 1)) continue;
            cnt[(unsigned char)a->pattern[0]]++;
        }
        uint32_t acc = 0;
        for (int b = 0; b < 256; b++) {
            start[b] = acc;
            acc += cnt[b];
        }
        start[256] = acc;
        uint32_t fill[256];
        memcpy(fill, start, sizeof fill);
        for (size_t i = 0; i < t->n_added; i++) {
            const sk_added_token *a = &t->added[i];
            if (a->pattern_len == 0 || a->id < 0) continue;
            if (((a->flags & SK_ADDED_NORMALIZED) != 0) != (p == 1)) continue;
            list[fill[(unsigned char)a->pattern[0]]++] = (uint32_t)i;
        }
        for (int b = 0; b < 256; b++) {
            sort_bucket(t->added, list + start[b], start[b + 1] - start[b]);
            for (uint32_t k = start[b] + 1; k < start[b + 1]; k++) {
                const sk_added_token *x = &t->added[list[k - 1]], *y = &t->added[list[k]];
                if (x->pattern_len == y->pattern_len && memcmp(x->pattern, y->pattern, x->pattern_len) == 0)
                    return free(start), free(list),
                           sk_fail(e, SKYCMD_E_FORMAT, "tokenizer: added tokens %d and %d match the same text \"%.*s\"",
                                   x->id, y->id, (int)(x->pattern_len > 64 ? 64 : x->pattern_len), x->pattern);
            }
        }
        t->first_start[p] = start;
        t->first_list[p] = list;
    }
    return SKYCMD_OK;
}
