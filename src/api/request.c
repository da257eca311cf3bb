/* request.c - skycmd_request: a parsed, validated /v1/systemone body (src/decide/request.c
 * does the work). The handle exists even when parsing fails, to carry the message. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "handles.h"

int skycmd_request_parse(const char *json, size_t len, skycmd_request **out) {
    if (!out) return SKYCMD_E_INVALID_ARGUMENT;
    *out = NULL;
    skycmd_request *req = calloc(1, sizeof *req);
    if (!req) return SKYCMD_E_NOMEM;
    req->tag = SK_TAG_REQUEST;
    sk_err e = {0};
    int rc = sk_request_parse(json, len, &req->r, &e);
    req->status = rc;
    if (rc) snprintf(req->errmsg, sizeof req->errmsg, "%s", e.msg[0] ? e.msg : skycmd_strerror(rc));
    *out = req;
    return rc;
}

void skycmd_request_free(skycmd_request *req) {
    if (!req || req->tag != SK_TAG_REQUEST) return;
    sk_request_free(&req->r);
    req->tag = SK_TAG_DEAD;
    free(req);
}

const char *skycmd_request_errmsg(const skycmd_request *req) {
    if (!req || req->tag != SK_TAG_REQUEST) return "invalid skycmd_request handle";
    return req->errmsg;
}

size_t skycmd_request_question_count(const skycmd_request *req) {
    if (!req || req->tag != SK_TAG_REQUEST || req->status) return 0;
    return req->r.nq;
}
