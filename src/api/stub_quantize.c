/* stub_quantize.c - placeholder until the int8 issue lands. DELETE when done. */
#include "api.h"
int skycmd_quantize(const char *i, const char *o, const skycmd_options *opts, skycmd_error *err) {
    (void)i; (void)o; (void)opts;
    return sk_api_fail(err, SKYCMD_E_UNSUPPORTED, "quantize: not implemented yet");
}
