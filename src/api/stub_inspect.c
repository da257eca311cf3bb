/* stub_inspect.c - placeholder until the GGUF issue implements skycmd_inspect. DELETE when done. */
#include "api.h"
int skycmd_inspect(const char *p, const skycmd_options *o, char **out, skycmd_error *err) {
    (void)p; (void)o; if (out) *out = NULL;
    return sk_api_fail(err, SKYCMD_E_UNSUPPORTED, "inspect: not implemented yet");
}
