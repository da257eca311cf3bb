/* stub_tokenizer.c - placeholder until the tokenizer lands. DELETE when done. */
#include "api.h"
int skycmd_tokenizer_open_json(const char *p, skycmd_tokenizer **out, skycmd_error *err) {
    (void)p; if (out) *out = NULL;
    return sk_api_fail(err, SKYCMD_E_UNSUPPORTED, "tokenizer: not implemented yet");
}
int skycmd_tokenizer_free(skycmd_tokenizer *t) { (void)t; return SKYCMD_OK; }
int skycmd_tokenizer_encode(const skycmd_tokenizer *t, const char *s, size_t n, int32_t *ids,
                            size_t cap, size_t *n_ids) {
    (void)t; (void)s; (void)n; (void)ids; (void)cap; if (n_ids) *n_ids = 0;
    return SKYCMD_E_UNSUPPORTED;
}
int skycmd_tokenizer_decode(const skycmd_tokenizer *t, const int32_t *ids, size_t n, char **out) {
    (void)t; (void)ids; (void)n; if (out) *out = NULL;
    return SKYCMD_E_UNSUPPORTED;
}
const char *skycmd_tokenizer_token(const skycmd_tokenizer *t, int32_t id) { (void)t; (void)id; return NULL; }
size_t skycmd_tokenizer_vocab_size(const skycmd_tokenizer *t) { (void)t; return 0; }
int32_t skycmd_tokenizer_special_id(const skycmd_tokenizer *t, int w) { (void)t; (void)w; return -1; }
