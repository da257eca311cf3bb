/* stub_convert.c - placeholder until the convert issue lands. DELETE when done. */
#include "api.h"
int skycmd_convert(const char *d, const char *o, const skycmd_options *opts, skycmd_error *err) {
    (void)d; (void)o; (void)opts;
    return sk_api_fail(err, SKYCMD_E_UNSUPPORTED, "convert: not implemented yet");
}
int skycmd_random_model(const char *p, const char *o, const skycmd_options *opts, skycmd_error *err) {
    (void)p; (void)o; (void)opts;
    return sk_api_fail(err, SKYCMD_E_UNSUPPORTED, "random: not implemented yet");
}
