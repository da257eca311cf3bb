/* prompt.c - the Laya token sequence (Python build_head + build_sequence). See prompt.h. */
#include <stdlib.h>
#include <string.h>

#include "prompt.h"

int sk_i32v_reserve(sk_i32v *a, size_t extra) {
    size_t need;
    if (sk_add_size(a->n, extra, &need)) return SKYCMD_E_NOMEM;
    if (need <= a->cap) return 0;
    size_t cap = a->cap ? a->cap : 64;
    while (cap < need) {
        if (cap > SIZE_MAX / 2) { cap = need; break; }
        cap *= 2;
    }
    int32_t *v = sk_malloc_array(cap, sizeof *v);
    if (!v) return SKYCMD_E_NOMEM;
    if (a->n) memcpy(v, a->v, a->n * sizeof *v);
    free(a->v);
    a->v = v;
    a->cap = cap;
    return 0;
}

int sk_i32v_push(sk_i32v *a, int32_t x) {
    if (a->n == a->cap && sk_i32v_reserve(a, 1)) return SKYCMD_E_NOMEM;
    a->v[a->n++] = x;
    return 0;
}

int sk_i32v_append(sk_i32v *a, const int32_t *x, size_t n) {
    if (!n) return 0;
    if (sk_i32v_reserve(a, n)) return SKYCMD_E_NOMEM;
    memcpy(a->v + a->n, x, n * sizeof *x);
    a->n += n;
    return 0;
}

void sk_i32v_free(sk_i32v *a) {
    free(a->v);
    memset(a, 0, sizeof *a);
}

void sk_prompt_ws_free(sk_prompt_ws *ws) {
    sk_buf_free(&ws->text);
    sk_i32v_free(&ws->head);
    sk_i32v_free(&ws->opts);
    free(ws->opt_end);
    memset(ws, 0, sizeof *ws);
}

void sk_prompt_unmask(sk_buf *out, const char *s, size_t n, const char *mask_text) {
    size_t m = mask_text ? strlen(mask_text) : 0;
    if (m == 0 || n < m) {
        sk_buf_append(out, s, n);
        return;
    }
    size_t run = 0, i = 0;
    while (i + m <= n) {
        const char *hit = memchr(s + i, mask_text[0], n - m + 1 - i);
        if (!hit) break;
        i = (size_t)(hit - s);
        if (memcmp(s + i, mask_text, m) == 0) {
            sk_buf_append(out, s + run, i - run);
            sk_buf_putc(out, ' ');
            i += m;
            run = i;
        } else {
            i++;
        }
    }
    sk_buf_append(out, s + run, n - run);
}

static void reset_text(sk_buf *b) {
    b->len = 0;
    b->failed = 0;
}

static int encode_text(const sk_prompt_tok *t, sk_prompt_ws *ws, sk_i32v *out, sk_err *e) {
    if (ws->text.failed) return sk_fail(e, SKYCMD_E_NOMEM, "out of memory building the prompt");
    return t->encode(t->ctx, ws->text.data ? ws->text.data : "", ws->text.len, out, e);
}

int sk_prompt_state_ids(const sk_prompt_tok *t, const char *state, size_t n, sk_prompt_ws *ws,
                        sk_i32v *out, sk_err *e) {
    out->n = 0;
    reset_text(&ws->text);
    sk_prompt_unmask(&ws->text, state, n, t->mask_text);
    return encode_text(t, ws, out, e);
}

/* 1 when no mask text touches s[k-1] or s[k] (it becomes a space; with none across a
 * cut, the unmasked halves are the halves of the unmasked state). */
static int mask_clear(const char *s, size_t n, size_t k, const char *mt, size_t mlen) {
    for (size_t j = k >= mlen ? k - mlen : 0; mlen && j <= k && j + mlen <= n; j++)
        if (s[j] == mt[0] && memcmp(s + j, mt, mlen) == 0) return 0;
    return 1;
}

/* The cut class every byte of the mask text has, -1 if none: a mask inside a run of that
 * class would become a space and end the run early, so runs of it get no run cuts. */
static int mask_class(const char *mt, size_t mlen) {
    int c = mlen ? sk_cut_class((unsigned char)mt[0]) : -1;
    for (size_t i = 1; i < mlen && c >= 0; i++)
        if (sk_cut_class((unsigned char)mt[i]) != c) c = -1;
    return c;
}

/* The first cut just before s[k], from <= k < n, that keeps the state's start: an exact
 * cut (*margin 0), or a run cut (sk_cut_rules: *margin the bytes before k whose tokens may
 * differ). 0 if none. */
static size_t cut_forward(const sk_cut_rules *r, const char *s, size_t n, size_t from, const char *mt, size_t mlen,
                          size_t *margin) {
    const int mc = mask_class(mt, mlen);
    size_t run = 0; /* bytes of s[k-1]'s class ending at k-1 (counted back far enough) */
    uint64_t far = r->run_min;
    for (int c = 0; c < 3; c++)
        if (r->run_margin[c] && r->run_margin[c] + (uint64_t)r->run_min > far) far = r->run_margin[c] + (uint64_t)r->run_min;
    if (from > 0 && sk_cut_class((unsigned char)s[from - 1]) >= 0) {
        int c = sk_cut_class((unsigned char)s[from - 1]);
        while (run < from && run < far && sk_cut_class((unsigned char)s[from - 1 - run]) == c) run++;
    }
    for (size_t k = from ? from : 1; k < n; k++) {
        int ca = sk_cut_class((unsigned char)s[k - 1]), cb = sk_cut_class((unsigned char)s[k]);
        if ((sk_cut_ok(r->cuts, s, k) || sk_pair_cut_ok(r, s, k)) && mask_clear(s, n, k, mt, mlen)) {
            *margin = 0;
            return k;
        }
        if (ca >= 0 && ca == cb && ca != mc && r->run_margin[ca] &&
            run >= (uint64_t)r->run_margin[ca] + r->run_min && mask_clear(s, n, k, mt, mlen)) {
            *margin = r->run_margin[ca];
            return k;
        }
        run = cb < 0 ? 0 : cb == ca ? run + 1 : 1;
    }
    return 0;
}

/* Keeping the end, a run cut at k changes the tokens from k up to a frontier that moves
 * right merge by merge, in rank order (the argument of tok_finish.c's run_margins, mirrored):
 * by the right token's length for a merge of two different tokens; for a merge of a token
 * with itself across the whole run of its copies, since those pair from the left and a
 * change at the run's start flips every pair after it. Where the frontier can end at most,
 * run_end marking where the class run after k ends; SIZE_MAX when it could reach that end
 * (the text after the cut is then no run of the class) or would cost too much to bound. */
static size_t frontier_bound(const sk_cut_rules *r, int c, const char *s, size_t k, size_t run_end) {
    size_t g = k + r->run_edge[c], work = 0; /* added tokens' matches may differ up to there */
    for (size_t i = 0; i < r->n_run_merges[c]; i++) {
        const sk_run_merge *m = &r->run_merges[c][i];
        if (!m->same) {
            g += m->right_len;
        } else {
            size_t best = g, l = m->left_len;
            for (size_t p = k; p <= g && p < run_end; p++) {
                size_t q = p;
                while (q + l <= run_end && memcmp(s + q, m->left, l) == 0) q += l;
                work += q - p + 1;
                if (q > best) best = q;
            }
            g = best;
        }
        if (g + r->run_min > run_end || work > ((size_t)1 << 22)) return SIZE_MAX;
    }
    return g;
}

/* The last cut just before s[k], 0 < k <= from, that keeps the state's end (a list state):
 * an exact cut (*margin 0), or a run cut (*margin: the bytes after k whose tokens may
 * differ; a few run cuts are tried, each costing a bound). 0 if none. */
static size_t cut_backward(const sk_cut_rules *r, const char *s, size_t n, size_t from, const char *mt, size_t mlen,
                           size_t *margin) {
    const int mc = mask_class(mt, mlen);
    const size_t reach = ((size_t)1 << 18) + r->run_min; /* how far a run after a cut is looked at */
    int tries = 4;
    for (size_t k = from; k > 0; k--) {
        if (k >= n) continue;
        if ((sk_cut_ok(r->cuts, s, k) || (!r->pair_start_only && sk_pair_cut_ok(r, s, k))) &&
            mask_clear(s, n, k, mt, mlen)) {
            *margin = 0;
            return k;
        }
        int ca = sk_cut_class((unsigned char)s[k - 1]), cb = sk_cut_class((unsigned char)s[k]);
        /* not inside a contraction ('re 've 'll: one GPT-2 piece; the run before a cut that
         * keeps the start is long enough to hold no apostrophe) */
        if (tries > 0 && ca >= 0 && ca == cb && ca != mc && r->run_margin[ca] && r->n_run_merges[ca] &&
            !(k >= 2 && s[k - 2] == '\'') && mask_clear(s, n, k, mt, mlen)) {
            tries--;
            size_t run_end = k, lim = n - k > reach ? k + reach : n;
            while (run_end < lim && sk_cut_class((unsigned char)s[run_end]) == ca) run_end++;
            size_t g = frontier_bound(r, ca, s, k, run_end);
            if (g != SIZE_MAX) {
                *margin = g - k;
                return k;
            }
        }
    }
    return 0;
}

int sk_prompt_state_ids_bounded(const sk_prompt_tok *t, const sk_cut_rules *rules, const char *state, size_t n,
                                int keep_end, size_t need, sk_prompt_ws *ws, sk_i32v *out, sk_err *e) {
    const char *mt = t->mask_text;
    size_t mlen = mt ? strlen(mt) : 0;
    int any_run = rules && (rules->run_margin[0] || rules->run_margin[1] || rules->run_margin[2]);
    if (!rules || (!rules->cuts && !any_run && !rules->pair_join) || need == 0 || (mlen && memchr(mt, ' ', mlen)))
        return sk_prompt_state_ids(t, state, n, ws, out, e);
    /* A token covers at least one byte, usually about four: start there, double on a miss
     * (so the work stays within twice the last, sufficient, attempt). */
    size_t want = need > SIZE_MAX / 8 ? SIZE_MAX : need * 4;
    if (want < SK_CUT_MIN_PIECE) want = SK_CUT_MIN_PIECE;
    while (want < n) {
        size_t k, margin = 0;
        if (!keep_end) {
            k = cut_forward(rules, state, n, want, mt, mlen, &margin);
            /* a run cut keeps the ids before its margin: cut far enough past it to need */
            size_t later = margin > (SIZE_MAX - want) / 4 ? SIZE_MAX : want + 4 * margin;
            if (k && margin && later > k && later < n) {
                size_t m2 = 0, k2 = cut_forward(rules, state, n, later, mt, mlen, &m2);
                if (k2) k = k2, margin = m2;
            }
        } else {
            k = cut_backward(rules, state, n, n - want, mt, mlen, &margin);
            size_t earlier = margin > (n - want) / 4 ? 0 : n - want - 4 * margin;
            if (k && margin && earlier < k && earlier > 0) {
                size_t m2 = 0, k2 = cut_backward(rules, state, n, earlier, mt, mlen, &m2);
                if (k2) k = k2, margin = m2;
            }
        }
        if (!k) break; /* no cut: the whole state */
        out->n = 0;
        reset_text(&ws->text);
        if (!keep_end) sk_prompt_unmask(&ws->text, state, k, mt);
        else sk_prompt_unmask(&ws->text, state + k, n - k, mt);
        int rc = encode_text(t, ws, out, e);
        if (rc) return rc;
        size_t kept = out->n > margin ? out->n - margin : 0;
        if (kept >= need) {
            /* the ids within the margin may differ from the whole state's */
            if (keep_end) memmove(out->v, out->v + (out->n - kept), kept * sizeof *out->v);
            out->n = kept;
            return 0;
        }
        want = want > SIZE_MAX / 2 ? SIZE_MAX : want * 2;
    }
    return sk_prompt_state_ids(t, state, n, ws, out, e);
}

/* Python's a // b for b > 0. */
static long floordiv(long a, long b) {
    long q = a / b;
    if ((a % b != 0) && (a < 0)) q--;
    return q;
}

int sk_prompt_build(const sk_prompt_tok *t, const char *type_name, const char *ins,
                    size_t ins_len, const sk_jstr *opts, size_t stride, size_t n_opts,
                    const int32_t *state_ids, size_t n_state, int truncate_left, size_t max_len,
                    size_t head_max_len, sk_prompt_ws *ws, sk_i32v *ids, sk_i32v *markers,
                    sk_err *e) {
    int rc;
    ids->n = 0;
    markers->n = 0;
    /* head: "%s question: %s" % (t, ins.replace(MASK, " ")) */
    reset_text(&ws->text);
    sk_buf_puts(&ws->text, type_name);
    sk_buf_append(&ws->text, " question: ", 11);
    sk_prompt_unmask(&ws->text, ins, ins_len, t->mask_text);
    ws->head.n = 0;
    if ((rc = encode_text(t, ws, &ws->head, e))) return rc;

    /* options: [MASK] + tok(" " + text.replace(MASK, " "))[:48] */
    if (n_opts > ws->opt_cap) {
        size_t *oe = sk_malloc_array(n_opts, sizeof *oe);
        if (!oe) return sk_fail(e, SKYCMD_E_NOMEM, "out of memory building the prompt");
        free(ws->opt_end);
        ws->opt_end = oe;
        ws->opt_cap = n_opts;
    }
    ws->opts.n = 0;
    size_t opt_total = 0;
    for (size_t i = 0; i < n_opts; i++) {
        const sk_jstr *o = (const sk_jstr *)((const char *)opts + i * stride);
        size_t start = ws->opts.n;
        if (sk_i32v_push(&ws->opts, t->mask))
            return sk_fail(e, SKYCMD_E_NOMEM, "out of memory building the prompt");
        reset_text(&ws->text);
        sk_buf_putc(&ws->text, ' ');
        sk_prompt_unmask(&ws->text, o->s, o->n, t->mask_text);
        if ((rc = encode_text(t, ws, &ws->opts, e))) return rc;
        if (ws->opts.n - start > SK_PROMPT_OPTION_CAP + 1) ws->opts.n = start + SK_PROMPT_OPTION_CAP + 1;
        ws->opt_end[i] = ws->opts.n;
        opt_total += ws->opts.n - start;
    }
    long hml = (long)head_max_len;
    long opt_budget = hml - (long)opt_total;
    size_t per = SIZE_MAX;
    if (opt_budget < SK_PROMPT_HEAD_RESERVE) {
        long nn = n_opts > 0 ? (long)n_opts : 1;
        long p = floordiv(hml - SK_PROMPT_HEAD_RESERVE, nn);
        per = (size_t)(p > SK_PROMPT_MIN_OPTION ? p : SK_PROMPT_MIN_OPTION);
        opt_total = 0;
        size_t start = 0;
        for (size_t i = 0; i < n_opts; i++) {
            size_t len = ws->opt_end[i] - start;
            opt_total += len < per ? len : per;
            start = ws->opt_end[i];
        }
        opt_budget = hml - (long)opt_total;
    }
    size_t q_keep = (size_t)(opt_budget > SK_PROMPT_MIN_QUESTION ? opt_budget : SK_PROMPT_MIN_QUESTION);
    if (q_keep > ws->head.n) q_keep = ws->head.n;

    /* assemble: [CLS] head [SEP] options [SEP] state [SEP], then cut at max_len */
    size_t head_len = 1 + q_keep + 1 + opt_total + 1;
    ws->head_len = head_len;
    size_t room = max_len > head_len + 1 ? max_len - head_len - 1 : 0;
    size_t st_n = n_state < room ? n_state : room;
    const int32_t *st = truncate_left ? state_ids + (n_state - st_n) : state_ids;
    if (sk_i32v_reserve(ids, head_len + st_n + 1) || sk_i32v_reserve(markers, n_opts))
        return sk_fail(e, SKYCMD_E_NOMEM, "out of memory building the prompt");
    ids->v[ids->n++] = t->cls;
    memcpy(ids->v + ids->n, ws->head.v, q_keep * sizeof(int32_t));
    ids->n += q_keep;
    ids->v[ids->n++] = t->sep;
    size_t start = 0;
    for (size_t i = 0; i < n_opts; i++) {
        size_t len = ws->opt_end[i] - start;
        if (len > per) len = per;
        markers->v[markers->n++] = (int32_t)ids->n;
        memcpy(ids->v + ids->n, ws->opts.v + start, len * sizeof(int32_t));
        ids->n += len;
        start = ws->opt_end[i];
    }
    ids->v[ids->n++] = t->sep;
    if (st_n) memcpy(ids->v + ids->n, st, st_n * sizeof(int32_t));
    ids->n += st_n;
    ids->v[ids->n++] = t->sep;
    if (ids->n > max_len) ids->n = max_len;
    size_t kept = 0;
    for (size_t i = 0; i < markers->n; i++)
        if ((size_t)markers->v[i] < max_len) markers->v[kept++] = markers->v[i];
    if (kept != n_opts) {
        markers->n = kept;
        return sk_fail(e, SKYCMD_E_REQUEST,
                       "only %zu of its %zu option markers fit in max_len=%zu with "
                       "head_max_len=%zu spent on the question; use fewer or shorter options",
                       kept, n_opts, max_len, head_max_len);
    }
    return 0;
}

void sk_prompt_parallel_layout(const int32_t *markers, size_t k, size_t head_len, size_t n,
                               int32_t *pos, int32_t *opt) {
    if (k == 0) {
        for (size_t i = 0; i < n; i++) {
            pos[i] = (int32_t)i;
            opt[i] = 0;
        }
        return;
    }
    const size_t start = (size_t)markers[0];
    size_t idx = 0, longest = 0;
    for (; idx < start && idx < n; idx++) {
        pos[idx] = (int32_t)idx;
        opt[idx] = 0;
    }
    for (size_t s = 0; s < k; s++) {
        const size_t a = (size_t)markers[s];
        const size_t b = s + 1 < k ? (size_t)markers[s + 1] : head_len - 1;
        if (b - a > longest) longest = b - a;
        for (size_t x = 0; x < b - a && idx < n; x++, idx++) {
            pos[idx] = (int32_t)(start + x);
            opt[idx] = (int32_t)(s + 1);
        }
    }
    for (size_t after = start + longest; idx < n; idx++, after++) {
        pos[idx] = (int32_t)after;
        opt[idx] = 0;
    }
}
