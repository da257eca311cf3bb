/*
 * skycmd.i - the one SWIG interface of libskycmd for Go, Java and Node (-napi).
 *
 * Contract: SWIG does not wrap the raw C ABI (out-parameters and char ** do not map well to
 * three languages). It wraps four small owned boxes written below in plain C:
 *
 *   SkyOptions  - a skycmd_options bag (setInt / setString)
 *   SkyCall     - a handle-less call (version check, inspect, convert, random model,
 *                 quantize, model open) with its own skycmd_error: status + message
 *   SkyModel    - an open skycmd_model (immutable, shared by threads)
 *   SkySession  - a skycmd_session (one thread at a time) that answers requests
 *   SkyResponse - a skycmd_response with typed accessors
 *
 * No box ever throws: every fallible method returns a skycmd_status and leaves the message
 * in the box it was called on (message()), exactly like the C contract, so there is no
 * thread-local "last error" (Go goroutines migrate between threads). Each language's
 * hand-written layer turns (status, message) into its own error type. Every method checks
 * for a NULL/closed box, so a use after close() is SKYCMD_E_MISUSE, never a crash.
 * Generated code is produced by the build from this file; never edit it by hand.
 */
%module skycmd

%include <stdint.i>

%{
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include "skycmd.h"

typedef struct SkyOptions { skycmd_options *h; } SkyOptions;
typedef struct SkyCall { skycmd_error *err; char *output; int status; } SkyCall;
typedef struct SkyModel { skycmd_model *h; } SkyModel;
typedef struct SkySession { skycmd_session *h; char *msg; } SkySession;
typedef struct SkyResponse { skycmd_response *h; } SkyResponse;

static const char sky_closed_msg[] = "handle is closed";

/* Record a status in a SkyCall whose error object may be missing (out of memory). */
static int sky_call_done(SkyCall *c, int st) {
    if (c) c->status = st;
    return st;
}

static void sky_session_setmsg(SkySession *s, const char *m) {
    if (!s) return;
    free(s->msg);
    s->msg = NULL;
    if (m) {
        size_t n = strlen(m);
        s->msg = (char *)malloc(n + 1);
        if (s->msg) memcpy(s->msg, m, n + 1);
    }
}
%}

/* The export macro means nothing to SWIG. */
#define SKYCMD_API

/* The raw functions stay hidden (including ones added to the header later); the boxes below
 * are the surface. Kept: versions, status names, the enums and the version macros. */
%rename("$ignore", regextarget=1, %$isfunction) "^skycmd_(?!(version_number|version_string|abi_version|build_id|cpu_features|status_name|strerror)$)";
%ignore skycmd_progress_fn;
%ignore skycmd_log_fn;

#ifdef SWIGJAVA
/* The JNI class loads the native glue (from the jar or the build tree) before any call. */
%pragma(java) jniclasscode=%{
  static { org.skycmd.NativeLoader.load(); }
%}
/* The hand-written layer frees every box explicitly (and through a Cleaner); no finalize(). */
%typemap(javafinalize) SWIGTYPE ""
#endif

#ifdef SWIGJAVASCRIPT
/* Node only: decideAsync(model, requestJson, sessionOptions) -> Promise<plain answers>.
 * SWIG's Node-API backend generates synchronous calls only, so this hand-written part runs
 * the decide on the libuv thread pool (Napi::AsyncWorker): a fresh session per call (the
 * model is shared and immutable; sessions belong to one thread), built, used and freed on
 * the worker thread; the JS object is built on the main thread in OnOK. The worker holds a
 * reference to the JS model box so it cannot be collected while the work runs. */
%wrapper %{
#include <string>
#include <vector>

namespace {

class SkyDecideWorker : public Napi::AsyncWorker {
public:
    SkyDecideWorker(Napi::Env env, Napi::Object model_obj, skycmd_model *model, std::string json,
                    std::vector<std::pair<int, int64_t> > opts)
        : Napi::AsyncWorker(env), deferred_(Napi::Promise::Deferred::New(env)), model_(model),
          json_(std::move(json)), opts_(std::move(opts)) {
        model_ref_ = Napi::Persistent(model_obj);
    }
    ~SkyDecideWorker() { skycmd_response_free(resp_); }

    Napi::Promise Promise() { return deferred_.Promise(); }

    void Execute() override {
        skycmd_session *s = NULL;
        skycmd_request *req = NULL;
        status_ = skycmd_session_new(model_, &s);
        if (status_ != SKYCMD_OK) { message_ = skycmd_strerror(status_); return; }
        for (size_t i = 0; i < opts_.size() && status_ == SKYCMD_OK; i++) {
            status_ = skycmd_session_set_int(s, opts_[i].first, opts_[i].second);
            if (status_ != SKYCMD_OK) message_ = skycmd_session_errmsg(s);
        }
        if (status_ == SKYCMD_OK) {
            status_ = skycmd_request_parse(json_.data(), json_.size(), &req);
            if (status_ != SKYCMD_OK) message_ = req ? skycmd_request_errmsg(req) : skycmd_strerror(status_);
        }
        if (status_ == SKYCMD_OK) {
            status_ = skycmd_decide(s, req, &resp_);
            if (status_ != SKYCMD_OK) message_ = skycmd_session_errmsg(s);
        }
        skycmd_request_free(req);
        skycmd_session_free(s);
    }

    void OnOK() override {
        Napi::Env env = Env();
        Napi::HandleScope scope(env);
        if (status_ != SKYCMD_OK) {
            Napi::Error e = Napi::Error::New(env, message_);
            e.Set("status", Napi::Number::New(env, status_));
            e.Set("libraryMessage", Napi::String::New(env, message_));
            deferred_.Reject(e.Value());
            return;
        }
        Napi::Object out = Napi::Object::New(env);
        size_t n = skycmd_response_answer_count(resp_);
        Napi::Array answers = Napi::Array::New(env, n);
        for (size_t i = 0; i < n; i++) {
            Napi::Object a = Napi::Object::New(env);
            const char *choice = skycmd_response_answer_choice(resp_, i);
            a.Set("id", skycmd_response_answer_id(resp_, i));
            a.Set("type", Napi::Number::New(env, skycmd_response_answer_type(resp_, i)));
            a.Set("choice", choice ? Napi::Value(Napi::String::New(env, choice)) : env.Null());
            a.Set("value", Napi::Number::New(env, skycmd_response_answer_value(resp_, i)));
            a.Set("confidence", Napi::Number::New(env, skycmd_response_answer_confidence(resp_, i)));
            size_t m = skycmd_response_option_count(resp_, i);
            Napi::Array ps = Napi::Array::New(env, m);
            for (size_t j = 0; j < m; j++) {
                Napi::Object p = Napi::Object::New(env);
                p.Set("key", skycmd_response_option_key(resp_, i, j));
                p.Set("p", Napi::Number::New(env, skycmd_response_option_probability(resp_, i, j)));
                ps.Set((uint32_t)j, p);
            }
            a.Set("probabilities", ps);
            answers.Set((uint32_t)i, a);
        }
        out.Set("answers", answers);
        out.Set("inputTokens", Napi::Number::New(env, (double)skycmd_response_input_tokens(resp_)));
        out.Set("json", skycmd_response_json(resp_));
        skycmd_response_free(resp_);
        resp_ = NULL;
        deferred_.Resolve(out);
    }

    void OnError(const Napi::Error &e) override { deferred_.Reject(e.Value()); }

private:
    Napi::Promise::Deferred deferred_;
    Napi::ObjectReference model_ref_;
    skycmd_model *model_;
    std::string json_;
    std::vector<std::pair<int, int64_t> > opts_;
    skycmd_response *resp_ = NULL;
    int status_ = SKYCMD_OK;
    std::string message_;
};

Napi::Value sky_decide_async(const Napi::CallbackInfo &info) {
    Napi::Env env = info.Env();
    void *p = NULL;
    Napi::Promise::Deferred early = Napi::Promise::Deferred::New(env);
    if (info.Length() < 2 || !info[0].IsObject() || !info[1].IsString() ||
        !SWIG_IsOK(SWIG_ConvertPtr(info[0], &p, SWIGTYPE_p_SkyModel, 0)) || !p) {
        early.Reject(Napi::TypeError::New(env, "decideAsync(model: SkyModel, json: string, options?: number[])").Value());
        return early.Promise();
    }
    SkyModel *box = (SkyModel *)p;
    if (!box->h) {
        Napi::Error e = Napi::Error::New(env, "model is closed");
        e.Set("status", Napi::Number::New(env, SKYCMD_E_MISUSE));
        e.Set("libraryMessage", Napi::String::New(env, "model is closed"));
        early.Reject(e.Value());
        return early.Promise();
    }
    std::vector<std::pair<int, int64_t> > opts;
    if (info.Length() > 2 && info[2].IsArray()) {
        Napi::Array a = info[2].As<Napi::Array>();
        for (uint32_t i = 0; i + 1 < a.Length(); i += 2)
            opts.push_back(std::make_pair(a.Get(i).As<Napi::Number>().Int32Value(),
                                          a.Get(i + 1).As<Napi::Number>().Int64Value()));
    }
    SkyDecideWorker *w = new SkyDecideWorker(env, info[0].As<Napi::Object>(), box->h,
                                             info[1].As<Napi::String>().Utf8Value(), opts);
    Napi::Promise promise = w->Promise();
    w->Queue();
    return promise;
}

} // namespace
%}
%init %{
  exports.Set("decideAsync", Napi::Function::New(env, sky_decide_async, "decideAsync"));
%}
#endif

/* The header version this binding is compiled against (a plain unsigned constant, so each
 * language sees the number even if it cannot evaluate the macro expression). */
%constant unsigned int SKYCMD_HEADER_VERSION_NUMBER = SKYCMD_VERSION_NUMBER;

%include "skycmd.h"

/* What SWIG sees of the boxes: opaque structs with methods. */
typedef struct SkyOptions {} SkyOptions;
typedef struct SkyCall {} SkyCall;
typedef struct SkyModel {} SkyModel;
typedef struct SkySession {} SkySession;
typedef struct SkyResponse {} SkyResponse;

%newobject SkyCall::takeOutput;
%typemap(newfree) char * "skycmd_string_free($1);";

/* Leak-check helper for the binding tests: bytes of the C heap in use (glibc mallinfo2:
 * arena + mmapped chunks), or -1 where unknown. Not part of libskycmd's API. */
%inline %{
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 33))
#include <malloc.h>
long long skyHeapInUse(void) {
    struct mallinfo2 mi = mallinfo2();
    return (long long)(mi.uordblks + mi.hblkhd);
}
#else
long long skyHeapInUse(void) { return -1; }
#endif
%}

%extend SkyOptions {
    SkyOptions() {
        SkyOptions *o = (SkyOptions *)calloc(1, sizeof *o);
        if (o) o->h = skycmd_options_new();
        return o;
    }
    ~SkyOptions() {
        skycmd_options_free($self->h);
        free($self);
    }
    int setInt(int option, int64_t value) {
        if (!$self->h) return SKYCMD_E_NOMEM;
        return skycmd_options_set_int($self->h, option, value);
    }
    int setString(int option, const char *value) {
        if (!$self->h) return SKYCMD_E_NOMEM;
        return skycmd_options_set_string($self->h, option, value);
    }
}

%extend SkyCall {
    SkyCall() {
        SkyCall *c = (SkyCall *)calloc(1, sizeof *c);
        if (c) c->err = skycmd_error_new();
        return c;
    }
    ~SkyCall() {
        skycmd_error_free($self->err);
        skycmd_string_free($self->output);
        free($self);
    }
    /* Status and message of the last call made through this box. */
    int status() { return $self->status; }
    const char *message() {
        if ($self->status != SKYCMD_OK && !$self->err) return skycmd_strerror($self->status);
        return skycmd_error_message($self->err);
    }
    int checkVersion(unsigned int header_version_number) {
        return sky_call_done($self, skycmd_check_version(header_version_number, $self->err));
    }
    int inspect(const char *path, SkyOptions *opts) {
        skycmd_string_free($self->output);
        $self->output = NULL;
        return sky_call_done($self, skycmd_inspect(path, opts ? opts->h : NULL, &$self->output, $self->err));
    }
    /* The text of the last inspect, handed over (the box forgets it). */
    char *takeOutput() {
        char *s = $self->output;
        $self->output = NULL;
        return s;
    }
    int convert(const char *laya_dir, const char *out_path, SkyOptions *opts) {
        return sky_call_done($self, skycmd_convert(laya_dir, out_path, opts ? opts->h : NULL, $self->err));
    }
    int randomModel(const char *preset, const char *out_path, SkyOptions *opts) {
        return sky_call_done($self, skycmd_random_model(preset, out_path, opts ? opts->h : NULL, $self->err));
    }
    int quantize(const char *in_path, const char *out_path, SkyOptions *opts) {
        return sky_call_done($self, skycmd_quantize(in_path, out_path, opts ? opts->h : NULL, $self->err));
    }
    /* Open a model into an empty SkyModel box. */
    int openModel(const char *path, SkyOptions *opts, SkyModel *into) {
        if (!into || into->h) {
            skycmd_error_clear($self->err);
            $self->status = SKYCMD_E_MISUSE;
            return SKYCMD_E_MISUSE;
        }
        return sky_call_done($self, skycmd_model_open(path, opts ? opts->h : NULL, &into->h, $self->err));
    }
}

%extend SkyModel {
    SkyModel() { return (SkyModel *)calloc(1, sizeof(SkyModel)); }
    ~SkyModel() {
        /* A box collected with live sessions cannot free the model (the C library refuses
         * with BUSY); the language layers keep the model reachable from its sessions. */
        if ($self->h && skycmd_model_free($self->h) != SKYCMD_OK) return;
        free($self);
    }
    bool isOpen() { return $self->h != NULL; }
    /* SKYCMD_E_BUSY (nothing freed) while sessions exist; closing twice is OK. */
    int close() {
        int st = skycmd_model_free($self->h);
        if (st == SKYCMD_OK) $self->h = NULL;
        return st;
    }
    const char *name() {
        const char *n = $self->h ? skycmd_model_name($self->h) : NULL;
        return n ? n : "";
    }
    /* A hyper-parameter, or -1 when it is absent (or the model is closed). */
    int64_t getInt(const char *name) {
        int64_t v = -1;
        if (!$self->h || skycmd_model_get_int($self->h, name, &v) != SKYCMD_OK) return -1;
        return v;
    }
}

%extend SkySession {
    SkySession() { return (SkySession *)calloc(1, sizeof(SkySession)); }
    ~SkySession() {
        skycmd_session_free($self->h);
        free($self->msg);
        free($self);
    }
    int open(SkyModel *model) {
        if (!model || !model->h) {
            sky_session_setmsg($self, "model is closed");
            return SKYCMD_E_MISUSE;
        }
        if ($self->h) {
            sky_session_setmsg($self, "session is already open");
            return SKYCMD_E_MISUSE;
        }
        int st = skycmd_session_new(model->h, &$self->h);
        sky_session_setmsg($self, st == SKYCMD_OK ? "" : skycmd_strerror(st));
        return st;
    }
    bool isOpen() { return $self->h != NULL; }
    void close() {
        skycmd_session_free($self->h);
        $self->h = NULL;
    }
    int setInt(int option, int64_t value) {
        if (!$self->h) {
            sky_session_setmsg($self, sky_closed_msg);
            return SKYCMD_E_MISUSE;
        }
        int st = skycmd_session_set_int($self->h, option, value);
        sky_session_setmsg($self, st == SKYCMD_OK ? "" : skycmd_session_errmsg($self->h));
        return st;
    }
    /* Parse and answer a request into an empty SkyResponse box. */
    int decide(const char *request_json, SkyResponse *into) {
        skycmd_request *req = NULL;
        int st;
        if (!$self->h) {
            sky_session_setmsg($self, sky_closed_msg);
            return SKYCMD_E_MISUSE;
        }
        if (!into || into->h) {
            sky_session_setmsg($self, "response box is missing or already used");
            return SKYCMD_E_MISUSE;
        }
        if (!request_json) {
            sky_session_setmsg($self, "request is NULL");
            return SKYCMD_E_INVALID_ARGUMENT;
        }
        st = skycmd_request_parse(request_json, strlen(request_json), &req);
        if (st != SKYCMD_OK) {
            sky_session_setmsg($self, req ? skycmd_request_errmsg(req) : skycmd_strerror(st));
            skycmd_request_free(req);
            return st;
        }
        st = skycmd_decide($self->h, req, &into->h);
        skycmd_request_free(req);
        sky_session_setmsg($self, st == SKYCMD_OK ? "" : skycmd_session_errmsg($self->h));
        return st;
    }
    const char *message() { return $self->msg ? $self->msg : ""; }
}

%extend SkyResponse {
    SkyResponse() { return (SkyResponse *)calloc(1, sizeof(SkyResponse)); }
    ~SkyResponse() {
        skycmd_response_free($self->h);
        free($self);
    }
    void close() {
        skycmd_response_free($self->h);
        $self->h = NULL;
    }
    bool isOpen() { return $self->h != NULL; }
    const char *json() {
        const char *s = $self->h ? skycmd_response_json($self->h) : NULL;
        return s ? s : "";
    }
    int64_t inputTokens() { return $self->h ? skycmd_response_input_tokens($self->h) : -1; }
    /* size_t indices are exposed as long long so every language gets a plain integer. */
    long long answerCount() { return $self->h ? (long long)skycmd_response_answer_count($self->h) : 0; }
    const char *answerId(long long i) {
        const char *s = ($self->h && i >= 0) ? skycmd_response_answer_id($self->h, (size_t)i) : NULL;
        return s ? s : "";
    }
    int answerType(long long i) {
        return ($self->h && i >= 0) ? skycmd_response_answer_type($self->h, (size_t)i) : -1;
    }
    /* "" when the answer is not a choice. */
    const char *answerChoice(long long i) {
        const char *s = ($self->h && i >= 0) ? skycmd_response_answer_choice($self->h, (size_t)i) : NULL;
        return s ? s : "";
    }
    double answerValue(long long i) {
        return ($self->h && i >= 0) ? skycmd_response_answer_value($self->h, (size_t)i) : NAN;
    }
    double answerConfidence(long long i) {
        return ($self->h && i >= 0) ? skycmd_response_answer_confidence($self->h, (size_t)i) : NAN;
    }
    long long optionCount(long long i) {
        return ($self->h && i >= 0) ? (long long)skycmd_response_option_count($self->h, (size_t)i) : 0;
    }
    const char *optionKey(long long i, long long j) {
        const char *s = ($self->h && i >= 0 && j >= 0)
                            ? skycmd_response_option_key($self->h, (size_t)i, (size_t)j) : NULL;
        return s ? s : "";
    }
    double optionProbability(long long i, long long j) {
        return ($self->h && i >= 0 && j >= 0)
                   ? skycmd_response_option_probability($self->h, (size_t)i, (size_t)j) : NAN;
    }
}
