/*
 * tokenizer.h - byte-level BPE tokenizer that reproduces Hugging Face `tokenizers` (0.23.x)
 * exactly for the configuration ModernBERT uses: NFC normalizer (or none), added tokens
 * (special or not, normalized or not, lstrip/rstrip/single_word) matched leftmost-longest
 * before pre-tokenization, the ByteLevel pre-tokenizer with the GPT-2 split pattern, and a
 * BPE model with merge ranks and optional ignore_merges. Also the SentencePiece-style
 * pipelines of Gemma / mmBERT (tok_spm.c): Replace normalizers, Split / Metaspace / no
 * pre-tokenizer, BPE over characters with byte_fallback (<0xNN> tokens), and the
 * Replace / ByteFallback / Fuse / Metaspace / Strip decoder chains.
 *
 * Contract:
 *  - A tokenizer is immutable once built; every function taking a const tokenizer is
 *    reentrant and may be called from any number of threads at once.
 *  - sk_tokenizer_encode() APPENDS ids to `out` (no reset). It allocates only when `out`
 *    lacks capacity, when a non-ASCII piece between added tokens needs NFC and exceeds the
 *    stack scratch (2048 code points), or when one word exceeds 256 bytes (from 4096
 *    symbols the merge loop's rank buckets hold O(merges) per-rank heads); typical prompts
 *    never allocate once `out` is sized.
 *  - Text must be valid UTF-8 (NUL bytes are ordinary characters); anything else is
 *    SKYCMD_E_INVALID_ARGUMENT. One word (pre-token) of more than INT32_MAX bytes is
 *    SKYCMD_E_TOO_LARGE.
 *  - Loaders treat their input as hostile: sizes, ids and counts are checked, and a bad
 *    file gives SKYCMD_E_FORMAT (or _UNSUPPORTED for valid features we do not implement)
 *    with a message naming the key.
 */
#ifndef SK_TOKENIZER_H
#define SK_TOKENIZER_H

#include <stddef.h>
#include <stdint.h>

#include "../gguf/gguf.h"
#include "../util/util.h"

/* Flags of an added token (also the bit layout of skycmd.tokenizer.added_flags). */
enum {
    SK_ADDED_SPECIAL = 1,
    SK_ADDED_NORMALIZED = 2,
    SK_ADDED_LSTRIP = 4,
    SK_ADDED_RSTRIP = 8,
    SK_ADDED_SINGLE_WORD = 16,
    SK_ADDED_IN_MODEL = 32 /* the BPE model vocabulary also has an entry at this id */
};

/* One step of a normalizer or decoder chain. */
enum { SK_STEP_NFC = 1, SK_STEP_REPLACE, SK_STEP_BYTE_FALLBACK, SK_STEP_FUSE, SK_STEP_METASPACE, SK_STEP_STRIP };
enum { SK_PRETOK_BYTELEVEL = 0, SK_PRETOK_NONE, SK_PRETOK_SPLIT, SK_PRETOK_METASPACE };
enum { SK_SPLIT_REMOVED = 0, SK_SPLIT_ISOLATED, SK_SPLIT_MERGED_PREV, SK_SPLIT_MERGED_NEXT, SK_SPLIT_CONTIGUOUS };
enum { SK_PREPEND_ALWAYS = 0, SK_PREPEND_NEVER, SK_PREPEND_FIRST };
#define SK_MAX_STEPS 8
typedef struct sk_step {
    int kind;
    const char *a, *b;   /* Replace: pattern, content; Metaspace: replacement; Strip: content */
    uint32_t a_len, b_len;
    int opt, opt2;       /* Metaspace: prepend scheme; Strip: start, stop */
} sk_step;

typedef struct sk_added_token {
    int32_t id;
    uint32_t flags;
    const char *content;   /* NUL-terminated, points into the tokenizer's arena */
    uint32_t len;          /* bytes of content */
    const char *pattern;   /* what is matched: content, NFC-normalized when normalized */
    uint32_t pattern_len;
} sk_added_token;

/* Open-addressing string -> id table (strings live in the tokenizer's arena). */
typedef struct sk_strmap {
    uint32_t *slots;  /* index+1 into keys/ids, 0 = empty */
    uint32_t mask;
    const char **keys;
    uint32_t *key_len;
    int32_t *ids;
    uint32_t n, cap;
} sk_strmap;

/* (left id, right id) -> (rank, merged id); and rank -> merged id. */
typedef struct sk_merge_map {
    uint64_t *keys;   /* (a << 32 | b) + 1, 0 = empty */
    uint32_t *rank;
    int32_t *merged;
    uint32_t mask;
    uint32_t n;
    int32_t *by_rank; /* merged id of merge number r (ranks are 0 .. n_ranks-1) */
    uint32_t n_ranks;
} sk_merge_map;

struct skycmd_tokenizer {
    /* The public handle's fields, kept by src/api (this module never reads them): tag is
     * the API's handle tag (SK_TAG_TOKENIZER once src/api hands the tokenizer out, 0 for
     * the library's own tokenizers), owned_by_model marks a model's tokenizer. */
    uint32_t tag;
    int owned_by_model;

    /* id space: 0 .. n_ids-1 (holes allowed: piece NULL) */
    size_t n_ids;
    const char **piece;       /* id -> what HF's id_to_token gives (added content wins) */
    uint32_t *piece_len;
    const char **model_tok;   /* id -> BPE model vocabulary entry, NULL if none */
    uint32_t *model_tok_len;
    int32_t *added_of_id;     /* id -> index into added[], -1 if not an added token */

    sk_strmap vocab;          /* BPE model vocabulary */
    sk_merge_map merges;
    uint32_t n_merges;
    int32_t byte_id[256];     /* id of the single byte-level char for each byte, -1 if none */
    /* Cuts inside a run of one cut class (sk_tokenizer_cut_rules): per class, the bytes
     * before such a cut whose tokens may differ from the whole text's (0: none allowed);
     * the longest vocabulary entry in raw bytes. Set by sk_tok_finish. */
    uint32_t run_margin[3];
    uint32_t max_token_bytes;
    sk_run_merge *run_merges;  /* per class, that class's merges in rank order */
    size_t n_run_merges[3];
    /* The SentencePiece-style pipelines: what a space becomes (Replace or Metaspace), when a
     * cut before a space splits their encoding (spm_space_cut in tok_finish.c); else len 0. */
    const char *space_rep;
    uint32_t space_rep_len;
    /* Pairs of printable ASCII bytes x y that a cut between them could split wrongly: some
     * merge's result or added token holds them side by side, or one is no entry of its own.
     * Bit x * 128 + y. pair_cuts: the pipeline allows such cuts (pair_cuts in tok_finish.c). */
    uint64_t pair_join[256];
    int pair_cuts;

    sk_added_token *added;    /* in tokenizer.json order */
    size_t n_added;
    /* Matching index per pass (0: non-normalized tokens on raw text, 1: normalized tokens on
     * normalized text): for each first byte, the added[] indices sorted by pattern length,
     * longest first. */
    uint32_t *first_start[2]; /* 257 offsets into first_list */
    uint32_t *first_list[2];

    int nfc;                  /* the normalizer has an NFC step */
    int ignore_merges;
    int byte_level_decoder;
    /* The SentencePiece-style pipelines (Gemma/mmBERT): normalizer steps, pre-tokenizer,
     * decoder steps, BPE byte fallback. pretok SK_PRETOK_BYTELEVEL with no steps is the
     * byte-level pipeline above. */
    sk_step norm[SK_MAX_STEPS];
    int n_norm;
    int pretok;               /* SK_PRETOK_* */
    const char *split_pat;    /* Split: the literal pattern */
    uint32_t split_len;
    int split_behavior;       /* SK_SPLIT_* */
    char meta_rep[5];         /* Metaspace: the replacement char (UTF-8) */
    uint32_t meta_rep_len;
    int meta_prepend;         /* SK_PREPEND_* */
    int meta_split;
    sk_step dec[SK_MAX_STEPS];
    int n_dec;                /* 0 with byte_level_decoder: the ByteLevel decoder */
    int byte_fallback;
    int32_t fallback_id[256]; /* id of "<0xNN>" per byte, -1 if none */
    const char *pipeline_json; /* {"normalizer":..,"pre_tokenizer":..,"decoder":..} as loaded */
    char *bpe_unk;            /* BPE model unk_token (NULL = none) */
    int fuse_unk;
    int32_t bpe_unk_id;

    int32_t special[5];       /* skycmd_special -> id or -1 */

    /* arena of every string above */
    char **blocks;
    size_t n_blocks, cap_blocks;
    char *cur;
    size_t cur_left;
};

typedef struct sk_ids {
    int32_t *ids;
    size_t n, cap;
} sk_ids;

int sk_ids_push(sk_ids *v, int32_t id);
void sk_ids_free(sk_ids *v);

/* tokenizer.json text (+ optional tokenizer_config.json text, may be NULL). */
int sk_tokenizer_from_json(const char *json, size_t len, const char *config_json,
                           size_t config_len, skycmd_tokenizer **out, sk_err *e);
int sk_tokenizer_from_gguf(const sk_gguf *g, skycmd_tokenizer **out, sk_err *e);
/* Write every tokenizer.ggml.* key llama.cpp needs + skycmd.tokenizer.* keys (not the chat
 * template). pre NULL = "gpt-2". */
/* The same with the token list padded to n_vocab entries (0 or <= the tokenizer's ids: no
 * padding): an embedding table with more rows than the tokenizer has tokens. */
int sk_tokenizer_write_gguf_padded(const skycmd_tokenizer *t, sk_gguf_writer *w,
                                   const char *pre, size_t n_vocab, sk_err *e);
int sk_tokenizer_write_gguf(const skycmd_tokenizer *t, sk_gguf_writer *w, const char *pre,
                            sk_err *e);
void sk_tokenizer_free(skycmd_tokenizer *t);

/* Encode exactly like HF tokenizers (add_special_tokens=False), APPENDING to out. */
int sk_tokenizer_encode(const skycmd_tokenizer *t, const char *text, size_t len, sk_ids *out,
                        sk_err *e);
/* Decode ids (byte-level decoder, invalid UTF-8 replaced by U+FFFD like Rust's
 * from_utf8_lossy); appends to b. An id out of range is SKYCMD_E_INVALID_ARGUMENT. */
int sk_tokenizer_decode(const skycmd_tokenizer *t, const int32_t *ids, size_t n, sk_buf *b,
                        sk_err *e);
int32_t sk_tokenizer_special(const skycmd_tokenizer *t, int which /* skycmd_special */);
const char *sk_tokenizer_special_text(const skycmd_tokenizer *t, int which);
const char *sk_tokenizer_piece(const skycmd_tokenizer *t, int32_t id);
size_t sk_tokenizer_vocab_size(const skycmd_tokenizer *t);
/* The cuts that split this tokenizer's encoding exactly (encode(a + b) == encode(a) +
 * encode(b) for such a cut between a and b), as SK_CUT_* bits (src/util/util.h); 0 = none.
 * SK_CUT_SPACE, just before an ASCII space that follows a printable ASCII byte: GPT-2 pieces
 * never span it, NFC never composes across it; unless an added token's pattern holds a space
 * and a printable ASCII byte (a match could span the cut), strips whitespace on its right,
 * or is single_word and starts with a space. SK_CUT_CLASS(a, b), between printable ASCII
 * bytes of two cut classes (letter, digit, other but the apostrophe): no GPT-2 piece holds
 * two classes; unless an added token's pattern holds such a pair of bytes, or any added
 * token is single_word. The byte-level pipeline (NFC or no normalizer) can have both; a
 * SentencePiece-style one (a space replaced by U+2581, the text BPE'd as one word) can have
 * SK_CUT_SPACE, when no vocabulary entry holds the replacement right after another
 * character (so no merge joins the two sides of such a cut). */
int sk_tokenizer_space_cut_safe(const skycmd_tokenizer *t);
/* The cuts above (rules->cuts), and the cuts inside a run of one cut class (a run of
 * digits has no exact cut): rules->run_margin[c] > 0 allows a cut between two bytes of
 * class c with at least run_margin[c] + run_min bytes of the class before it; the
 * encoding of the text before such a cut is the whole text's except for tokens within its
 * last run_margin[c] bytes. Why it holds, and when a tokenizer gets none (0 for every
 * class): sk_tok_finish's run_margins in tok_finish.c. */
void sk_tokenizer_cut_rules(const skycmd_tokenizer *t, sk_cut_rules *rules);

/* A deterministic small byte-level BPE vocabulary of exactly vocab_size entries, written as
 * a real HF tokenizer.json + tokenizer_config.json (both malloc'ed, NUL-terminated).
 * Layout: 0 [PAD], 1 [UNK], 2 [CLS], 3 [SEP], 4 [MASK] (special), 5..260 the 256 byte
 * tokens, then merged tokens, and the last 7 ids are non-special added tokens for runs of
 * 8 down to 2 spaces. vocab_size must be in [512, 65536]. */
int sk_tokenizer_random_json(uint32_t vocab_size, uint64_t seed, char **tokenizer_json,
                             char **tokenizer_config_json, sk_err *e);

/* A deterministic Gemma-style (mmBERT) vocabulary of exactly vocab_size entries (2048 ..
 * 2^20), as tokenizer.json + tokenizer_config.json (malloc'ed); layout in tok_random_spm.c:
 * 0 <pad>, 1 <eos>, 2 <bos>, 3 <unk>, 4 <mask>, byte fallback tokens, U+2581 for spaces. */
int sk_tokenizer_random_spm_json(uint32_t vocab_size, uint64_t seed, char **tokenizer_json,
                                 char **tokenizer_config_json, sk_err *e);

/* ---- internal pieces shared by the tokenizer's files ---- */
skycmd_tokenizer *sk_tok_alloc(void);
char *sk_tok_strdup(skycmd_tokenizer *t, const char *s, size_t n);
/* After piece/model_tok/added are filled: build vocab map, added index, byte ids. Merges
 * are added with sk_tok_add_merge before calling. */
int sk_tok_finish(skycmd_tokenizer *t, sk_err *e);
/* Build the vocabulary map from model_tok[] (first step of every loader). */
int sk_tok_build_vocab(skycmd_tokenizer *t, sk_err *e);
/* Parse the normalizer / pre_tokenizer / decoder objects of a tokenizer.json (cJSON, NULL
 * allowed) into t; keeps their JSON for the GGUF. */
int sk_tok_parse_pipeline(skycmd_tokenizer *t, const void *normalizer, const void *pre_tokenizer,
                          const void *decoder, sk_err *e);
/* The same from the JSON text sk_tok_parse_pipeline kept (GGUF key skycmd.tokenizer.pipeline). */
int sk_tok_parse_pipeline_json(skycmd_tokenizer *t, const char *json, size_t len, sk_err *e);
/* The normalizer chain applied to s (valid UTF-8), appended to out: SKYCMD_OK or _NOMEM. */
int sk_tok_normalize(const skycmd_tokenizer *t, const char *s, size_t n, sk_buf *out);
/* Every occurrence of a Replace step's pattern in s[0, n) replaced, appended to out. */
void sk_tok_replace_all(sk_buf *out, const char *s, size_t n, const sk_step *st);
/* Fill fallback_id[] (after the vocabulary map is built). */
void sk_tok_set_fallback_ids(skycmd_tokenizer *t);
/* Fill added[].pattern (normalized contents: the normalizer applied to them). */
int sk_tok_set_patterns(skycmd_tokenizer *t, sk_err *e);
int sk_tok_merge_init(skycmd_tokenizer *t, size_t n_merges, sk_err *e);
/* Add merge number `rank` (a later duplicate pair replaces the earlier one, like HF). */
int sk_tok_add_merge(skycmd_tokenizer *t, const char *a, size_t alen, const char *b,
                     size_t blen, uint32_t rank, sk_err *e);
int32_t sk_strmap_get(const sk_strmap *m, const char *s, size_t n);
/* The BPE merge loop of one word (HF's Word::merge_all) on the ids of its initial symbols,
 * in place; *n becomes the number of tokens. how: which queue orders the merges, SK_BPE_AUTO
 * as encoding does (the heap below a few thousand symbols, rank buckets above), or one of
 * them forced (both give the same order; the tests compare them with a plain rescan).
 * SKYCMD_OK, _NOMEM or _TOO_LARGE (more than INT32_MAX symbols). */
enum { SK_BPE_AUTO = 0, SK_BPE_HEAP, SK_BPE_BUCKETS };
int sk_tok_bpe_merge(const skycmd_tokenizer *t, int32_t *ids, size_t *n, int how);
/* GPT-2 byte <-> char mapping. */
uint32_t sk_byte_to_cp(uint8_t b);
int sk_cp_to_byte(uint32_t cp); /* -1 if cp is not a byte-level char */
/* Split `s` (valid UTF-8) into GPT-2 pre-tokens: calls fn(ud, start, end) for each piece. */
typedef int (*sk_pretok_fn)(void *ud, size_t start, size_t end);
int sk_pretok_gpt2(const char *s, size_t n, sk_pretok_fn fn, void *ud);
/* Unicode helpers matching the regex engines HF tokenizers uses. */
int sk_uni_is_space(uint32_t cp);   /* White_Space */
int sk_uni_is_letter(uint32_t cp);  /* \p{L} */
int sk_uni_is_number(uint32_t cp);  /* \p{N} */
int sk_uni_is_word(uint32_t cp);    /* \w (Rust regex) */
/* Decode one code point of valid UTF-8 at s[i]; returns its length. */
size_t sk_utf8_next(const char *s, size_t n, size_t i, uint32_t *cp);

/* NFC as tokenizers 0.23.3 computes it (nfc.c; Unicode data of sk_nfc_unicode_version).
 * out must hold sk_nfc_max_len(n) code points; returns the normalized length (<= that). */
#define SK_NFC_MAX_EXPANSION 4
extern const char *const sk_nfc_unicode_version;
size_t sk_nfc_max_len(size_t n);
size_t sk_nfc(const uint32_t *in, size_t n, uint32_t *out);
/* The same on UTF-8 (malloc'd, NUL-terminated; NULL: out of memory or invalid UTF-8). */
char *sk_nfc_utf8(const char *s, size_t n, size_t *out_len);

#endif /* SK_TOKENIZER_H */
