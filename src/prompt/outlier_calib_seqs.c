/* outlier_calib_seqs.c - the int8 outlier calibration's input sequences: built-in prompts
 * and vocabulary states laid out by the model's own prompt template with its own tokenizer
 * (see outlier_calib_seqs.h). */
#include <stdlib.h>
#include <string.h>

#include "outlier_calib_seqs.h"
#include "prompt.h"

/* Twelve short texts of the kinds a decision model reads: game states, English and French
 * prose, JSON. Written for this project. */
const char *const sk_calib_prompts[SK_CALIB_N_PROMPTS] = {
    "Turn 14. You hold 3 gold, 2 wood and a damaged sword. The enemy scout is two tiles "
    "north; your base has 40% health. Options: attack, retreat, build a wall, trade.",
    "Board: white king g1, rook f1, pawns f2 g2 h2; black king g8, queen d4, knight c6. "
    "Black to move. Material is even but the white back rank is weak.",
    "HP 12/30, MP 4/20. Inventory: potion x1, antidote x0, rope. Room 7: a locked chest, "
    "a sleeping troll, exits east and down. Last action: opened the north door.",
    "Score 2-1, 78th minute. Our striker is tired, the opponent presses high with four "
    "forwards; two substitutions left and a yellow card on the left back.",
    "The committee met on Tuesday to review the budget. After a long discussion, members "
    "agreed to postpone the decision until the auditors deliver their final report.",
    "She walked along the harbour at dusk, counting the boats that came back empty, and "
    "wondered whether the storm forecast for the weekend would finally keep them home.",
    "To replace the filter, switch off the pump, close both valves, unscrew the housing "
    "by hand and rinse the cartridge with clean water before putting it back.",
    "Le conseil municipal a voté hier soir la rénovation de l'école primaire ; les travaux "
    "commenceront en juillet et devraient durer un peu plus de six mois.",
    "Il pleuvait depuis le matin. Dans la cuisine, sa grand-mère épluchait des pommes en "
    "racontant l'hiver où la rivière avait gelé jusqu'au moulin.",
    "Pour réserver une salle, remplissez le formulaire en ligne au moins quarante-huit "
    "heures à l'avance et indiquez le nombre de participants prévus.",
    "{\"player\": {\"id\": 7, \"hp\": 18, \"pos\": [3, 9]}, \"enemies\": [{\"type\": "
    "\"orc\", \"hp\": 11}, {\"type\": \"archer\", \"hp\": 6}], \"turn\": 22}",
    "{\"order\": \"A-1043\", \"items\": [{\"sku\": \"tea-green\", \"qty\": 2, \"price\": "
    "4.5}], \"status\": \"pending\", \"express\": false, \"note\": null}",
};

/* Generic questions of the three types (written for this project), laid out by the prompt
 * template around every calibration state; option texts as the request parser renders
 * them (choice "key: description", score the criteria, noul "false" / "true"). */
typedef struct calib_question {
    const char *ins;
    const char *opts[3];
    size_t n_opts;
} calib_question;

static const calib_question calib_questions[3] = {
    {"Which option fits the current state best?",
     {"act: take the action now", "wait: hold and watch what happens next"}, 2},
    {"How good is the situation described by the state?", {"bad", "fair", "good"}, 3},
    {"Will this go wrong soon if nothing changes?", {"false", "true"}, 2},
};

static uint64_t splitmix64(uint64_t *s) {
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* The tokens the model's tokenizer learned, most frequent first: with BPE merges, the
 * result of each merge in rank order (earlier merges join more frequent pairs); otherwise
 * the ordinary tokens in id order. Special, control and unused tokens
 * (tokenizer.ggml.token_type other than 1) never enter. At most cap ids into out. */
static size_t learned_tokens(const sk_gguf *g, const skycmd_tokenizer *tok, int32_t *out,
                             size_t cap) {
    const size_t nv = sk_tokenizer_vocab_size(tok);
    const sk_gguf_value *types = NULL;
    uint8_t *ok = calloc(nv ? nv : 1, 1);
    if (!ok) return 0;
    for (size_t i = 0; i < nv; i++) ok[i] = 1;
    if (sk_gguf_get_arr(g, "tokenizer.ggml.token_type", &types) == SKYCMD_OK && types &&
        types->v.arr.count == nv) {
        sk_gguf_iter it;
        sk_gguf_iter_init(&it, types);
        sk_gguf_value x;
        for (size_t i = 0; i < nv && sk_gguf_iter_next(&it, &x); i++) {
            const int64_t t = x.type == SK_GGUF_I8 || x.type == SK_GGUF_I16 || x.type == SK_GGUF_I32 ||
                              x.type == SK_GGUF_I64 ? x.v.i : (int64_t)x.v.u;
            ok[i] = t == 1;
        }
    }
    for (int w = 0; w < 5; w++) {
        const int32_t id = sk_tokenizer_special(tok, w);
        if (id >= 0 && (size_t)id < nv) ok[id] = 0;
    }
    size_t n = 0;
    const sk_gguf_value *merges = NULL;
    if (sk_gguf_get_arr(g, "tokenizer.ggml.merges", &merges) == SKYCMD_OK && merges &&
        merges->v.arr.count > 0 && tok->vocab.n > 0) {
        sk_gguf_iter it;
        sk_gguf_iter_init(&it, merges);
        sk_gguf_value x;
        char buf[256];
        while (n < cap && sk_gguf_iter_next(&it, &x)) {
            if (x.type != SK_GGUF_STRING || x.v.s.len >= sizeof buf) continue;
            /* "left right": the merged token is the two joined (the first space from the
             * second byte on separates them) */
            size_t len = 0;
            int joined = 0;
            for (uint64_t j = 0; j < x.v.s.len; j++) {
                if (!joined && j > 0 && x.v.s.ptr[j] == ' ') {
                    joined = 1;
                    continue;
                }
                buf[len++] = x.v.s.ptr[j];
            }
            const int32_t id = sk_strmap_get(&tok->vocab, buf, len);
            if (id >= 0 && (size_t)id < nv && ok[id]) {
                out[n++] = id;
                ok[id] = 0;
            }
        }
    }
    if (n == 0)
        for (size_t i = 0; i < nv && n < cap; i++)
            if (ok[i] && sk_tokenizer_piece(tok, (int32_t)i)) out[n++] = (int32_t)i;
    free(ok);
    return n;
}

static int encode_cb(void *ctx, const char *text, size_t len, sk_i32v *out, sk_err *e) {
    sk_ids v = {0};
    int rc = sk_tokenizer_encode((const skycmd_tokenizer *)ctx, text, len, &v, e);
    if (!rc && sk_i32v_append(out, v.ids, v.n)) rc = sk_fail(e, SKYCMD_E_NOMEM, "out of memory");
    sk_ids_free(&v);
    return rc;
}

/* Length of a vocabulary state (tokens), drawn between these. */
#define SK_VOCAB_STATE_MIN 24
#define SK_VOCAB_STATE_MAX 64
/* How many learned tokens the vocabulary states draw from (the most frequent). */
#define SK_VOCAB_POOL 4096

int sk_calib_sequences_tok(const sk_gguf *g, const skycmd_tokenizer *tok, size_t max_len,
                           size_t head_max_len, sk_calib_seq *seqs, sk_err *e) {
    memset(seqs, 0, SK_CALIB_N_SEQS * sizeof *seqs);
    int rc = SKYCMD_OK;
    if (max_len == 0) max_len = 512;
    if (head_max_len == 0) head_max_len = 96;
    sk_prompt_tok pt = {encode_cb, (void *)tok, sk_tokenizer_special(tok, SKYCMD_SPECIAL_CLS),
                        sk_tokenizer_special(tok, SKYCMD_SPECIAL_SEP),
                        sk_tokenizer_special(tok, SKYCMD_SPECIAL_MASK),
                        sk_tokenizer_special_text(tok, SKYCMD_SPECIAL_MASK)};
    sk_prompt_ws ws;
    memset(&ws, 0, sizeof ws);
    sk_i32v state = {0}, ids = {0}, markers = {0};
    int32_t *pool = sk_malloc_array(SK_VOCAB_POOL, sizeof *pool);
    double *cum = sk_malloc_array(SK_VOCAB_POOL, sizeof *cum);
    size_t n_pool = 0;
    if (!pool || !cum) rc = sk_fail(e, SKYCMD_E_NOMEM, "out of memory for calibration");
    if (!rc) n_pool = learned_tokens(g, tok, pool, SK_VOCAB_POOL);
    /* Zipf-like weights over the pool's rank: frequent tokens often, the tail now and then */
    double total = 0.0;
    for (size_t r = 0; r < n_pool; r++) cum[r] = (total += 1.0 / ((double)r + 8.0));
    uint64_t seed = 0x5eed5eedull;
    for (size_t i = 0; i < SK_CALIB_N_SEQS && !rc; i++) {
        state.n = 0;
        if (i < SK_CALIB_N_PROMPTS) {
            sk_ids v = {0};
            rc = sk_tokenizer_encode(tok, sk_calib_prompts[i], strlen(sk_calib_prompts[i]), &v, e);
            if (!rc && sk_i32v_append(&state, v.ids, v.n)) rc = SKYCMD_E_NOMEM;
            sk_ids_free(&v);
        } else if (n_pool > 0) {
            const size_t len = SK_VOCAB_STATE_MIN +
                               (size_t)(splitmix64(&seed) % (SK_VOCAB_STATE_MAX - SK_VOCAB_STATE_MIN + 1));
            for (size_t t = 0; t < len && !rc; t++) {
                const double u = (double)(splitmix64(&seed) >> 11) * 0x1p-53 * total;
                size_t lo = 0, hi = n_pool - 1;
                while (lo < hi) {
                    const size_t mid = (lo + hi) / 2;
                    if (cum[mid] < u) lo = mid + 1;
                    else hi = mid;
                }
                if (sk_i32v_push(&state, pool[lo])) rc = SKYCMD_E_NOMEM;
            }
        }
        if (rc) break;
        const int qt = (int)(i % 3);
        const calib_question *q = &calib_questions[qt];
        sk_jstr opts[3];
        for (size_t j = 0; j < q->n_opts; j++) opts[j] = (sk_jstr){q->opts[j], strlen(q->opts[j])};
        rc = sk_prompt_build(&pt, qt == 0 ? "choice" : qt == 1 ? "score" : "noul", q->ins,
                             strlen(q->ins), opts, sizeof opts[0], q->n_opts, state.v, state.n, 0,
                             max_len, head_max_len, &ws, &ids, &markers, e);
        if (rc) break;
        seqs[i].ids = sk_malloc_array(ids.n ? ids.n : 1, sizeof(int32_t));
        seqs[i].pos = sk_malloc_array(ids.n ? ids.n : 1, sizeof(int32_t));
        seqs[i].opt = sk_malloc_array(ids.n ? ids.n : 1, sizeof(int32_t));
        if (!seqs[i].ids || !seqs[i].pos || !seqs[i].opt) {
            rc = SKYCMD_E_NOMEM;
            break;
        }
        memcpy(seqs[i].ids, ids.v, ids.n * sizeof(int32_t));
        sk_prompt_parallel_layout(markers.v, markers.n, ws.head_len, ids.n, seqs[i].pos, seqs[i].opt);
        seqs[i].n = ids.n;
        seqs[i].qtype = qt;
    }
    if (rc == SKYCMD_E_NOMEM) sk_fail(e, rc, "out of memory building calibration sequences");
    free(pool);
    free(cum);
    sk_i32v_free(&state);
    sk_i32v_free(&ids);
    sk_i32v_free(&markers);
    sk_prompt_ws_free(&ws);
    if (rc) sk_calib_sequences_free(seqs);
    return rc;
}

int sk_calib_sequences(const sk_gguf *g, size_t max_len, size_t head_max_len, sk_calib_seq *seqs,
                       sk_err *e) {
    memset(seqs, 0, SK_CALIB_N_SEQS * sizeof *seqs);
    skycmd_tokenizer *tok = NULL;
    int rc = sk_tokenizer_from_gguf(g, &tok, e);
    if (rc) return rc;
    rc = sk_calib_sequences_tok(g, tok, max_len, head_max_len, seqs, e);
    sk_tokenizer_free(tok);
    return rc;
}

void sk_calib_sequences_free(sk_calib_seq *seqs) {
    for (size_t i = 0; i < SK_CALIB_N_SEQS; i++) {
        free(seqs[i].ids);
        free(seqs[i].pos);
        free(seqs[i].opt);
        seqs[i].ids = seqs[i].pos = seqs[i].opt = NULL;
        seqs[i].n = 0;
    }
}
