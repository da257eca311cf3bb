/* stub_decide.c - placeholder until the decide issue lands (model, session, request,
 * response). DELETE when done. */
#include <math.h>
#include "api.h"
int skycmd_model_open(const char *p, const skycmd_options *o, skycmd_model **out, skycmd_error *err) {
    (void)p; (void)o; if (out) *out = NULL;
    return sk_api_fail(err, SKYCMD_E_UNSUPPORTED, "model: not implemented yet");
}
int skycmd_model_open_buffer(const void *d, size_t n, const skycmd_options *o, skycmd_model **out,
                             skycmd_error *err) {
    (void)d; (void)n; (void)o; if (out) *out = NULL;
    return sk_api_fail(err, SKYCMD_E_UNSUPPORTED, "model: not implemented yet");
}
int skycmd_model_free(skycmd_model *m) { (void)m; return SKYCMD_OK; }
const char *skycmd_model_name(const skycmd_model *m) { (void)m; return NULL; }
const skycmd_tokenizer *skycmd_model_tokenizer(const skycmd_model *m) { (void)m; return NULL; }
int skycmd_model_get_int(const skycmd_model *m, const char *n, int64_t *v) { (void)m; (void)n; (void)v; return SKYCMD_E_UNSUPPORTED; }
int skycmd_request_parse(const char *j, size_t n, skycmd_request **out) { (void)j; (void)n; if (out) *out = NULL; return SKYCMD_E_UNSUPPORTED; }
void skycmd_request_free(skycmd_request *r) { (void)r; }
const char *skycmd_request_errmsg(const skycmd_request *r) { (void)r; return "not implemented yet"; }
size_t skycmd_request_question_count(const skycmd_request *r) { (void)r; return 0; }
int skycmd_session_new(skycmd_model *m, skycmd_session **out) { (void)m; if (out) *out = NULL; return SKYCMD_E_UNSUPPORTED; }
void skycmd_session_free(skycmd_session *s) { (void)s; }
int skycmd_session_set_int(skycmd_session *s, int o, int64_t v) { (void)s; (void)o; (void)v; return SKYCMD_E_UNSUPPORTED; }
const char *skycmd_session_errmsg(const skycmd_session *s) { (void)s; return "not implemented yet"; }
int skycmd_decide(skycmd_session *s, const skycmd_request *r, skycmd_response **out) { (void)s; (void)r; if (out) *out = NULL; return SKYCMD_E_UNSUPPORTED; }
int skycmd_decide_json(skycmd_session *s, const char *j, size_t n, char **out) { (void)s; (void)j; (void)n; if (out) *out = NULL; return SKYCMD_E_UNSUPPORTED; }
void skycmd_response_free(skycmd_response *r) { (void)r; }
const char *skycmd_response_json(const skycmd_response *r) { (void)r; return NULL; }
size_t skycmd_response_answer_count(const skycmd_response *r) { (void)r; return 0; }
int64_t skycmd_response_input_tokens(const skycmd_response *r) { (void)r; return -1; }
const char *skycmd_response_answer_id(const skycmd_response *r, size_t i) { (void)r; (void)i; return NULL; }
int skycmd_response_answer_type(const skycmd_response *r, size_t i) { (void)r; (void)i; return -1; }
const char *skycmd_response_answer_choice(const skycmd_response *r, size_t i) { (void)r; (void)i; return NULL; }
double skycmd_response_answer_value(const skycmd_response *r, size_t i) { (void)r; (void)i; return NAN; }
double skycmd_response_answer_confidence(const skycmd_response *r, size_t i) { (void)r; (void)i; return NAN; }
size_t skycmd_response_option_count(const skycmd_response *r, size_t i) { (void)r; (void)i; return 0; }
const char *skycmd_response_option_key(const skycmd_response *r, size_t i, size_t j) { (void)r; (void)i; (void)j; return NULL; }
double skycmd_response_option_probability(const skycmd_response *r, size_t i, size_t j) { (void)r; (void)i; (void)j; return NAN; }
