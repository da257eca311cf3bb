/*
 * tok_random.c - a deterministic small byte-level BPE vocabulary for random models and
 * tests, trained here on a built-in text plus seed-generated game states and JSON, and
 * written as a real Hugging Face tokenizer.json + tokenizer_config.json.
 *
 * Layout (other modules rely on it): 0 [PAD], 1 [UNK], 2 [CLS], 3 [SEP], 4 [MASK] (special,
 * not normalized; [MASK] lstrip like ModernBERT), 5..260 the 256 byte-level tokens in byte
 * order, then merged tokens in merge order, and the last 7 ids are non-special, normalized
 * added tokens for runs of 8 down to 2 spaces (like ModernBERT's whitespace runs).
 * The training is plain BPE: the most frequent adjacent pair wins, ties broken by the
 * smaller ids; the same seed always gives the same files. When every word is one token
 * before the vocabulary is full, more generated text is added, and the merges learned so far
 * are applied to its new words (in merge order, as the training applied them) before pairs
 * are counted again: every merge is listed exactly once (tokenizers would keep a repeated
 * merge's later rank and llama.cpp its first, so a repeat would make them disagree) and the
 * vocabulary is exactly vocab_size. A pair that is already a merge is never listed again
 * (it could only reappear through a merge whose string an earlier token already spells; it
 * is then applied without a new entry).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tokenizer.h"

static const char *const k_text[] = {
    "The drone hovers above the river while the wind pushes it toward the cliffs. "
    "It's a small machine, but it doesn't give up: it climbs, it waits, and then it "
    "dives through the gap between the two towers.",
    "Players who've learned the game say the trick is patience. You'll lose a life "
    "if you thrust too early, and you're out if you wait too long. They'd rather "
    "watch the gauge than guess.",
    "Which action should the agent take next? Choose between thrust, glide and "
    "wait. The answer depends on the vertical speed, the distance to the next gate "
    "and the height of the opening.",
    "Score the risk from 0 to 4, where 0 means no danger at all and 4 means a crash "
    "is almost certain. Is the statement true: the drone will hit the ceiling?",
    "vy 0 dx 36 up 9 down 14 gap 120 y 240 score 3",
    "vy -4 dx 12 up 30 down 2 gap 96 y 88 score 17",
    "vy 7 dx 150 up 11 down 41 gap 110 y 301 score 0",
    "{\"state\": {\"vy\": -2.5, \"dx\": 40, \"gap\": [120, 180], \"alive\": true}}",
    "{\"question\": \"choice\", \"options\": [\"thrust\", \"glide\", \"wait\"], \"id\": 7}",
    "{\"name\": \"Flappy Drone\", \"level\": 3, \"lives\": null, \"tags\": [\"arcade\", \"demo\"]}",
    "[{\"role\": \"user\", \"content\": \"hello\"}, {\"role\": \"assistant\", \"content\": \"hi\"}]",
    "Numbers: 0 1 2 3 4 5 6 7 8 9 10 12 25 42 64 100 128 256 512 1024 2048 4096 "
    "3.14159 2.71828 1e-5 -0.5 +7 1,000,000 12:30 2026-11-29",
    "Le drone survole la rivière pendant que le vent le pousse vers les falaises. "
    "Il hésite, puis il s'élance à travers l'écart étroit : c'est déjà l'été.",
    "El dron sobrevuela el río mientras el viento lo empuja hacia los acantilados. "
    "¿Qué acción debería tomar? La niña señaló la montaña y sonrió.",
    "Die Drohne schwebt über dem Fluss, während der Wind sie gegen die Felsen drückt. "
    "Größere Lücken sind schöner, aber die Übung macht den Meister.",
    "Дрон летит над рекой, и ветер толкает его к скалам. Какое действие лучше?",
    "Το drone πετά πάνω από το ποτάμι και ο άνεμος το σπρώχνει στους βράχους.",
    "无人机在河上飞行，风把它推向悬崖。下一步应该做什么？ドローンは川の上を飛ぶ。",
    "A good policy reads the state, weighs every option and picks the one with the "
    "highest expected value. When two options look alike, it prefers the safer one; "
    "when the state is unclear, it waits for more information.",
    "The encoder turns the question, the options and the state into vectors. The head "
    "compares each option marker with the rest of the sequence and returns a score.",
    "Settings: threads=4, weights=q8, activations=q8x2; timeout 30s; retries 3.",
    "If the gate is above the drone and the speed is negative, thrust now; otherwise "
    "glide. Don't panic, don't overthink, and never wait when the ground is close.",
};

static uint64_t splitmix(uint64_t *s) {
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* The draws of one line are taken into locals in a fixed order before they are printed:
 * the order in which a call's arguments are evaluated is unspecified in C (GCC takes them
 * last to first on x86-64 and first to last on aarch64), and the corpus, hence the random
 * tokenizer and every fixture made from it, must be the same on every machine. The order is
 * the one the committed fixtures were made with (last argument first). */
static void gen_line(sk_buf *b, uint64_t *rng) {
    static const char *const acts[] = {"thrust", "glide", "wait", "left", "right", "jump"};
    static const char *const keys[] = {"vy", "dx", "up", "down", "gap", "y", "score", "speed"};
    switch (splitmix(rng) % 4) {
    case 0:
        for (int i = 0; i < 6; i++) {
            const int value = (int)(splitmix(rng) % 300) - 40;
            const char *key = keys[splitmix(rng) % 8];
            sk_buf_printf(b, "%s %d ", key, value);
        }
        break;
    case 1: {
        const char *act = acts[splitmix(rng) % 6];
        const int frac = (int)(splitmix(rng) % 100), whole = (int)(splitmix(rng) % 50);
        const char *key2 = keys[splitmix(rng) % 8];
        const int value = (int)(splitmix(rng) % 1000);
        const char *key1 = keys[splitmix(rng) % 8];
        sk_buf_printf(b, "{\"%s\": %d, \"%s\": %d.%d, \"action\": \"%s\"} ", key1, value, key2,
                      whole, frac, act);
        break;
    }
    case 2: /* made-up words keep the pair supply going for large vocabularies */
        for (int w = 0; w < 5; w++) {
            int len = 3 + (int)(splitmix(rng) % 7);
            sk_buf_putc(b, ' ');
            for (int i = 0; i < len; i++) sk_buf_putc(b, (char)('a' + splitmix(rng) % 26));
        }
        break;
    default: {
        const char *act = acts[splitmix(rng) % 6];
        const int step = (int)(splitmix(rng) % 10000);
        sk_buf_printf(b, "step %d: %s ", step, act);
        break;
    }
    }
    sk_buf_putc(b, '\n');
}

/* ---- training state ---- */
typedef struct word {
    int32_t *sym;
    uint32_t n;
    uint32_t count;
} word;

typedef struct trainer {
    word *w;
    size_t n_w, cap_w;
    /* unique-word lookup */
    uint32_t *slots;
    uint32_t mask;
    char **wtext;
    uint32_t *wlen;
    /* tokens */
    char **tok;
    uint32_t *tok_len;
    size_t n_tok, cap_tok;
    /* merges: left id, right id, id of the merged token */
    int32_t (*mg)[3];
    size_t n_mg, cap_mg;
    /* pair counting */
    uint64_t *pk;
    uint64_t *pc;
    uint32_t pmask;
    uint32_t *used;
    size_t n_used;
} trainer;

static int tr_add_word(trainer *T, const char *s, size_t n) {
    uint32_t i = (uint32_t)sk_fnv1a64(s, n) & T->mask;
    while (T->slots[i]) {
        uint32_t k = T->slots[i] - 1;
        if (T->wlen[k] == n && memcmp(T->wtext[k], s, n) == 0) {
            T->w[k].count++;
            return 0;
        }
        i = (i + 1) & T->mask;
    }
    if (T->n_w == T->cap_w || T->n_w * 2 >= T->mask) return -1;
    word *w = &T->w[T->n_w];
    w->sym = malloc(n * sizeof *w->sym);
    T->wtext[T->n_w] = malloc(n);
    if (!w->sym || !T->wtext[T->n_w]) return -1;
    memcpy(T->wtext[T->n_w], s, n);
    T->wlen[T->n_w] = (uint32_t)n;
    for (size_t j = 0; j < n; j++) w->sym[j] = 5 + (unsigned char)s[j];
    w->n = (uint32_t)n;
    w->count = 1;
    T->slots[i] = (uint32_t)++T->n_w;
    return 0;
}

/* One merge over one word, left to right, as the training and BPE encoding apply it. */
static void merge_word(word *w, int32_t a, int32_t b, int32_t nid) {
    uint32_t o = 0;
    for (uint32_t j = 0; j < w->n; j++) {
        if (j + 1 < w->n && w->sym[j] == a && w->sym[j + 1] == b) {
            w->sym[o++] = nid;
            j++;
        } else {
            w->sym[o++] = w->sym[j];
        }
    }
    w->n = o;
}

typedef struct add_ctx {
    trainer *T;
    const char *s;
    int fail;
} add_ctx;

static int on_word(void *ud, size_t a, size_t b) {
    add_ctx *c = ud;
    if (tr_add_word(c->T, c->s + a, b - a)) c->fail = 1;
    return c->fail;
}

int sk_tokenizer_random_json(uint32_t vocab_size, uint64_t seed, char **tokenizer_json,
                             char **tokenizer_config_json, sk_err *e) {
    if (!tokenizer_json || !tokenizer_config_json)
        return sk_fail(e, SKYCMD_E_INVALID_ARGUMENT, "random tokenizer: NULL output");
    *tokenizer_json = *tokenizer_config_json = NULL;
    if (vocab_size < 512 || vocab_size > 65536)
        return sk_fail(e, SKYCMD_E_INVALID_ARGUMENT, "random tokenizer: vocab_size %u outside [512, 65536]",
                       vocab_size);
    const uint32_t n_ws = 7, n_special = 5;
    const size_t target = vocab_size - n_ws; /* model tokens before the whitespace runs */
    int rc = SKYCMD_OK;
    trainer T;
    memset(&T, 0, sizeof T);
    sk_buf corpus, out, cfg;
    sk_buf_init(&corpus);
    sk_buf_init(&out);
    sk_buf_init(&cfg);
    uint64_t rng = seed ^ 0x736b79636d64ull;

    /* tokens 0..260 */
    T.cap_tok = target + 8;
    T.tok = calloc(T.cap_tok, sizeof *T.tok);
    T.tok_len = calloc(T.cap_tok, sizeof *T.tok_len);
    T.cap_mg = vocab_size * 4u;
    T.mg = malloc(T.cap_mg * sizeof *T.mg);
    T.cap_w = 1u << 17;
    T.mask = (1u << 18) - 1;
    T.slots = calloc((size_t)T.mask + 1, sizeof *T.slots);
    T.w = calloc(T.cap_w, sizeof *T.w);
    T.wtext = calloc(T.cap_w, sizeof *T.wtext);
    T.wlen = calloc(T.cap_w, sizeof *T.wlen);
    T.pmask = (1u << 20) - 1;
    T.pk = malloc(((size_t)T.pmask + 1) * sizeof *T.pk);
    T.pc = malloc(((size_t)T.pmask + 1) * sizeof *T.pc);
    T.used = malloc(((size_t)T.pmask + 1) * sizeof *T.used);
    if (T.pk) memset(T.pk, 0, ((size_t)T.pmask + 1) * sizeof *T.pk);
    if (!T.used || !T.tok || !T.tok_len || !T.mg || !T.slots || !T.w || !T.wtext || !T.wlen || !T.pk || !T.pc) {
        rc = sk_fail(e, SKYCMD_E_NOMEM, "random tokenizer: out of memory");
        goto done;
    }
    static const char *const specials[5] = {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"};
    for (uint32_t i = 0; i < n_special; i++) {
        T.tok[i] = sk_strdup(specials[i]);
        T.tok_len[i] = (uint32_t)strlen(specials[i]);
    }
    for (int b = 0; b < 256; b++) {
        uint32_t cp = sk_byte_to_cp((uint8_t)b);
        char u[3] = {0};
        if (cp < 0x80) u[0] = (char)cp;
        else {
            u[0] = (char)(0xC0 | (cp >> 6));
            u[1] = (char)(0x80 | (cp & 0x3F));
        }
        T.tok[5 + b] = sk_strdup(u);
        T.tok_len[5 + b] = (uint32_t)strlen(u);
    }
    T.n_tok = 261;
    for (size_t i = 0; i < T.n_tok; i++)
        if (!T.tok[i]) {
            rc = sk_fail(e, SKYCMD_E_NOMEM, "random tokenizer: out of memory");
            goto done;
        }

    /* corpus: the built-in text, each paragraph 1-3 times (seeded), then generated lines */
    for (size_t i = 0; i < sizeof k_text / sizeof k_text[0]; i++) {
        int reps = 1 + (int)(splitmix(&rng) % 3);
        for (int r = 0; r < reps; r++) {
            sk_buf_puts(&corpus, k_text[i]);
            sk_buf_putc(&corpus, '\n');
        }
    }
    int n_gen = 40 + (int)(vocab_size / 16);
    for (int i = 0; i < n_gen; i++) gen_line(&corpus, &rng);
    if (corpus.failed) {
        rc = sk_fail(e, SKYCMD_E_NOMEM, "random tokenizer: out of memory");
        goto done;
    }
    {
        add_ctx c = {&T, corpus.data, 0};
        sk_pretok_gpt2(corpus.data, corpus.len, on_word, &c);
        if (c.fail) {
            rc = sk_fail(e, SKYCMD_E_NOMEM, "random tokenizer: out of memory");
            goto done;
        }
    }

    /* BPE training */
    while (T.n_tok < target) {
        for (size_t u = 0; u < T.n_used; u++) T.pk[T.used[u]] = 0;
        T.n_used = 0;
        uint64_t best_key = 0, best_cnt = 0;
        for (size_t wi = 0; wi < T.n_w; wi++) {
            const word *w = &T.w[wi];
            for (uint32_t j = 0; j + 1 < w->n; j++) {
                uint64_t key = ((uint64_t)(uint32_t)w->sym[j] << 32 | (uint32_t)w->sym[j + 1]) + 1;
                uint32_t h = (uint32_t)((key * 0x9E3779B97F4A7C15ull) >> 40) & T.pmask;
                while (T.pk[h] && T.pk[h] != key) h = (h + 1) & T.pmask;
                if (!T.pk[h]) {
                    if (T.n_used * 2 >= T.pmask) continue; /* table full: rare pairs dropped */
                    T.used[T.n_used++] = h;
                    T.pk[h] = key;
                    T.pc[h] = 0;
                }
                T.pc[h] += w->count;
                uint64_t cnt = T.pc[h];
                if (cnt > best_cnt || (cnt == best_cnt && key < best_key)) {
                    best_cnt = cnt;
                    best_key = key;
                }
            }
        }
        if (!best_cnt) {
            /* every word is one token: feed more generated text, its new words merged as
             * far as the merges learned so far go (else they would be learned again) */
            sk_buf more;
            sk_buf_init(&more);
            for (int i = 0; i < 64; i++) gen_line(&more, &rng);
            size_t first_new = T.n_w;
            add_ctx c = {&T, more.data, 0};
            if (!more.failed) sk_pretok_gpt2(more.data, more.len, on_word, &c);
            int bad = more.failed || c.fail;
            sk_buf_free(&more);
            if (bad) {
                rc = sk_fail(e, SKYCMD_E_NOMEM, "random tokenizer: out of memory");
                goto done;
            }
            for (size_t m = 0; m < T.n_mg; m++)
                for (size_t wi = first_new; wi < T.n_w; wi++)
                    merge_word(&T.w[wi], T.mg[m][0], T.mg[m][1], T.mg[m][2]);
            continue;
        }
        int32_t a = (int32_t)((best_key - 1) >> 32), b = (int32_t)((best_key - 1) & 0xffffffffu);
        /* A pair that is already a merge can only come back next to a token that a later
         * merge spelled again (same string, other pair): apply it, do not list it twice. */
        size_t known = T.n_mg;
        for (size_t m = 0; m < T.n_mg; m++)
            if (T.mg[m][0] == a && T.mg[m][1] == b) {
                known = m;
                break;
            }
        if (known < T.n_mg) {
            for (size_t wi = 0; wi < T.n_w; wi++) merge_word(&T.w[wi], a, b, T.mg[known][2]);
            continue;
        }
        /* the merged string; reuse its id if an earlier merge already made it */
        size_t nl = (size_t)T.tok_len[a] + T.tok_len[b];
        char *ns = malloc(nl + 1);
        if (!ns) {
            rc = sk_fail(e, SKYCMD_E_NOMEM, "random tokenizer: out of memory");
            goto done;
        }
        memcpy(ns, T.tok[a], T.tok_len[a]);
        memcpy(ns + T.tok_len[a], T.tok[b], T.tok_len[b]);
        ns[nl] = 0;
        int32_t nid = -1;
        for (size_t i = 261; i < T.n_tok; i++)
            if (T.tok_len[i] == nl && memcmp(T.tok[i], ns, nl) == 0) {
                nid = (int32_t)i;
                break;
            }
        if (nid < 0) {
            nid = (int32_t)T.n_tok;
            T.tok[T.n_tok] = ns;
            T.tok_len[T.n_tok] = (uint32_t)nl;
            T.n_tok++;
        } else {
            free(ns);
        }
        if (T.n_mg == T.cap_mg) {
            rc = sk_fail(e, SKYCMD_E_INTERNAL, "random tokenizer: too many merges");
            goto done;
        }
        T.mg[T.n_mg][0] = a;
        T.mg[T.n_mg][1] = b;
        T.mg[T.n_mg][2] = nid;
        T.n_mg++;
        for (size_t wi = 0; wi < T.n_w; wi++) merge_word(&T.w[wi], a, b, nid);
    }

    /* tokenizer.json */
    {
        sk_buf *b = &out;
        sk_buf_puts(b, "{\n  \"version\": \"1.0\",\n  \"truncation\": null,\n  \"padding\": null,\n  \"added_tokens\": [\n");
        for (uint32_t i = 0; i < n_special + n_ws; i++) {
            uint32_t id = i < n_special ? i : (uint32_t)target + (i - n_special);
            char content[16];
            if (i < n_special) snprintf(content, sizeof content, "%s", specials[i]);
            else {
                uint32_t run = 8 - (i - n_special);
                memset(content, ' ', run);
                content[run] = 0;
            }
            int special = i < n_special;
            sk_buf_printf(b,
                          "    {\"id\": %u, \"content\": \"%s\", \"single_word\": false, \"lstrip\": %s, "
                          "\"rstrip\": false, \"normalized\": %s, \"special\": %s}%s\n",
                          id, content, id == 4 ? "true" : "false", special ? "false" : "true",
                          special ? "true" : "false", i + 1 < n_special + n_ws ? "," : "");
        }
        sk_buf_puts(b, "  ],\n  \"normalizer\": {\"type\": \"NFC\"},\n");
        sk_buf_puts(b, "  \"pre_tokenizer\": {\"type\": \"ByteLevel\", \"add_prefix_space\": false, "
                       "\"trim_offsets\": true, \"use_regex\": true},\n");
        sk_buf_puts(b, "  \"post_processor\": {\"type\": \"TemplateProcessing\", "
                       "\"single\": [{\"SpecialToken\": {\"id\": \"[CLS]\", \"type_id\": 0}}, "
                       "{\"Sequence\": {\"id\": \"A\", \"type_id\": 0}}, "
                       "{\"SpecialToken\": {\"id\": \"[SEP]\", \"type_id\": 0}}], "
                       "\"pair\": [{\"SpecialToken\": {\"id\": \"[CLS]\", \"type_id\": 0}}, "
                       "{\"Sequence\": {\"id\": \"A\", \"type_id\": 0}}, "
                       "{\"SpecialToken\": {\"id\": \"[SEP]\", \"type_id\": 0}}, "
                       "{\"Sequence\": {\"id\": \"B\", \"type_id\": 1}}, "
                       "{\"SpecialToken\": {\"id\": \"[SEP]\", \"type_id\": 1}}], "
                       "\"special_tokens\": {\"[CLS]\": {\"id\": \"[CLS]\", \"ids\": [2], \"tokens\": [\"[CLS]\"]}, "
                       "\"[SEP]\": {\"id\": \"[SEP]\", \"ids\": [3], \"tokens\": [\"[SEP]\"]}}},\n");
        sk_buf_puts(b, "  \"decoder\": {\"type\": \"ByteLevel\", \"add_prefix_space\": true, "
                       "\"trim_offsets\": true, \"use_regex\": true},\n");
        sk_buf_puts(b, "  \"model\": {\n    \"type\": \"BPE\",\n    \"dropout\": null,\n    \"unk_token\": null,\n"
                       "    \"continuing_subword_prefix\": null,\n    \"end_of_word_suffix\": null,\n"
                       "    \"fuse_unk\": false,\n    \"byte_fallback\": false,\n    \"ignore_merges\": false,\n"
                       "    \"vocab\": {\n");
        for (size_t i = 0; i < (size_t)vocab_size; i++) {
            const char *s;
            char ws[16];
            if (i < T.n_tok) s = T.tok[i];
            else {
                uint32_t run = 8 - (uint32_t)(i - target);
                memset(ws, ' ', run);
                ws[run] = 0;
                s = ws;
            }
            sk_buf_puts(b, "      \"");
            for (const char *p = s; *p; p++) {
                unsigned char ch = (unsigned char)*p;
                if (ch == '"' || ch == '\\') {
                    sk_buf_putc(b, '\\');
                    sk_buf_putc(b, (char)ch);
                } else if (ch < 0x20) {
                    sk_buf_printf(b, "\\u%04x", ch);
                } else {
                    sk_buf_putc(b, (char)ch);
                }
            }
            sk_buf_printf(b, "\": %zu%s\n", i, i + 1 < vocab_size ? "," : "");
        }
        sk_buf_puts(b, "    },\n    \"merges\": [\n");
        for (size_t m = 0; m < T.n_mg; m++) {
            sk_buf_puts(b, "      [");
            for (int k = 0; k < 2; k++) {
                const char *s = T.tok[T.mg[m][k]];
                sk_buf_putc(b, '"');
                for (const char *p = s; *p; p++) {
                    unsigned char ch = (unsigned char)*p;
                    if (ch == '"' || ch == '\\') sk_buf_putc(b, '\\');
                    sk_buf_putc(b, (char)ch);
                }
                sk_buf_putc(b, '"');
                if (!k) sk_buf_puts(b, ", ");
            }
            sk_buf_printf(b, "]%s\n", m + 1 < T.n_mg ? "," : "");
        }
        sk_buf_puts(b, "    ]\n  }\n}\n");
    }
    /* tokenizer_config.json */
    {
        sk_buf *b = &cfg;
        sk_buf_puts(b, "{\n  \"added_tokens_decoder\": {\n");
        for (uint32_t i = 0; i < n_special + n_ws; i++) {
            uint32_t id = i < n_special ? i : (uint32_t)target + (i - n_special);
            char content[16];
            int special = i < n_special;
            if (special) snprintf(content, sizeof content, "%s", specials[i]);
            else {
                uint32_t run = 8 - (i - n_special);
                memset(content, ' ', run);
                content[run] = 0;
            }
            sk_buf_printf(b,
                          "    \"%u\": {\"content\": \"%s\", \"lstrip\": %s, \"normalized\": %s, "
                          "\"rstrip\": false, \"single_word\": false, \"special\": %s}%s\n",
                          id, content, id == 4 ? "true" : "false", special ? "false" : "true",
                          special ? "true" : "false", i + 1 < n_special + n_ws ? "," : "");
        }
        sk_buf_puts(b, "  },\n  \"clean_up_tokenization_spaces\": false,\n"
                       "  \"cls_token\": \"[CLS]\",\n  \"mask_token\": \"[MASK]\",\n"
                       "  \"model_input_names\": [\"input_ids\", \"attention_mask\"],\n"
                       "  \"model_max_length\": 8192,\n  \"pad_token\": \"[PAD]\",\n"
                       "  \"sep_token\": \"[SEP]\",\n  \"tokenizer_class\": \"PreTrainedTokenizerFast\",\n"
                       "  \"unk_token\": \"[UNK]\"\n}\n");
    }
    if (out.failed || cfg.failed) {
        rc = sk_fail(e, SKYCMD_E_NOMEM, "random tokenizer: out of memory");
        goto done;
    }
    *tokenizer_json = sk_buf_detach(&out);
    *tokenizer_config_json = sk_buf_detach(&cfg);
    if (!*tokenizer_json || !*tokenizer_config_json) {
        free(*tokenizer_json);
        free(*tokenizer_config_json);
        *tokenizer_json = *tokenizer_config_json = NULL;
        rc = sk_fail(e, SKYCMD_E_NOMEM, "random tokenizer: out of memory");
    }
done:
    for (size_t i = 0; i < T.n_tok; i++) free(T.tok[i]);
    free(T.tok);
    free(T.tok_len);
    free(T.mg);
    for (size_t i = 0; i < T.n_w; i++) {
        free(T.w[i].sym);
        free(T.wtext[i]);
    }
    free(T.w);
    free(T.wtext);
    free(T.wlen);
    free(T.slots);
    free(T.pk);
    free(T.pc);
    free(T.used);
    sk_buf_free(&corpus);
    sk_buf_free(&out);
    sk_buf_free(&cfg);
    return rc;
}
