/*
 * skycmd.i - the one SWIG interface of libskycmd for Go, Java and Node (-napi).
 *
 * Contract: SWIG does not wrap the raw C ABI (out-parameters and char ** do not map well to
 * three languages). It wraps four small owned boxes written below in plain C:
 *
 *   SkyOptions   - a skycmd_options bag (setInt / setString) that also records the progress
 *                  of convert/quantize in atomics and carries a cancel flag (see below)
 *   SkyCall      - a handle-less call (version check, inspect, convert, random model,
 *                  quantize, model open from a path or from bytes, the built-in model's
 *                  path) with its own skycmd_error: status + message + the OS errno
 *                  (osError(), fileNotFound(): ENOENT, a missing file)
 *   SkyModel     - an open skycmd_model (immutable, shared by threads); owns the copy of
 *                  the bytes of a model opened from a buffer
 *   SkyTokenizer - a tokenizer: borrowed from a SkyModel (which then refuses to close with
 *                  BUSY until the tokenizer box is closed) or loaded from a tokenizer.json
 *   SkySession   - a skycmd_session (one thread at a time) that answers requests
 *   SkyBatch     - parsed requests for SkySession.decideBatch and their responses
 *   SkyResponse  - a skycmd_response with typed accessors
 *
 * No box ever throws: every fallible method returns a skycmd_status and leaves the message
 * in the box it was called on (message()), exactly like the C contract, so there is no
 * thread-local "last error" (Go goroutines migrate between threads). Each language's
 * hand-written layer turns (status, message) into its own error type. Every method checks
 * for a NULL/closed box, so a use after close() is SKYCMD_E_MISUSE, never a crash.
 *
 * Progress and cancellation without a cross-language callback: every SkyOptions box installs
 * one C progress callback (sky_options_progress) whose user data is the box itself. It stores
 * done/total/calls in atomics and returns the box's cancel flag, which any thread may raise
 * with cancel(). A language reads progressDone()/progressTotal() whenever it likes (Go from a
 * goroutine, Java from a thread), or, like the Node worker below, wraps the callback to also
 * notify its own event loop. A raised flag stays raised: use a fresh box per call.
 * Generated code is produced by the build from this file; never edit it by hand.
 */
%module skycmd

%include <stdint.i>

%{
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "skycmd.h"

/* Counters shared between threads use the GCC/Clang __atomic builtins: the same code
 * compiles as C (Go's cgo, Java's JNI glue) and as C++ (the Node addon), where C11
 * _Atomic is not available. */
typedef struct SkyOptions {
    skycmd_options *h;
    uint64_t done, total, calls; /* last progress report and how many there were */
    int cancel;                  /* non-zero: the next progress report cancels the call */
} SkyOptions;
typedef struct SkyCall { skycmd_error *err; char *output; int status; } SkyCall;
typedef struct SkyModel {
    skycmd_model *h;
    void *bytes;   /* the model's own copy of a buffer it was opened from (or NULL) */
    int borrowers; /* open SkyTokenizer boxes borrowed from this model */
} SkyModel;
typedef struct SkyTokenizer {
    const skycmd_tokenizer *h;
    skycmd_tokenizer *owned; /* == h when loaded from a tokenizer.json, else NULL */
    SkyModel *model;         /* the lender when borrowed, else NULL */
    int32_t *ids;            /* the id list: encode() output, decode() input */
    size_t n_ids, cap_ids;
    size_t count;            /* ids of the last encode() or count() */
    char *text;              /* the last decode() output */
    char *msg;
    int os_error;            /* the OS errno of the last failed openJson (0: none) */
} SkyTokenizer;
typedef struct SkySession { skycmd_session *h; char *msg; } SkySession;
typedef struct SkyBatch {
    skycmd_request **reqs;
    skycmd_response **out; /* filled by SkySession.decideBatch, taken by takeResponse */
    size_t n, cap;
    char *msg;
} SkyBatch;
typedef struct SkyResponse { skycmd_response *h; } SkyResponse;

static int sky_options_progress(void *user_data, uint64_t done, uint64_t total) {
    SkyOptions *o = (SkyOptions *)user_data;
    __atomic_store_n(&o->done, done, __ATOMIC_RELAXED);
    __atomic_store_n(&o->total, total, __ATOMIC_RELAXED);
    __atomic_add_fetch(&o->calls, 1, __ATOMIC_RELEASE);
    return __atomic_load_n(&o->cancel, __ATOMIC_ACQUIRE) != 0;
}

static const char sky_closed_msg[] = "handle is closed";

/* Record a status in a SkyCall whose error object may be missing (out of memory). */
static int sky_call_done(SkyCall *c, int st) {
    if (c) c->status = st;
    return st;
}

/* Replace a box's message with a copy of m (NULL: none). */
static void sky_setmsg(char **slot, const char *m) {
    free(*slot);
    *slot = NULL;
    if (m) {
        size_t n = strlen(m);
        *slot = (char *)malloc(n + 1);
        if (*slot) memcpy(*slot, m, n + 1);
    }
}

static void sky_session_setmsg(SkySession *s, const char *m) {
    if (s) sky_setmsg(&s->msg, m);
}

/* Free a model box's model and its buffer copy; BUSY (nothing freed) while tokenizers are
 * borrowed or sessions exist. */
static int sky_model_release(SkyModel *m) {
    int st;
    if (__atomic_load_n(&m->borrowers, __ATOMIC_ACQUIRE) > 0) return SKYCMD_E_BUSY;
    st = skycmd_model_free(m->h);
    if (st != SKYCMD_OK) return st;
    m->h = NULL;
    free(m->bytes);
    m->bytes = NULL;
    return SKYCMD_OK;
}

static void sky_tokenizer_release(SkyTokenizer *t) {
    if (t->owned) skycmd_tokenizer_free(t->owned);
    if (t->model) __atomic_sub_fetch(&t->model->borrowers, 1, __ATOMIC_RELEASE);
    t->h = NULL;
    t->owned = NULL;
    t->model = NULL;
}

static void sky_batch_free_responses(SkyBatch *b) {
    size_t i;
    if (!b->out) return;
    for (i = 0; i < b->n; i++) skycmd_response_free(b->out[i]);
    free(b->out);
    b->out = NULL;
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
/* Node only: decideAsync(model, requestJson, sessionOptions) -> Promise<plain answers>,
 * decideBatchAsync(model, requestJsons[], sessionOptions) -> Promise<plain answers[]>,
 * decideEachAsync(model, requestJsons[], sessionOptions) -> Promise<({response: plain} |
 * {status, libraryMessage})[]> (skycmd_decide_each: one slot per request, a bad one fails
 * its own slot only),
 * fileAsync(op, a, b, optionsBox, onProgress?) -> Promise<string | undefined> (op: "convert",
 * "quantize", "random", "inspect") and openModelAsync(path, optionsBox, modelBox,
 * onProgress?) -> Promise<undefined> (skycmd_model_open into the empty model box).
 * SWIG's Node-API backend generates synchronous calls only, so this hand-written part runs
 * the work on the libuv thread pool (Napi::AsyncWorker): a fresh session per decide call (the
 * model is shared and immutable; sessions belong to one thread), built, used and freed on
 * the worker thread; the JS object is built on the main thread in OnOK. The workers hold a
 * reference to the JS model or options box so it cannot be collected while the work runs.
 * fileAsync reports progress through Napi::AsyncProgressWorker (the latest report reaches
 * onProgress(done, total) on the main thread) and is cancelled by the options box's cancel()
 * flag, which the JS layer raises from an AbortSignal. */
%wrapper %{
#include <string>
#include <vector>

namespace {

/* {status, libraryMessage, osError}: the JS layer turns it into a SkycmdError. */
Napi::Error sky_napi_error(Napi::Env env, int status, const std::string &message, int os_error = 0) {
    Napi::Error e = Napi::Error::New(env, message.empty() ? skycmd_strerror(status) : message);
    e.Set("status", Napi::Number::New(env, status));
    e.Set("libraryMessage", Napi::String::New(env, message));
    e.Set("osError", Napi::Number::New(env, os_error));
    return e;
}

/* The plain JS form of a response: {model, answers: [{id, type, choice, value, confidence,
 * probabilities: [{key, p}], legend: [text] (score answers; else empty)}], inputTokens,
 * json}. */
Napi::Object sky_plain_response(Napi::Env env, const skycmd_response *resp) {
    Napi::Object out = Napi::Object::New(env);
    size_t n = skycmd_response_answer_count(resp);
    Napi::Array answers = Napi::Array::New(env, n);
    for (size_t i = 0; i < n; i++) {
        Napi::Object a = Napi::Object::New(env);
        const char *choice = skycmd_response_answer_choice(resp, i);
        a.Set("id", skycmd_response_answer_id(resp, i));
        a.Set("type", Napi::Number::New(env, skycmd_response_answer_type(resp, i)));
        a.Set("choice", choice ? Napi::Value(Napi::String::New(env, choice)) : env.Null());
        a.Set("value", Napi::Number::New(env, skycmd_response_answer_value(resp, i)));
        a.Set("confidence", Napi::Number::New(env, skycmd_response_answer_confidence(resp, i)));
        size_t m = skycmd_response_option_count(resp, i);
        Napi::Array ps = Napi::Array::New(env, m);
        for (size_t j = 0; j < m; j++) {
            Napi::Object p = Napi::Object::New(env);
            p.Set("key", skycmd_response_option_key(resp, i, j));
            p.Set("p", Napi::Number::New(env, skycmd_response_option_probability(resp, i, j)));
            ps.Set((uint32_t)j, p);
        }
        a.Set("probabilities", ps);
        bool score = skycmd_response_answer_type(resp, i) == SKYCMD_QTYPE_SCORE;
        Napi::Array legend = Napi::Array::New(env, score ? m : 0);
        for (size_t j = 0; score && j < m; j++) {
            const char *l = skycmd_response_option_legend(resp, i, j);
            legend.Set((uint32_t)j, Napi::String::New(env, l ? l : ""));
        }
        a.Set("legend", legend);
        answers.Set((uint32_t)i, a);
    }
    const char *model = skycmd_response_model(resp);
    out.Set("model", model ? model : "");
    out.Set("answers", answers);
    out.Set("inputTokens", Napi::Number::New(env, (double)skycmd_response_input_tokens(resp)));
    const char *json = skycmd_response_json(resp);
    out.Set("json", json ? json : "");
    return out;
}

class SkyFileWorker : public Napi::AsyncProgressWorker<uint64_t> {
public:
    SkyFileWorker(Napi::Env env, std::string op, std::string a, std::string b, Napi::Object opts_obj,
                  SkyOptions *opts, Napi::Value on_progress)
        : Napi::AsyncProgressWorker<uint64_t>(env), deferred_(Napi::Promise::Deferred::New(env)),
          op_(std::move(op)), a_(std::move(a)), b_(std::move(b)), opts_(opts) {
        opts_ref_ = Napi::Persistent(opts_obj);
        if (on_progress.IsFunction()) progress_ref_ = Napi::Persistent(on_progress.As<Napi::Function>());
    }
    /* op "open": the model goes into this empty box on the main thread (OnOK). */
    void SetTarget(Napi::Object box_obj, SkyModel *box) {
        target_ref_ = Napi::Persistent(box_obj);
        target_ = box;
    }
    ~SkyFileWorker() { skycmd_model_free(model_); } /* a model nobody took (NULL is OK) */

    Napi::Promise Promise() { return deferred_.Promise(); }

    void Execute(const ExecutionProgress &progress) override {
        skycmd_error *err = skycmd_error_new();
        char *out = NULL;
        progress_ = &progress;
        /* Wrap the box's own callback (atomics + cancel flag) to also notify the loop. */
        skycmd_options_set_progress(opts_->h, Report, this);
        if (op_ == "convert") status_ = skycmd_convert(a_.c_str(), b_.c_str(), opts_->h, err);
        else if (op_ == "quantize") status_ = skycmd_quantize(a_.c_str(), b_.c_str(), opts_->h, err);
        else if (op_ == "random") status_ = skycmd_random_model(a_.c_str(), b_.c_str(), opts_->h, err);
        else if (op_ == "open") status_ = skycmd_model_open(a_.c_str(), opts_->h, &model_, err);
        else status_ = skycmd_inspect(a_.c_str(), opts_->h, &out, err);
        skycmd_options_set_progress(opts_->h, sky_options_progress, opts_);
        progress_ = NULL;
        if (status_ != SKYCMD_OK) {
            message_ = err ? skycmd_error_message(err) : skycmd_strerror(status_);
            os_error_ = err ? skycmd_error_errno(err) : 0;
        }
        if (out) output_ = out;
        has_output_ = out != NULL;
        skycmd_string_free(out);
        skycmd_error_free(err);
    }

    /* An exception thrown by onProgress cancels the call (the options box's cancel flag, read
     * at the library's next progress report; no more reports reach onProgress) and becomes the
     * `callbackError` of the SKYCMD_E_CANCELLED rejection (the JS layer's `cause`). It must
     * not escape: node-addon-api would report it as an uncaught Node-API callback exception
     * (DEP0168, or a crash with --force-node-api-uncaught-exceptions-policy) and the call
     * would go on. */
    void OnProgress(const uint64_t *data, size_t count) override {
        if (progress_ref_.IsEmpty() || count < 2 || !callback_error_.IsEmpty() || callback_failed_) return;
        try {
            Napi::Env env = Env();
            Napi::HandleScope scope(env);
            progress_ref_.Call({Napi::Number::New(env, (double)data[0]), Napi::Number::New(env, (double)data[1])});
        } catch (const Napi::Error &e) {
            callback_failed_ = true;
            __atomic_store_n(&opts_->cancel, 1, __ATOMIC_RELEASE);
            try { callback_error_ = Napi::Persistent(e.Value()); } catch (const Napi::Error &) {}
        }
    }

    /* OnOK/OnError never let a C++ exception out: when the environment is being torn down (a
     * worker_threads Worker terminated while the work ran) every Node-API call fails and
     * node-addon-api throws Napi::Error, which would abort the whole process. */
    void OnOK() override {
        try {
            Napi::Env env = Env();
            Napi::HandleScope scope(env);
            if (callback_failed_) { /* onProgress threw: cancelled, whatever the library did */
                Napi::Error e = sky_napi_error(env, SKYCMD_E_CANCELLED, "cancelled: the onProgress callback threw");
                if (!callback_error_.IsEmpty()) e.Set("callbackError", callback_error_.Value());
                e.Set("completed", Napi::Boolean::New(env, status_ == SKYCMD_OK)); /* its output was written */
                deferred_.Reject(e.Value());
                return;
            }
            if (status_ != SKYCMD_OK) { deferred_.Reject(sky_napi_error(env, status_, message_, os_error_).Value()); return; }
            if (target_) {
                if (target_->h) { /* the box was filled meanwhile: refuse, the model is freed */
                    deferred_.Reject(sky_napi_error(env, SKYCMD_E_MISUSE, "model box is already open").Value());
                    return;
                }
                target_->h = model_;
                model_ = NULL;
            }
            deferred_.Resolve(has_output_ ? Napi::Value(Napi::String::New(env, output_)) : env.Undefined());
        } catch (const Napi::Error &) { /* the environment is going away */
        }
    }

    void OnError(const Napi::Error &e) override {
        try { deferred_.Reject(e.Value()); } catch (const Napi::Error &) {}
    }

private:
    static int Report(void *user_data, uint64_t done, uint64_t total) {
        SkyFileWorker *w = static_cast<SkyFileWorker *>(user_data);
        int stop = sky_options_progress(w->opts_, done, total);
        if (w->progress_ && !w->progress_ref_.IsEmpty()) {
            uint64_t pair[2] = {done, total};
            w->progress_->Send(pair, 2);
        }
        return stop;
    }

    Napi::Promise::Deferred deferred_;
    Napi::ObjectReference opts_ref_, target_ref_;
    Napi::FunctionReference progress_ref_;
    Napi::ObjectReference callback_error_; /* what onProgress threw (a Napi::Error's object) */
    bool callback_failed_ = false;
    std::string op_, a_, b_;
    SkyOptions *opts_;
    SkyModel *target_ = NULL;
    skycmd_model *model_ = NULL;
    const ExecutionProgress *progress_ = NULL;
    int status_ = SKYCMD_OK, os_error_ = 0;
    std::string message_, output_;
    bool has_output_ = false;
};

Napi::Value sky_file_async(const Napi::CallbackInfo &info) {
    Napi::Env env = info.Env();
    void *p = NULL;
    Napi::Promise::Deferred early = Napi::Promise::Deferred::New(env);
    if (info.Length() < 4 || !info[0].IsString() || !info[1].IsString() || !info[2].IsString() ||
        !info[3].IsObject() || !SWIG_IsOK(SWIG_ConvertPtr(info[3], &p, SWIGTYPE_p_SkyOptions, 0)) || !p) {
        early.Reject(Napi::TypeError::New(env, "fileAsync(op: string, a: string, b: string, options: SkyOptions, onProgress?)").Value());
        return early.Promise();
    }
    SkyOptions *box = (SkyOptions *)p;
    std::string op = info[0].As<Napi::String>().Utf8Value();
    if (!box->h || (op != "convert" && op != "quantize" && op != "random" && op != "inspect")) {
        early.Reject(sky_napi_error(env, box->h ? SKYCMD_E_INVALID_ARGUMENT : SKYCMD_E_NOMEM,
                                    box->h ? "unknown file operation " + op : "").Value());
        return early.Promise();
    }
    SkyFileWorker *w = new SkyFileWorker(env, op, info[1].As<Napi::String>().Utf8Value(),
                                         info[2].As<Napi::String>().Utf8Value(), info[3].As<Napi::Object>(),
                                         box, info.Length() > 4 ? info[4] : env.Undefined());
    Napi::Promise promise = w->Promise();
    w->Queue();
    return promise;
}

/* openModelAsync(path, optionsBox, modelBox, onProgress?): skycmd_model_open on the pool. */
Napi::Value sky_open_model_async(const Napi::CallbackInfo &info) {
    Napi::Env env = info.Env();
    void *p = NULL, *m = NULL;
    Napi::Promise::Deferred early = Napi::Promise::Deferred::New(env);
    if (info.Length() < 3 || !info[0].IsString() || !info[1].IsObject() || !info[2].IsObject() ||
        !SWIG_IsOK(SWIG_ConvertPtr(info[1], &p, SWIGTYPE_p_SkyOptions, 0)) || !p ||
        !SWIG_IsOK(SWIG_ConvertPtr(info[2], &m, SWIGTYPE_p_SkyModel, 0)) || !m) {
        early.Reject(Napi::TypeError::New(env, "openModelAsync(path: string, options: SkyOptions, into: SkyModel, onProgress?)").Value());
        return early.Promise();
    }
    SkyOptions *box = (SkyOptions *)p;
    SkyModel *into = (SkyModel *)m;
    if (!box->h || into->h) {
        early.Reject(sky_napi_error(env, box->h ? SKYCMD_E_MISUSE : SKYCMD_E_NOMEM,
                                    box->h ? "model box is already open" : "").Value());
        return early.Promise();
    }
    SkyFileWorker *w = new SkyFileWorker(env, "open", info[0].As<Napi::String>().Utf8Value(), "",
                                         info[1].As<Napi::Object>(), box,
                                         info.Length() > 3 ? info[3] : env.Undefined());
    w->SetTarget(info[2].As<Napi::Object>(), into);
    Napi::Promise promise = w->Promise();
    w->Queue();
    return promise;
}

/* What a SkyDecideWorker answers: one request, an all-or-nothing batch, or each request on
 * its own account. */
enum SkyDecideMode { SKY_DECIDE_ONE, SKY_DECIDE_BATCH, SKY_DECIDE_EACH };

class SkyDecideWorker : public Napi::AsyncWorker {
public:
    SkyDecideWorker(Napi::Env env, Napi::Object model_obj, skycmd_model *model, std::vector<std::string> jsons,
                    SkyDecideMode mode, std::vector<std::pair<int, int64_t> > opts)
        : Napi::AsyncWorker(env), deferred_(Napi::Promise::Deferred::New(env)), model_(model),
          jsons_(std::move(jsons)), batch_(mode == SKY_DECIDE_BATCH), each_(mode == SKY_DECIDE_EACH),
          opts_(std::move(opts)) {
        model_ref_ = Napi::Persistent(model_obj);
    }
    ~SkyDecideWorker() {
        for (size_t i = 0; i < resps_.size(); i++) skycmd_response_free(resps_[i]);
    }

    Napi::Promise Promise() { return deferred_.Promise(); }

    void Execute() override {
        skycmd_session *s = NULL;
        std::vector<skycmd_request *> reqs(jsons_.size(), (skycmd_request *)NULL);
        resps_.assign(jsons_.size(), (skycmd_response *)NULL);
        status_ = skycmd_session_new(model_, &s);
        if (status_ != SKYCMD_OK) { message_ = skycmd_strerror(status_); return; }
        for (size_t i = 0; i < opts_.size() && status_ == SKYCMD_OK; i++) {
            status_ = skycmd_session_set_int(s, opts_[i].first, opts_[i].second);
            if (status_ != SKYCMD_OK) message_ = skycmd_session_errmsg(s);
        }
        if (each_ && status_ == SKYCMD_OK) {
            Each(s, reqs);
            skycmd_session_free(s);
            return;
        }
        for (size_t i = 0; i < jsons_.size() && status_ == SKYCMD_OK; i++) {
            status_ = skycmd_request_parse(jsons_[i].data(), jsons_[i].size(), &reqs[i]);
            if (status_ != SKYCMD_OK) {
                message_ = reqs[i] ? skycmd_request_errmsg(reqs[i]) : skycmd_strerror(status_);
                if (batch_) message_ = "request " + std::to_string(i) + ": " + message_;
            }
        }
        if (status_ == SKYCMD_OK) {
            if (batch_) status_ = skycmd_decide_batch(s, reqs.data(), reqs.size(), resps_.data());
            else status_ = skycmd_decide(s, reqs[0], &resps_[0]);
            if (status_ != SKYCMD_OK) message_ = skycmd_session_errmsg(s);
        }
        for (size_t i = 0; i < reqs.size(); i++) skycmd_request_free(reqs[i]);
        skycmd_session_free(s);
    }

    /* Never lets a C++ exception out (see SkyFileWorker::OnOK): a Worker terminated while the
     * decide ran tears its environment down, every Node-API call then fails, and an escaping
     * Napi::Error would abort the process. */
    void OnOK() override {
        try {
            Resolve();
        } catch (const Napi::Error &) { /* the environment is going away */
        }
    }

    void OnError(const Napi::Error &e) override {
        try { deferred_.Reject(e.Value()); } catch (const Napi::Error &) {}
    }

private:
    void Resolve() {
        Napi::Env env = Env();
        Napi::HandleScope scope(env);
        if (status_ != SKYCMD_OK) {
            deferred_.Reject(sky_napi_error(env, status_, message_).Value());
            return;
        }
        if (each_) {
            Napi::Array all = Napi::Array::New(env, resps_.size());
            for (size_t i = 0; i < resps_.size(); i++) {
                if (slot_status_[i] == SKYCMD_OK && resps_[i]) {
                    Napi::Object item = Napi::Object::New(env);
                    item.Set("response", sky_plain_response(env, resps_[i]));
                    all.Set((uint32_t)i, item);
                } else {
                    int st = slot_status_[i] == SKYCMD_OK ? SKYCMD_E_INTERNAL : slot_status_[i];
                    Napi::Object item = Napi::Object::New(env);
                    item.Set("status", Napi::Number::New(env, st));
                    item.Set("libraryMessage", Napi::String::New(env, slot_msg_[i]));
                    all.Set((uint32_t)i, item);
                }
            }
            deferred_.Resolve(all);
            return;
        }
        if (!batch_) {
            deferred_.Resolve(sky_plain_response(env, resps_[0]));
            return;
        }
        Napi::Array all = Napi::Array::New(env, resps_.size());
        for (size_t i = 0; i < resps_.size(); i++) all.Set((uint32_t)i, sky_plain_response(env, resps_[i]));
        deferred_.Resolve(all);
    }

    /* skycmd_decide_each on the worker thread: a request whose parse failed goes to C as it
     * is (C reports its parse status and message in its slot); no memory to parse it at all
     * fails that slot here. */
    void Each(skycmd_session *s, std::vector<skycmd_request *> &reqs) {
        size_t n = jsons_.size();
        std::vector<int> st(n, SKYCMD_OK);
        std::vector<char *> msgs(n, (char *)NULL);
        slot_status_.assign(n, SKYCMD_OK);
        slot_msg_.assign(n, std::string());
        for (size_t i = 0; i < n; i++) skycmd_request_parse(jsons_[i].data(), jsons_[i].size(), &reqs[i]);
        std::vector<const skycmd_request *> cr(reqs.begin(), reqs.end());
        status_ = skycmd_decide_each(s, cr.data(), n, resps_.data(), st.data(), msgs.data());
        if (status_ != SKYCMD_OK) message_ = skycmd_session_errmsg(s);
        for (size_t i = 0; i < n; i++) {
            if (status_ == SKYCMD_OK) {
                slot_status_[i] = reqs[i] ? st[i] : SKYCMD_E_NOMEM;
                if (msgs[i]) slot_msg_[i] = msgs[i];
                else if (slot_status_[i] != SKYCMD_OK) slot_msg_[i] = skycmd_strerror(slot_status_[i]);
            }
            skycmd_string_free(msgs[i]);
            skycmd_request_free(reqs[i]);
        }
    }

    Napi::Promise::Deferred deferred_;
    Napi::ObjectReference model_ref_;
    skycmd_model *model_;
    std::vector<std::string> jsons_;
    bool batch_, each_;
    std::vector<int> slot_status_;
    std::vector<std::string> slot_msg_;
    std::vector<std::pair<int, int64_t> > opts_;
    std::vector<skycmd_response *> resps_;
    int status_ = SKYCMD_OK;
    std::string message_;
};

/* decideAsync(model, json, options?), decideBatchAsync(model, jsons[], options?) and
 * decideEachAsync(model, jsons[], options?). */
Napi::Value sky_decide_common(const Napi::CallbackInfo &info, SkyDecideMode mode) {
    Napi::Env env = info.Env();
    void *p = NULL;
    Napi::Promise::Deferred early = Napi::Promise::Deferred::New(env);
    bool batch = mode != SKY_DECIDE_ONE;
    bool second_ok = batch ? info.Length() >= 2 && info[1].IsArray() : info.Length() >= 2 && info[1].IsString();
    if (!second_ok || !info[0].IsObject() ||
        !SWIG_IsOK(SWIG_ConvertPtr(info[0], &p, SWIGTYPE_p_SkyModel, 0)) || !p) {
        early.Reject(Napi::TypeError::New(env, mode == SKY_DECIDE_EACH ? "decideEachAsync(model: SkyModel, json: string[], options?: number[])"
                                               : batch ? "decideBatchAsync(model: SkyModel, json: string[], options?: number[])"
                                                       : "decideAsync(model: SkyModel, json: string, options?: number[])").Value());
        return early.Promise();
    }
    SkyModel *box = (SkyModel *)p;
    if (!box->h) {
        early.Reject(sky_napi_error(env, SKYCMD_E_MISUSE, "model is closed").Value());
        return early.Promise();
    }
    std::vector<std::string> jsons;
    if (batch) {
        Napi::Array a = info[1].As<Napi::Array>();
        for (uint32_t i = 0; i < a.Length(); i++) {
            Napi::Value v = a.Get(i);
            if (!v.IsString()) {
                early.Reject(Napi::TypeError::New(env, "decide: every request must be a string").Value());
                return early.Promise();
            }
            jsons.push_back(v.As<Napi::String>().Utf8Value());
        }
    } else {
        jsons.push_back(info[1].As<Napi::String>().Utf8Value());
    }
    std::vector<std::pair<int, int64_t> > opts;
    if (info.Length() > 2 && info[2].IsArray()) {
        Napi::Array a = info[2].As<Napi::Array>();
        for (uint32_t i = 0; i + 1 < a.Length(); i += 2)
            opts.push_back(std::make_pair(a.Get(i).As<Napi::Number>().Int32Value(),
                                          a.Get(i + 1).As<Napi::Number>().Int64Value()));
    }
    SkyDecideWorker *w = new SkyDecideWorker(env, info[0].As<Napi::Object>(), box->h, jsons, mode, opts);
    Napi::Promise promise = w->Promise();
    w->Queue();
    return promise;
}

Napi::Value sky_decide_async(const Napi::CallbackInfo &info) { return sky_decide_common(info, SKY_DECIDE_ONE); }
Napi::Value sky_decide_batch_async(const Napi::CallbackInfo &info) { return sky_decide_common(info, SKY_DECIDE_BATCH); }
Napi::Value sky_decide_each_async(const Napi::CallbackInfo &info) { return sky_decide_common(info, SKY_DECIDE_EACH); }

} // namespace
%}
%init %{
  exports.Set("decideAsync", Napi::Function::New(env, sky_decide_async, "decideAsync"));
  exports.Set("decideBatchAsync", Napi::Function::New(env, sky_decide_batch_async, "decideBatchAsync"));
  exports.Set("decideEachAsync", Napi::Function::New(env, sky_decide_each_async, "decideEachAsync"));
  exports.Set("fileAsync", Napi::Function::New(env, sky_file_async, "fileAsync"));
  exports.Set("openModelAsync", Napi::Function::New(env, sky_open_model_async, "openModelAsync"));
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
typedef struct SkyTokenizer {} SkyTokenizer;
typedef struct SkySession {} SkySession;
typedef struct SkyBatch {} SkyBatch;
typedef struct SkyResponse {} SkyResponse;

/* The bytes of a model opened from memory (skyOpenModelBuffer): a Go string (any
 * bytes; []byte converts without a copy through unsafe.String), a Java byte[], a Node
 * Buffer/Uint8Array. The box copies them, so the caller's buffer may go away at once. */
#ifdef SWIGGO
%apply (const char *STRING, size_t LENGTH) { (const char *gguf_data, size_t gguf_size) };
#endif
#ifdef SWIGJAVA
%apply (const char *STRING, size_t LENGTH) { (const char *gguf_data, size_t gguf_size) };
%typemap(jstype) (const char *gguf_data, size_t gguf_size) "byte[]"
%typemap(javain) (const char *gguf_data, size_t gguf_size) "$javainput"
#endif
#ifdef SWIGJAVASCRIPT
%typemap(in) (const char *gguf_data, size_t gguf_size) {
  if (!$input.IsTypedArray() || $input.As<Napi::TypedArray>().TypedArrayType() != napi_uint8_array) {
    SWIG_exception_fail(SWIG_TypeError, "in method '$symname', the model bytes must be a Buffer or Uint8Array");
  }
  Napi::Uint8Array bytes = $input.As<Napi::Uint8Array>();
  /* An empty buffer may have no data pointer: give the library a valid empty one, so it
   * reports what the other bindings report ("not a GGUF file: only 0 bytes"). */
  $1 = ($1_ltype)(bytes.Data() ? (void *)bytes.Data() : (void *)"");
  $2 = bytes.ByteLength();
}
%typemap(typecheck, precedence=SWIG_TYPECHECK_VOIDPTR) (const char *gguf_data, size_t gguf_size) {
  $1 = $input.IsTypedArray();
}
#endif

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
        if (o && o->h) skycmd_options_set_progress(o->h, sky_options_progress, o);
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
    /* Ask the running (or next) convert/quantize that uses these options to stop: it fails
     * with SKYCMD_E_CANCELLED at its next progress report and leaves no output. Any thread;
     * the flag stays raised. */
    void cancel() { __atomic_store_n(&$self->cancel, 1, __ATOMIC_RELEASE); }
    bool cancelled() { return __atomic_load_n(&$self->cancel, __ATOMIC_ACQUIRE) != 0; }
    /* The last progress report (done of total, in the call's units: bytes or tensors) and
     * how many reports there were; 0 before the first. Any thread. */
    long long progressDone() { return (long long)__atomic_load_n(&$self->done, __ATOMIC_RELAXED); }
    long long progressTotal() { return (long long)__atomic_load_n(&$self->total, __ATOMIC_RELAXED); }
    long long progressCalls() { return (long long)__atomic_load_n(&$self->calls, __ATOMIC_ACQUIRE); }
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
    /* The OS errno behind the last failure (skycmd_error_errno: ENOENT for a missing
     * file), 0 when there is none or the last call succeeded. */
    int osError() {
        return $self->status != SKYCMD_OK && $self->err ? skycmd_error_errno($self->err) : 0;
    }
    /* Whether the last call failed because a file does not exist (errno ENOENT): the
     * language's "not found" error, for languages that do not read errno values. */
    bool fileNotFound() {
        return $self->status != SKYCMD_OK && $self->err && skycmd_error_errno($self->err) == ENOENT;
    }
    /* Find the built-in model (skycmd_default_model_path); its path through takeOutput(). */
    int defaultModelPath() {
        skycmd_string_free($self->output);
        $self->output = NULL;
        return sky_call_done($self, skycmd_default_model_path(&$self->output, $self->err));
    }
    int checkVersion(unsigned int header_version_number) {
        return sky_call_done($self, skycmd_check_version(header_version_number, $self->err));
    }
    int inspect(const char *path, SkyOptions *opts) {
        skycmd_string_free($self->output);
        $self->output = NULL;
        return sky_call_done($self, skycmd_inspect(path, opts ? opts->h : NULL, &$self->output, $self->err));
    }
    /* The text of the last inspect (or defaultModelPath), handed over (the box forgets it). */
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

/* Open a model from GGUF bytes through a SkyCall (status and message stay in it) into an
 * empty SkyModel box, which keeps its own copy of the bytes for the model's lifetime (the C
 * model reads the buffer and never copies it). A function, not a SkyCall method, because
 * SWIG applies the (bytes, length) typemaps of each language to functions only. */
%inline %{
int skyOpenModelBuffer(SkyCall *call, const char *gguf_data, size_t gguf_size, SkyOptions *opts,
                       SkyModel *into) {
    void *copy;
    int st;
    if (!call) return SKYCMD_E_MISUSE;
    if (!into || into->h || !gguf_data) {
        skycmd_error_clear(call->err);
        return sky_call_done(call, !gguf_data ? SKYCMD_E_INVALID_ARGUMENT : SKYCMD_E_MISUSE);
    }
    copy = malloc(gguf_size ? gguf_size : 1);
    if (!copy) {
        skycmd_error_clear(call->err);
        return sky_call_done(call, SKYCMD_E_NOMEM);
    }
    memcpy(copy, gguf_data, gguf_size);
    st = skycmd_model_open_buffer(copy, gguf_size, opts ? opts->h : NULL, &into->h, call->err);
    if (st == SKYCMD_OK) into->bytes = copy;
    else free(copy);
    return sky_call_done(call, st);
}
%}

%extend SkyModel {
    SkyModel() { return (SkyModel *)calloc(1, sizeof(SkyModel)); }
    ~SkyModel() {
        /* A box collected with live sessions or borrowed tokenizers cannot free the model
         * (BUSY); the language layers keep the model reachable from its sessions and
         * tokenizers. */
        if ($self->h && sky_model_release($self) != SKYCMD_OK) return;
        free($self);
    }
    bool isOpen() { return $self->h != NULL; }
    /* SKYCMD_E_BUSY (nothing freed) while sessions or borrowed tokenizer boxes exist;
     * closing twice is OK. */
    int close() { return sky_model_release($self); }
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
    /* Answer every request of a batch together (skycmd_decide_batch); all or nothing, the
     * failing request named in this session's message. Responses: SkyBatch.takeResponse. */
    int decideBatch(SkyBatch *batch) {
        int st;
        if (!$self->h) { sky_session_setmsg($self, sky_closed_msg); return SKYCMD_E_MISUSE; }
        if (!batch || batch->out) {
            sky_session_setmsg($self, "batch is missing or already answered");
            return SKYCMD_E_MISUSE;
        }
        batch->out = (skycmd_response **)calloc(batch->n ? batch->n : 1, sizeof *batch->out);
        if (!batch->out) { sky_session_setmsg($self, skycmd_strerror(SKYCMD_E_NOMEM)); return SKYCMD_E_NOMEM; }
        st = skycmd_decide_batch($self->h, (const skycmd_request *const *)batch->reqs, batch->n, batch->out);
        sky_session_setmsg($self, st == SKYCMD_OK ? "" : skycmd_session_errmsg($self->h));
        if (st != SKYCMD_OK) sky_batch_free_responses(batch);
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
    /* The name of the model that answered (the wire's "model"). */
    const char *model() {
        const char *s = $self->h ? skycmd_response_model($self->h) : NULL;
        return s ? s : "";
    }
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
    /* False where the answer has no confidence (noul: the wire has none) or i is invalid. */
    bool answerHasConfidence(long long i) {
        return $self->h && i >= 0 && !isnan(skycmd_response_answer_confidence($self->h, (size_t)i));
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
    /* Score answers: the legend text of level j; "" for other answers or out of range. */
    const char *optionLegend(long long i, long long j) {
        const char *s = ($self->h && i >= 0 && j >= 0)
                            ? skycmd_response_option_legend($self->h, (size_t)i, (size_t)j) : NULL;
        return s ? s : "";
    }
}

%extend SkyTokenizer {
    SkyTokenizer() { return (SkyTokenizer *)calloc(1, sizeof(SkyTokenizer)); }
    ~SkyTokenizer() {
        sky_tokenizer_release($self);
        free($self->ids);
        free($self->text);
        free($self->msg);
        free($self);
    }
    /* Borrow the tokenizer of an open model into this empty box; the model refuses to close
     * (BUSY) until this box is closed. */
    int fromModel(SkyModel *model) {
        if ($self->h) { sky_setmsg(&$self->msg, "tokenizer box is already open"); return SKYCMD_E_MISUSE; }
        if (!model || !model->h) { sky_setmsg(&$self->msg, "model is closed"); return SKYCMD_E_MISUSE; }
        $self->h = skycmd_model_tokenizer(model->h);
        if (!$self->h) { sky_setmsg(&$self->msg, "the model has no tokenizer"); return SKYCMD_E_NOT_FOUND; }
        __atomic_add_fetch(&model->borrowers, 1, __ATOMIC_ACQ_REL);
        $self->model = model;
        sky_setmsg(&$self->msg, "");
        return SKYCMD_OK;
    }
    /* Load a Hugging Face tokenizer.json (byte-level BPE) into this empty box. */
    int openJson(const char *path) {
        skycmd_error *err;
        int st;
        if ($self->h) { sky_setmsg(&$self->msg, "tokenizer box is already open"); return SKYCMD_E_MISUSE; }
        err = skycmd_error_new();
        st = skycmd_tokenizer_open_json(path, &$self->owned, err);
        $self->h = $self->owned;
        sky_setmsg(&$self->msg, err ? skycmd_error_message(err) : skycmd_strerror(st));
        $self->os_error = st != SKYCMD_OK && err ? skycmd_error_errno(err) : 0;
        skycmd_error_free(err);
        return st;
    }
    /* The OS errno behind the last failed openJson (skycmd_error_errno: ENOENT for a
     * missing file), 0 when there is none; fileNotFound() says ENOENT, as SkyCall's. */
    int osError() { return $self->os_error; }
    bool fileNotFound() { return $self->os_error == ENOENT; }
    bool isOpen() { return $self->h != NULL; }
    /* Frees a loaded tokenizer or returns a borrowed one to its model; twice is OK. */
    void close() { sky_tokenizer_release($self); }
    const char *message() { return $self->msg ? $self->msg : ""; }
    /* Encode UTF-8 text (up to its first NUL) as HF tokenizers does without special tokens;
     * the ids replace the box's id list (tokenCount(), tokenId(i)). */
    int encode(const char *text) {
        size_t n = 0;
        int st;
        if (!$self->h) { sky_setmsg(&$self->msg, sky_closed_msg); return SKYCMD_E_MISUSE; }
        if (!text) { sky_setmsg(&$self->msg, "text is NULL"); return SKYCMD_E_INVALID_ARGUMENT; }
        st = skycmd_tokenizer_encode($self->h, text, strlen(text), $self->ids, $self->cap_ids, &n);
        if (st == SKYCMD_OK && n > $self->cap_ids) {
            int32_t *grown = (int32_t *)realloc($self->ids, n * sizeof *grown);
            if (!grown) { sky_setmsg(&$self->msg, skycmd_strerror(SKYCMD_E_NOMEM)); return SKYCMD_E_NOMEM; }
            $self->ids = grown;
            $self->cap_ids = n;
            st = skycmd_tokenizer_encode($self->h, text, strlen(text), $self->ids, $self->cap_ids, &n);
        }
        $self->n_ids = st == SKYCMD_OK ? n : 0;
        $self->count = $self->n_ids;
        sky_setmsg(&$self->msg, st == SKYCMD_OK ? "" : skycmd_strerror(st));
        return st;
    }
    /* Count the tokens of text without keeping them (tokenCount()); the id list is kept. */
    int count(const char *text) {
        size_t n = 0;
        int st;
        if (!$self->h) { sky_setmsg(&$self->msg, sky_closed_msg); return SKYCMD_E_MISUSE; }
        if (!text) { sky_setmsg(&$self->msg, "text is NULL"); return SKYCMD_E_INVALID_ARGUMENT; }
        st = skycmd_tokenizer_encode($self->h, text, strlen(text), NULL, 0, &n);
        $self->count = st == SKYCMD_OK ? n : 0;
        sky_setmsg(&$self->msg, st == SKYCMD_OK ? "" : skycmd_strerror(st));
        return st;
    }
    /* Tokens found by the last encode() or count(). */
    long long tokenCount() { return (long long)$self->count; }
    /* The id list (encode() output, decode() input). */
    long long idCount() { return (long long)$self->n_ids; }
    /* Id i of the list, or -1 out of range. */
    int tokenId(long long i) {
        return (i >= 0 && (size_t)i < $self->n_ids) ? $self->ids[i] : -1;
    }
    void clearIds() { $self->n_ids = 0; }
    int appendId(int id) {
        if ($self->n_ids == $self->cap_ids) {
            size_t cap = $self->cap_ids ? 2 * $self->cap_ids : 64;
            int32_t *grown = (int32_t *)realloc($self->ids, cap * sizeof *grown);
            if (!grown) { sky_setmsg(&$self->msg, skycmd_strerror(SKYCMD_E_NOMEM)); return SKYCMD_E_NOMEM; }
            $self->ids = grown;
            $self->cap_ids = cap;
        }
        $self->ids[$self->n_ids++] = (int32_t)id;
        return SKYCMD_OK;
    }
    /* Decode the id list to UTF-8 (decodedText()). */
    int decode() {
        char *out = NULL;
        int st;
        if (!$self->h) { sky_setmsg(&$self->msg, sky_closed_msg); return SKYCMD_E_MISUSE; }
        st = skycmd_tokenizer_decode($self->h, $self->ids, $self->n_ids, &out);
        free($self->text);
        $self->text = NULL;
        if (st == SKYCMD_OK && out) {
            size_t n = strlen(out);
            $self->text = (char *)malloc(n + 1);
            if ($self->text) memcpy($self->text, out, n + 1);
            else st = SKYCMD_E_NOMEM;
        }
        skycmd_string_free(out);
        sky_setmsg(&$self->msg, st == SKYCMD_OK ? "" : skycmd_strerror(st));
        return st;
    }
    const char *decodedText() { return $self->text ? $self->text : ""; }
    /* The vocabulary entry of an id (byte-level form, e.g. "Ġthe"); "" out of range. */
    const char *token(int id) {
        const char *t = $self->h ? skycmd_tokenizer_token($self->h, (int32_t)id) : NULL;
        return t ? t : "";
    }
    /* 0 when closed. */
    long long vocabSize() { return $self->h ? (long long)skycmd_tokenizer_vocab_size($self->h) : 0; }
    /* The id of a special token (SKYCMD_SPECIAL_*), -1 if none (or closed). */
    int specialId(int which) { return $self->h ? skycmd_tokenizer_special_id($self->h, which) : -1; }
}

%extend SkyBatch {
    SkyBatch() { return (SkyBatch *)calloc(1, sizeof(SkyBatch)); }
    ~SkyBatch() {
        size_t i;
        sky_batch_free_responses($self);
        for (i = 0; i < $self->n; i++) skycmd_request_free($self->reqs[i]);
        free($self->reqs);
        free($self->msg);
        free($self);
    }
    /* Parse one more request; a parse error names it ("request 2: ...") in message(). */
    int add(const char *request_json) {
        skycmd_request *req = NULL;
        int st;
        char head[32];
        if ($self->out) { sky_setmsg(&$self->msg, "the batch was already answered"); return SKYCMD_E_MISUSE; }
        if (!request_json) { sky_setmsg(&$self->msg, "request is NULL"); return SKYCMD_E_INVALID_ARGUMENT; }
        if ($self->n == $self->cap) {
            size_t cap = $self->cap ? 2 * $self->cap : 8;
            skycmd_request **grown = (skycmd_request **)realloc($self->reqs, cap * sizeof *grown);
            if (!grown) { sky_setmsg(&$self->msg, skycmd_strerror(SKYCMD_E_NOMEM)); return SKYCMD_E_NOMEM; }
            $self->reqs = grown;
            $self->cap = cap;
        }
        st = skycmd_request_parse(request_json, strlen(request_json), &req);
        if (st != SKYCMD_OK) {
            const char *m = req ? skycmd_request_errmsg(req) : skycmd_strerror(st);
            char *full = (char *)malloc(sizeof head + strlen(m));
            snprintf(head, sizeof head, "request %lu: ", (unsigned long)$self->n);
            if (full) { strcpy(full, head); strcat(full, m); }
            sky_setmsg(&$self->msg, full ? full : m);
            free(full);
            skycmd_request_free(req);
            return st;
        }
        $self->reqs[$self->n++] = req;
        sky_setmsg(&$self->msg, "");
        return SKYCMD_OK;
    }
    long long count() { return (long long)$self->n; }
    bool answered() { return $self->out != NULL; }
    /* Move the response of request i into an empty SkyResponse box (once per i). */
    int takeResponse(long long i, SkyResponse *into) {
        if (!$self->out || i < 0 || (size_t)i >= $self->n || !$self->out[i]) {
            sky_setmsg(&$self->msg, "no such response (not answered, out of range or taken)");
            return SKYCMD_E_MISUSE;
        }
        if (!into || into->h) { sky_setmsg(&$self->msg, "response box is missing or already used"); return SKYCMD_E_MISUSE; }
        into->h = $self->out[i];
        $self->out[i] = NULL;
        return SKYCMD_OK;
    }
    const char *message() { return $self->msg ? $self->msg : ""; }
}

#if defined(SWIGGO) || defined(SWIGJAVA)
/* SkyEach - Go and Java only: one group of a streaming batch (Model.DecideEach in Go,
 * Model.decideEach in Java), answered by ONE skycmd_decide_each call, each request on its own
 * account. add() parses a request into the next slot; a request that does not parse keeps its
 * slot and gets its parse status and message there. decide() answers every slot; then
 * slotStatus(i), slotMessage(i) and takeResponse(i) give each slot's outcome, and clear()
 * empties the box for the next group. (Node answers its stream off the event loop in its own
 * worker, so this box is kept out of the Node wrapper.) */
%{
typedef struct SkyEach {
    skycmd_request **reqs;     /* parsed, failed-to-parse (they carry their error) or NULL */
    int *parse_status;         /* add()'s status of each slot */
    skycmd_response **out;     /* filled by decide(), taken by takeResponse */
    int *status;
    char **errmsg;             /* the library's copies (skycmd_string_free) */
    size_t n, cap;
    int answered;
    char *msg;                 /* what failed the whole call (decide's error), or NULL */
} SkyEach;

static void sky_each_clear(SkyEach *e) {
    size_t i;
    for (i = 0; i < e->n; i++) {
        skycmd_request_free(e->reqs[i]);
        skycmd_response_free(e->out[i]);
        skycmd_string_free(e->errmsg[i]);
        e->reqs[i] = NULL;
        e->out[i] = NULL;
        e->errmsg[i] = NULL;
    }
    e->n = 0;
    e->answered = 0;
    sky_setmsg(&e->msg, NULL);
}

/* Room for twice as many slots (32 at first); 0 when out of memory (nothing is lost). */
static int sky_each_grow(SkyEach *e) {
    size_t cap = e->cap ? 2 * e->cap : 32, i;
    void *p;
    if (!(p = realloc(e->reqs, cap * sizeof *e->reqs))) return 0;
    e->reqs = (skycmd_request **)p;
    if (!(p = realloc(e->parse_status, cap * sizeof *e->parse_status))) return 0;
    e->parse_status = (int *)p;
    if (!(p = realloc(e->out, cap * sizeof *e->out))) return 0;
    e->out = (skycmd_response **)p;
    if (!(p = realloc(e->status, cap * sizeof *e->status))) return 0;
    e->status = (int *)p;
    if (!(p = realloc(e->errmsg, cap * sizeof *e->errmsg))) return 0;
    e->errmsg = (char **)p;
    for (i = e->cap; i < cap; i++) {
        e->reqs[i] = NULL;
        e->out[i] = NULL;
        e->errmsg[i] = NULL;
    }
    e->cap = cap;
    return 1;
}
%}

typedef struct SkyEach {} SkyEach;

%extend SkyEach {
    SkyEach() { return (SkyEach *)calloc(1, sizeof(SkyEach)); }
    ~SkyEach() {
        sky_each_clear($self);
        free($self->reqs);
        free($self->parse_status);
        free($self->out);
        free($self->status);
        free($self->errmsg);
        free($self->msg);
        free($self);
    }
    /* Put a request (JSON text; NULL is that slot's SKYCMD_E_INVALID_ARGUMENT) in the next
     * slot. Returns SKYCMD_OK when the slot was taken, whether or not the request parses
     * (its parse error is the slot's outcome); an error (no slot) only when out of memory or
     * the group was answered and not cleared. */
    int add(const char *request_json) {
        skycmd_request *req = NULL;
        int st;
        if ($self->answered) { sky_setmsg(&$self->msg, "the group was answered; clear() it first"); return SKYCMD_E_MISUSE; }
        if ($self->n == $self->cap && !sky_each_grow($self)) {
            sky_setmsg(&$self->msg, skycmd_strerror(SKYCMD_E_NOMEM));
            return SKYCMD_E_NOMEM;
        }
        st = request_json ? skycmd_request_parse(request_json, strlen(request_json), &req)
                          : SKYCMD_E_INVALID_ARGUMENT;
        $self->reqs[$self->n] = req;
        $self->parse_status[$self->n] = st;
        $self->status[$self->n] = st;
        $self->n++;
        return SKYCMD_OK;
    }
    long long count() { return (long long)$self->n; }
    /* Answer every slot with one skycmd_decide_each call on the session. An error here
     * (closed session, out of memory) is the whole group's, in message(); SKYCMD_OK means
     * every slot holds its own outcome. */
    int decide(SkySession *session) {
        size_t i;
        int st;
        if (!session || !session->h) { sky_setmsg(&$self->msg, sky_closed_msg); return SKYCMD_E_MISUSE; }
        if ($self->answered) { sky_setmsg(&$self->msg, "the group was already answered"); return SKYCMD_E_MISUSE; }
        st = skycmd_decide_each(session->h, (const skycmd_request *const *)$self->reqs, $self->n,
                                $self->out, $self->status, $self->errmsg);
        if (st != SKYCMD_OK) {
            sky_setmsg(&$self->msg, skycmd_session_errmsg(session->h));
            return st;
        }
        /* A request the parser could not even make (NULL: no memory, or no JSON text) keeps
         * add()'s status rather than decide_each's "the request is NULL". */
        for (i = 0; i < $self->n; i++) {
            if (!$self->reqs[i] && $self->parse_status[i] != SKYCMD_OK) {
                $self->status[i] = $self->parse_status[i];
                skycmd_string_free($self->errmsg[i]);
                $self->errmsg[i] = NULL;
            }
        }
        $self->answered = 1;
        sky_setmsg(&$self->msg, NULL);
        return SKYCMD_OK;
    }
    /* Slot i's outcome after decide(): SKYCMD_OK or its error (SKYCMD_E_MISUSE out of range). */
    int slotStatus(long long i) {
        if (!$self->answered || i < 0 || (size_t)i >= $self->n) return SKYCMD_E_MISUSE;
        return $self->status[i];
    }
    /* Slot i's message ("" on success). */
    const char *slotMessage(long long i) {
        if (!$self->answered || i < 0 || (size_t)i >= $self->n) return "no such slot";
        if ($self->status[i] == SKYCMD_OK) return "";
        if (!$self->reqs[i] && $self->parse_status[i] == SKYCMD_E_INVALID_ARGUMENT) return "the request is NULL";
        return $self->errmsg[i] ? $self->errmsg[i] : skycmd_strerror($self->status[i]);
    }
    /* Move slot i's response into an empty SkyResponse box (once per slot). */
    int takeResponse(long long i, SkyResponse *into) {
        if (!$self->answered || i < 0 || (size_t)i >= $self->n || !$self->out[i]) {
            sky_setmsg(&$self->msg, "no such response (not answered, failed, out of range or taken)");
            return SKYCMD_E_MISUSE;
        }
        if (!into || into->h) { sky_setmsg(&$self->msg, "response box is missing or already used"); return SKYCMD_E_MISUSE; }
        into->h = $self->out[i];
        $self->out[i] = NULL;
        return SKYCMD_OK;
    }
    /* Free the group's requests, responses and messages; the box takes a new group. */
    void clear() { sky_each_clear($self); }
    const char *message() { return $self->msg ? $self->msg : ""; }
}
#endif
