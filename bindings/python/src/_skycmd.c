/*
 * _skycmd.c - the CPython extension under the `skycmd` package, written against the C API by
 * hand (no SWIG, no ctypes/cffi: the C ABI is libffi-free by design).
 *
 * This layer is thin on purpose: it owns the C handles, releases the GIL around compute and
 * turns (status, message) into the package's exceptions. The Python package (skycmd/) gives
 * the typed API on top: options by name, Response/Answer objects, request builders.
 *
 * Thread model. Every field of a Model is read and written with the GIL held, so the GIL is
 * the pool's lock. A call takes an idle C session (or makes one), counts itself in `active`,
 * releases the GIL for the compute, takes the GIL back and returns the session. close() only
 * marks the model closed: the C model is freed when the last running call has returned its
 * session (skycmd_model_free would refuse with E_BUSY while sessions exist). A tokenizer
 * borrowed from a model keeps the Python model object alive and checks that it is open.
 *
 * Errors. The package registers a factory (status, message, errno) -> exception instance
 * through _set_error_factory() (errno: skycmd_error_errno of a handle-less call, else 0; the
 * package makes ENOENT a FileNotFoundError); every failure raised here goes through it, so
 * skycmd.Error and its
 * subclasses are the only exceptions the C calls raise (besides TypeError/ValueError for
 * arguments of the wrong Python type).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "skycmd.h"

/* ------------------------------------------------------------------ errors -------- */

static PyObject *error_factory; /* callable(status, message, errno) -> exception instance */

/* A library message as a str. Messages name files, and a file name need not be UTF-8: its
 * bytes are kept as lone surrogates (surrogateescape, as os.fsdecode), so os.fsencode(message)
 * gives them back and the decoding never fails. */
static PyObject *message_str(const char *message) {
    if (!message) message = "";
    return PyUnicode_DecodeUTF8(message, (Py_ssize_t)strlen(message), "surrogateescape");
}

/* factory(status, message, errno), the message decoded by message_str. */
static PyObject *call_error_factory(int status, const char *message, int sys_errno) {
    PyObject *msg = message_str(message);
    if (!msg) return NULL;
    PyObject *exc = PyObject_CallFunction(error_factory, "iOi", status, msg, sys_errno);
    Py_DECREF(msg);
    return exc;
}

/* Raises the package exception for (status, message, errno); returns NULL for `return
 * raise(...)`. `cause` (a reference that is stolen, may be NULL) becomes the exception's
 * __cause__. */
static PyObject *raise_status_errno(int status, const char *message, int sys_errno, PyObject *cause) {
    if (!message || !*message) message = skycmd_strerror(status);
    if (!error_factory) {
        PyErr_Format(PyExc_RuntimeError, "%s: %s", skycmd_status_name(status), message);
        Py_XDECREF(cause);
        return NULL;
    }
    PyObject *exc = call_error_factory(status, message, sys_errno);
    if (!exc) {
        Py_XDECREF(cause);
        return NULL;
    }
    if (cause) PyException_SetCause(exc, cause);
    PyErr_SetObject((PyObject *)Py_TYPE(exc), exc);
    Py_DECREF(exc);
    return NULL;
}

/* The package exception for (status, message) as a new instance, not raised (a streamed
 * item's error); NULL with an exception if the factory failed. */
static PyObject *error_instance(int status, const char *message) {
    if (!message || !*message) message = skycmd_strerror(status);
    if (!error_factory) {
        PyObject *msg = message_str(message);
        PyObject *exc = msg ? PyObject_CallOneArg(PyExc_RuntimeError, msg) : NULL;
        Py_XDECREF(msg);
        return exc;
    }
    return call_error_factory(status, message, 0);
}

static PyObject *raise_status_cause(int status, const char *message, PyObject *cause) {
    return raise_status_errno(status, message, 0, cause);
}

static PyObject *raise_status(int status, const char *message) {
    return raise_status_cause(status, message, NULL);
}

/* The error of a handle-less call, taken from its skycmd_error (message and errno). */
static PyObject *raise_call_error(int status, const skycmd_error *err) {
    return raise_status_errno(status, err ? skycmd_error_message(err) : NULL,
                              err ? skycmd_error_errno(err) : 0, NULL);
}

/* ------------------------------------------------------------------ options ------- */

/* Callbacks of one call: progress(done, total) and log(level, message). The C library calls
 * the trampolines on a thread that does not hold the GIL. A Python exception in either
 * callable (or a progress return value of exactly False) cancels the call; the exception is
 * kept and becomes the __cause__ of the CancelledError raised (or is raised itself when the
 * call could not be cancelled: log messages of an open).
 * An exception that is not an Exception (KeyboardInterrupt, SystemExit, GeneratorExit) is
 * never wrapped: the call is cancelled at its next progress report (with a log callable and
 * no progress one, a progress trampoline is installed for this alone) and the very exception
 * object is raised again, so `except Exception` does not swallow Ctrl-C or sys.exit(). */
typedef struct callback_state {
    PyObject *progress; /* borrowed from the call's arguments; NULL when none */
    PyObject *log;      /* likewise */
    PyObject *raised;   /* the exception a callable raised (owned) */
} callback_state;

/* Keeps the exception being raised (GIL held). */
static void keep_raised(callback_state *c) {
#if PY_VERSION_HEX >= 0x030C0000
    c->raised = PyErr_GetRaisedException();
#else
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    PyErr_NormalizeException(&type, &value, &tb);
    if (value && tb) PyException_SetTraceback(value, tb);
    Py_XDECREF(type);
    Py_XDECREF(tb);
    c->raised = value;
#endif
}

/* True for a kept exception that must propagate as it is: a BaseException that is not an
 * Exception (GIL held). */
static int is_base_only(PyObject *e) {
    return e && !PyObject_TypeCheck(e, (PyTypeObject *)PyExc_Exception);
}

static int progress_trampoline(void *user_data, uint64_t done, uint64_t total) {
    callback_state *c = user_data;
    PyGILState_STATE gil = PyGILState_Ensure();
    int cancel = 1;
    if (!c->progress) {
        /* installed for the log callable only: stop for KeyboardInterrupt/SystemExit */
        cancel = is_base_only(c->raised);
    } else if (!c->raised) {
        PyObject *r = PyObject_CallFunction(c->progress, "KK", (unsigned long long)done,
                                            (unsigned long long)total);
        if (!r) {
            keep_raised(c);
        } else {
            cancel = (r == Py_False);
            Py_DECREF(r);
        }
    }
    PyGILState_Release(gil);
    return cancel;
}

static void log_trampoline(void *user_data, int level, const char *message) {
    callback_state *c = user_data;
    PyGILState_STATE gil = PyGILState_Ensure();
    if (!c->raised) {
        PyObject *msg = message_str(message);
        PyObject *r = msg ? PyObject_CallFunction(c->log, "iO", level, msg) : NULL;
        Py_XDECREF(msg);
        if (!r)
            keep_raised(c);
        else
            Py_DECREF(r);
    }
    PyGILState_Release(gil);
}

/* Raises the exception a callback raised (GIL held); returns NULL. */
static PyObject *raise_kept(callback_state *c) {
    PyObject *e = c->raised;
    c->raised = NULL;
    PyErr_SetObject((PyObject *)Py_TYPE(e), e);
    Py_DECREF(e);
    return NULL;
}

/* Fills a skycmd_options from a sequence of (key, value) pairs, value int or str. */
static int fill_options(skycmd_options *opts, PyObject *pairs) {
    if (!pairs || pairs == Py_None) return 0;
    PyObject *seq = PySequence_Fast(pairs, "options must be a sequence of (key, value) pairs");
    if (!seq) return -1;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *pair = PySequence_Fast_GET_ITEM(seq, i);
        int key;
        PyObject *value;
        if (!PyArg_ParseTuple(pair, "iO;an option is a (key, value) pair", &key, &value)) {
            Py_DECREF(seq);
            return -1;
        }
        int rc;
        if (PyUnicode_Check(value)) {
            Py_ssize_t len = 0;
            const char *s = PyUnicode_AsUTF8AndSize(value, &len);
            if (!s) {
                Py_DECREF(seq);
                return -1;
            }
            if (strlen(s) != (size_t)len) { /* the C string would end at the NUL: refuse */
                PyErr_Format(PyExc_ValueError, "option %d: a string must not contain a NUL "
                             "character", key);
                Py_DECREF(seq);
                return -1;
            }
            rc = skycmd_options_set_string(opts, key, s);
        } else {
            long long v = PyLong_AsLongLong(value);
            if (v == -1 && PyErr_Occurred()) {
                Py_DECREF(seq);
                return -1;
            }
            rc = skycmd_options_set_int(opts, key, (int64_t)v);
        }
        if (rc != SKYCMD_OK) {
            char msg[96];
            snprintf(msg, sizeof msg, "option %d: value out of range or of the wrong kind", key);
            Py_DECREF(seq);
            raise_status(rc, msg);
            return -1;
        }
    }
    Py_DECREF(seq);
    return 0;
}

/* A new skycmd_options from pairs and the callables of `callbacks` (may be NULL); NULL with
 * an exception. */
static skycmd_options *make_options(PyObject *pairs, callback_state *callbacks) {
    if (callbacks) {
        if (callbacks->progress == Py_None) callbacks->progress = NULL;
        if (callbacks->log == Py_None) callbacks->log = NULL;
        if ((callbacks->progress && !PyCallable_Check(callbacks->progress)) ||
            (callbacks->log && !PyCallable_Check(callbacks->log))) {
            PyErr_SetString(PyExc_TypeError, "progress and log must be callable");
            return NULL;
        }
    }
    skycmd_options *opts = skycmd_options_new();
    if (!opts) {
        PyErr_NoMemory();
        return NULL;
    }
    if (fill_options(opts, pairs) < 0) {
        skycmd_options_free(opts);
        return NULL;
    }
    /* With a log callable alone the trampoline only checks for a KeyboardInterrupt or
     * SystemExit the log raised (progress_trampoline). */
    if (callbacks && (callbacks->progress || callbacks->log))
        skycmd_options_set_progress(opts, progress_trampoline, callbacks);
    if (callbacks && callbacks->log) skycmd_options_set_log(opts, log_trampoline, callbacks);
    return opts;
}

/* ------------------------------------------------------------------ model --------- */

#define MAX_SESSION_OPTIONS 8

static Py_ssize_t live_models; /* C models open now (for the leak tests) */

typedef struct ModelObject {
    PyObject_HEAD
    skycmd_model *model;           /* NULL once freed */
    int closed;                    /* no new calls once set */
    Py_ssize_t active;             /* calls holding a session or the model */
    skycmd_session **idle;         /* the pool of idle sessions */
    Py_ssize_t n_idle, cap_idle;
    int session_keys[MAX_SESSION_OPTIONS];
    int64_t session_values[MAX_SESSION_OPTIONS];
    int n_session_options;
    Py_buffer buffer; /* the bytes of open_buffer, held while the model lives */
    int has_buffer;
} ModelObject;

static PyTypeObject ModelType;

/* Frees the C model once it is closed and no call uses it. */
static void model_release_if_done(ModelObject *self) {
    if (!self->closed || self->active > 0) return;
    for (Py_ssize_t i = 0; i < self->n_idle; i++) skycmd_session_free(self->idle[i]);
    self->n_idle = 0;
    PyMem_Free(self->idle);
    self->idle = NULL;
    self->cap_idle = 0;
    if (self->model) {
        skycmd_model_free(self->model);
        self->model = NULL;
        live_models--;
    }
    if (self->has_buffer) {
        PyBuffer_Release(&self->buffer);
        self->has_buffer = 0;
    }
}

static int model_check_open(ModelObject *self) {
    if (self->closed || !self->model) {
        raise_status(SKYCMD_E_MISUSE, "the model is closed");
        return -1;
    }
    return 0;
}

/* Takes a session for one call (GIL held); NULL with an exception. */
static skycmd_session *model_take_session(ModelObject *self) {
    if (model_check_open(self) < 0) return NULL;
    skycmd_session *s;
    if (self->n_idle > 0) {
        s = self->idle[--self->n_idle];
    } else {
        int rc = skycmd_session_new(self->model, &s);
        if (rc != SKYCMD_OK) {
            raise_status(rc, "cannot make a session");
            return NULL;
        }
        for (int i = 0; i < self->n_session_options; i++) {
            rc = skycmd_session_set_int(s, self->session_keys[i], self->session_values[i]);
            if (rc != SKYCMD_OK) {
                raise_status(rc, skycmd_session_errmsg(s));
                skycmd_session_free(s);
                return NULL;
            }
        }
    }
    self->active++;
    return s;
}

/* Returns a session to the pool (GIL held); frees the model if it was closed meanwhile. */
static void model_give_session(ModelObject *self, skycmd_session *s) {
    if (self->n_idle == self->cap_idle) {
        Py_ssize_t cap = self->cap_idle ? 2 * self->cap_idle : 4;
        skycmd_session **grown = PyMem_Realloc(self->idle, (size_t)cap * sizeof *grown);
        if (!grown) {
            skycmd_session_free(s);
            s = NULL;
        } else {
            self->idle = grown;
            self->cap_idle = cap;
        }
    }
    if (s) self->idle[self->n_idle++] = s;
    self->active--;
    model_release_if_done(self);
}

static int set_session_options(ModelObject *self, PyObject *pairs) {
    if (!pairs || pairs == Py_None) return 0;
    PyObject *seq = PySequence_Fast(pairs, "session options must be a sequence of pairs");
    if (!seq) return -1;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    if (n > MAX_SESSION_OPTIONS) {
        Py_DECREF(seq);
        PyErr_SetString(PyExc_ValueError, "too many session options");
        return -1;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        int key;
        long long value;
        if (!PyArg_ParseTuple(PySequence_Fast_GET_ITEM(seq, i), "iL", &key, &value)) {
            Py_DECREF(seq);
            return -1;
        }
        self->session_keys[i] = key;
        self->session_values[i] = (int64_t)value;
    }
    self->n_session_options = (int)n;
    Py_DECREF(seq);
    return 0;
}

/* The shared end of open() and open_buffer(). */
static PyObject *model_open_common(PyObject *path_bytes, PyObject *buffer_owner,
                                   PyObject *options, PyObject *session_options,
                                   PyObject *log) {
    callback_state callbacks = {NULL, log, NULL};
    ModelObject *self = PyObject_New(ModelObject, &ModelType);
    if (!self) return NULL;
    self->model = NULL;
    self->closed = 0;
    self->active = 0;
    self->idle = NULL;
    self->n_idle = self->cap_idle = 0;
    self->n_session_options = 0;
    self->has_buffer = 0;
    if (set_session_options(self, session_options) < 0) goto fail;
    if (buffer_owner) {
        if (PyObject_GetBuffer(buffer_owner, &self->buffer, PyBUF_SIMPLE) < 0) goto fail;
        self->has_buffer = 1;
    }
    skycmd_options *opts = make_options(options, &callbacks);
    if (!opts) goto fail;
    skycmd_error *err = skycmd_error_new();
    if (!err) {
        skycmd_options_free(opts);
        PyErr_NoMemory();
        goto fail;
    }
    skycmd_model *m = NULL;
    int rc;
    const char *path = path_bytes ? PyBytes_AS_STRING(path_bytes) : NULL;
    void *data = self->has_buffer ? self->buffer.buf : NULL;
    size_t size = self->has_buffer ? (size_t)self->buffer.len : 0;
    Py_BEGIN_ALLOW_THREADS
    if (path)
        rc = skycmd_model_open(path, opts, &m, err);
    else
        rc = skycmd_model_open_buffer(data, size, opts, &m, err);
    Py_END_ALLOW_THREADS
    skycmd_options_free(opts);
    if (rc != SKYCMD_OK) {
        if (is_base_only(callbacks.raised)) /* cancelled for a KeyboardInterrupt, ...: as is */
            raise_kept(&callbacks);
        else
            raise_call_error(rc, err);
        skycmd_error_free(err);
        goto fail;
    }
    skycmd_error_free(err);
    self->model = m;
    live_models++;
    if (callbacks.raised) { /* the log callable failed: its exception, and no model */
        raise_kept(&callbacks);
        goto fail;
    }
    return (PyObject *)self;
fail:
    Py_CLEAR(callbacks.raised);
    self->closed = 1;
    model_release_if_done(self);
    Py_DECREF(self);
    return NULL;
}

static PyObject *model_open(PyObject *cls, PyObject *args) {
    (void)cls;
    PyObject *path = NULL, *options = NULL, *session_options = NULL, *log = NULL;
    if (!PyArg_ParseTuple(args, "O&|OOO", PyUnicode_FSConverter, &path, &options,
                          &session_options, &log))
        return NULL;
    PyObject *r = model_open_common(path, NULL, options, session_options, log);
    Py_DECREF(path);
    return r;
}

static PyObject *model_open_buffer(PyObject *cls, PyObject *args) {
    (void)cls;
    PyObject *data, *options = NULL, *session_options = NULL, *log = NULL;
    if (!PyArg_ParseTuple(args, "O|OOO", &data, &options, &session_options, &log)) return NULL;
    return model_open_common(NULL, data, options, session_options, log);
}

static void model_dealloc(ModelObject *self) {
    /* A running call holds a reference, so nothing is active here. */
    self->closed = 1;
    model_release_if_done(self);
    PyObject_Free(self);
}

static PyObject *model_close(ModelObject *self, PyObject *unused) {
    (void)unused;
    self->closed = 1;
    model_release_if_done(self);
    Py_RETURN_NONE;
}

static PyObject *model_get_closed(ModelObject *self, void *unused) {
    (void)unused;
    return PyBool_FromLong(self->closed);
}

static PyObject *model_get_name(ModelObject *self, void *unused) {
    (void)unused;
    if (model_check_open(self) < 0) return NULL;
    return message_str(skycmd_model_name(self->model)); /* a file's metadata: any bytes */
}

static PyObject *model_get_idle_sessions(ModelObject *self, void *unused) {
    (void)unused;
    return PyLong_FromSsize_t(self->n_idle);
}

static PyObject *model_get_int(ModelObject *self, PyObject *arg) {
    if (!PyUnicode_Check(arg)) {
        PyErr_Format(PyExc_TypeError, "get_int: name must be a str, not %.100s",
                     Py_TYPE(arg)->tp_name);
        return NULL;
    }
    const char *name = PyUnicode_AsUTF8(arg);
    if (!name) return NULL;
    if (model_check_open(self) < 0) return NULL;
    int64_t v = 0;
    int rc = skycmd_model_get_int(self->model, name, &v);
    if (rc != SKYCMD_OK) {
        char msg[256];
        snprintf(msg, sizeof msg, "the model has no hyper-parameter \"%.200s\"", name);
        return raise_status(rc, msg);
    }
    return PyLong_FromLongLong((long long)v);
}

/* A Python str from a UTF-8 C string; None for NULL. */
static PyObject *str_or_none(const char *s) {
    if (!s) Py_RETURN_NONE;
    return PyUnicode_DecodeUTF8(s, (Py_ssize_t)strlen(s), "surrogateescape");
}

/* The typed content of a C response as plain values:
 *   (model, input_tokens, wire_json, ((id, type, choice, value, confidence,
 *                                       ((key, probability, legend), ...)), ...))
 * choice is None except for choice answers, confidence None for noul answers (the wire has
 * none), legend None except for score answers. */
static PyObject *response_to_tuple(const skycmd_response *resp, const char *json) {
    size_t n = skycmd_response_answer_count(resp);
    PyObject *answers = PyTuple_New((Py_ssize_t)n);
    if (!answers) return NULL;
    for (size_t i = 0; i < n; i++) {
        int type = skycmd_response_answer_type(resp, i);
        size_t n_opt = skycmd_response_option_count(resp, i);
        PyObject *options = PyTuple_New((Py_ssize_t)n_opt);
        if (!options) goto fail;
        for (size_t j = 0; j < n_opt; j++) {
            PyObject *legend = str_or_none(skycmd_response_option_legend(resp, i, j));
            PyObject *opt = legend ? Py_BuildValue("(NdN)",
                                                   str_or_none(skycmd_response_option_key(resp, i, j)),
                                                   skycmd_response_option_probability(resp, i, j),
                                                   legend)
                                   : NULL;
            if (!opt) {
                Py_DECREF(options);
                goto fail;
            }
            PyTuple_SET_ITEM(options, (Py_ssize_t)j, opt);
        }
        PyObject *confidence;
        if (type == SKYCMD_QTYPE_NOUL) {
            confidence = Py_NewRef(Py_None);
        } else {
            confidence = PyFloat_FromDouble(skycmd_response_answer_confidence(resp, i));
        }
        PyObject *answer = confidence ? Py_BuildValue("(NiNdNN)",
                                                      str_or_none(skycmd_response_answer_id(resp, i)),
                                                      type,
                                                      str_or_none(skycmd_response_answer_choice(resp, i)),
                                                      skycmd_response_answer_value(resp, i),
                                                      confidence, options)
                                      : NULL;
        if (!answer) {
            if (!confidence) Py_DECREF(options);
            goto fail;
        }
        PyTuple_SET_ITEM(answers, (Py_ssize_t)i, answer);
    }
    return Py_BuildValue("(NLNN)", str_or_none(skycmd_response_model(resp)),
                         (long long)skycmd_response_input_tokens(resp), str_or_none(json), answers);
fail:
    Py_DECREF(answers);
    return NULL;
}

/* The UTF-8 bytes of a request given as str or bytes (borrowed from `obj`). */
static int request_bytes(PyObject *obj, const char **data, Py_ssize_t *len) {
    if (PyUnicode_Check(obj)) {
        *data = PyUnicode_AsUTF8AndSize(obj, len);
        return *data ? 0 : -1;
    }
    if (PyBytes_Check(obj)) {
        char *p;
        if (PyBytes_AsStringAndSize(obj, &p, len) < 0) return -1;
        *data = p;
        return 0;
    }
    PyErr_Format(PyExc_TypeError, "a request is a JSON str or bytes, not %.100s",
                 Py_TYPE(obj)->tp_name);
    return -1;
}

/* decide_batch and decide_each take a sequence of requests: a str or bytes is one request
 * (iterating it would make each character a "request"), refused with a TypeError. */
static int refuse_single_request(const char *what, PyObject *arg) {
    if (PyUnicode_Check(arg) || PyBytes_Check(arg) || PyByteArray_Check(arg)) {
        PyErr_Format(PyExc_TypeError, "%s expects a sequence of requests, not a single %.100s "
                     "(wrap one request in a list)", what, Py_TYPE(arg)->tp_name);
        return -1;
    }
    return 0;
}

/* One request: parse, decide and write the wire JSON with the GIL released. */
static PyObject *model_decide(ModelObject *self, PyObject *arg) {
    const char *json;
    Py_ssize_t len;
    if (request_bytes(arg, &json, &len) < 0) return NULL;
    skycmd_session *s = model_take_session(self);
    if (!s) return NULL;
    skycmd_request *req = NULL;
    skycmd_response *resp = NULL;
    const char *wire = NULL;
    int parse_rc, rc;
    Py_BEGIN_ALLOW_THREADS
    parse_rc = skycmd_request_parse(json, (size_t)len, &req);
    rc = parse_rc;
    if (rc == SKYCMD_OK) rc = skycmd_decide(s, req, &resp);
    if (rc == SKYCMD_OK) {
        wire = skycmd_response_json(resp);
        if (!wire) rc = SKYCMD_E_NOMEM;
    }
    Py_END_ALLOW_THREADS
    PyObject *result = NULL;
    if (parse_rc != SKYCMD_OK)
        raise_status(parse_rc, req ? skycmd_request_errmsg(req) : NULL);
    else if (rc != SKYCMD_OK)
        raise_status(rc, resp ? NULL : skycmd_session_errmsg(s));
    else
        result = response_to_tuple(resp, wire);
    skycmd_response_free(resp);
    skycmd_request_free(req);
    model_give_session(self, s);
    return result;
}

/* Many requests answered together (skycmd_decide_batch): a list of response tuples. */
static PyObject *model_decide_batch(ModelObject *self, PyObject *arg) {
    if (refuse_single_request("decide_batch", arg) < 0) return NULL;
    /* A tuple of our own: the texts are read with the GIL released, when another thread
     * could change a list the caller passed. */
    PyObject *seq = PySequence_Tuple(arg);
    if (!seq) return NULL;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    const char **texts = PyMem_Calloc((size_t)n + 1, sizeof *texts);
    Py_ssize_t *lens = PyMem_Calloc((size_t)n + 1, sizeof *lens);
    skycmd_request **reqs = PyMem_Calloc((size_t)n + 1, sizeof *reqs);
    skycmd_response **resps = PyMem_Calloc((size_t)n + 1, sizeof *resps);
    const char **wires = PyMem_Calloc((size_t)n + 1, sizeof *wires);
    PyObject *result = NULL;
    skycmd_session *s = NULL;
    if (!texts || !lens || !reqs || !resps || !wires) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t i = 0; i < n; i++)
        if (request_bytes(PySequence_Fast_GET_ITEM(seq, i), &texts[i], &lens[i]) < 0) goto done;
    s = model_take_session(self);
    if (!s) goto done;
    int rc = SKYCMD_OK;
    Py_ssize_t failed_parse = -1;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t i = 0; i < n && rc == SKYCMD_OK; i++) {
        rc = skycmd_request_parse(texts[i], (size_t)lens[i], &reqs[i]);
        if (rc != SKYCMD_OK) failed_parse = i;
    }
    if (rc == SKYCMD_OK)
        rc = skycmd_decide_batch(s, (const skycmd_request *const *)reqs, (size_t)n, resps);
    for (Py_ssize_t i = 0; i < n && rc == SKYCMD_OK; i++) {
        wires[i] = skycmd_response_json(resps[i]);
        if (!wires[i]) rc = SKYCMD_E_NOMEM;
    }
    Py_END_ALLOW_THREADS
    if (failed_parse >= 0) {
        const char *m = reqs[failed_parse] ? skycmd_request_errmsg(reqs[failed_parse]) : "";
        PyObject *msg = PyUnicode_FromFormat("request %zd: %s", failed_parse, m);
        if (msg) {
            raise_status(rc, PyUnicode_AsUTF8(msg));
            Py_DECREF(msg);
        }
        goto done;
    }
    if (rc != SKYCMD_OK) {
        raise_status(rc, skycmd_session_errmsg(s));
        goto done;
    }
    result = PyList_New(n);
    if (!result) goto done;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *t = response_to_tuple(resps[i], wires[i]);
        if (!t) {
            Py_CLEAR(result);
            goto done;
        }
        PyList_SET_ITEM(result, i, t);
    }
done:
    if (reqs)
        for (Py_ssize_t i = 0; i < n; i++) skycmd_request_free(reqs[i]);
    if (resps)
        for (Py_ssize_t i = 0; i < n; i++) skycmd_response_free(resps[i]);
    if (s) model_give_session(self, s);
    PyMem_Free(texts);
    PyMem_Free(lens);
    PyMem_Free(reqs);
    PyMem_Free(resps);
    PyMem_Free(wires);
    Py_DECREF(seq);
    return result;
}

/* A group of requests answered each on its own account (skycmd_decide_each): a list with,
 * per request in order, its response tuple or the exception instance of its failure (a text
 * that does not parse is its own slot's E_JSON or E_REQUEST). One call, one session: the
 * Python generator (Model.decide_each) cuts a stream into such groups. Raises only for what
 * fails the whole group (a closed model, out of memory, an item that is not str/bytes). */
static PyObject *model_decide_each(ModelObject *self, PyObject *arg) {
    if (refuse_single_request("decide_each", arg) < 0) return NULL;
    PyObject *seq = PySequence_Tuple(arg); /* our own: read with the GIL released */
    if (!seq) return NULL;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    const char **texts = PyMem_Calloc((size_t)n + 1, sizeof *texts);
    Py_ssize_t *lens = PyMem_Calloc((size_t)n + 1, sizeof *lens);
    skycmd_request **reqs = PyMem_Calloc((size_t)n + 1, sizeof *reqs);
    int *parse_status = PyMem_Calloc((size_t)n + 1, sizeof *parse_status);
    skycmd_response **resps = PyMem_Calloc((size_t)n + 1, sizeof *resps);
    int *status = PyMem_Calloc((size_t)n + 1, sizeof *status);
    char **errmsg = PyMem_Calloc((size_t)n + 1, sizeof *errmsg);
    const char **wires = PyMem_Calloc((size_t)n + 1, sizeof *wires);
    PyObject *result = NULL;
    skycmd_session *s = NULL;
    if (!texts || !lens || !reqs || !parse_status || !resps || !status || !errmsg || !wires) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t i = 0; i < n; i++)
        if (request_bytes(PySequence_Fast_GET_ITEM(seq, i), &texts[i], &lens[i]) < 0) goto done;
    s = model_take_session(self);
    if (!s) goto done;
    int rc;
    Py_BEGIN_ALLOW_THREADS
    /* A failed parse still sets reqs[i] (with its message), which decide_each reports in
     * that slot. */
    for (Py_ssize_t i = 0; i < n; i++)
        parse_status[i] = skycmd_request_parse(texts[i], (size_t)lens[i], &reqs[i]);
    rc = skycmd_decide_each(s, (const skycmd_request *const *)reqs, (size_t)n, resps, status,
                            errmsg);
    for (Py_ssize_t i = 0; i < n && rc == SKYCMD_OK; i++) {
        if (resps[i] && !(wires[i] = skycmd_response_json(resps[i]))) {
            /* no memory for this one's wire JSON: its own slot's error */
            skycmd_response_free(resps[i]);
            resps[i] = NULL;
            status[i] = SKYCMD_E_NOMEM;
        }
    }
    Py_END_ALLOW_THREADS
    if (rc != SKYCMD_OK) {
        raise_status(rc, skycmd_session_errmsg(s));
        goto done;
    }
    result = PyList_New(n);
    if (!result) goto done;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *item;
        if (resps[i])
            item = response_to_tuple(resps[i], wires[i]);
        else if (!reqs[i]) /* the parse made no request at all (out of memory): its status */
            item = error_instance(parse_status[i], NULL);
        else
            item = error_instance(status[i], errmsg[i]);
        if (!item) {
            Py_CLEAR(result);
            goto done;
        }
        PyList_SET_ITEM(result, i, item);
    }
done:
    for (Py_ssize_t i = 0; i < n; i++) {
        if (reqs) skycmd_request_free(reqs[i]);
        if (resps) skycmd_response_free(resps[i]);
        if (errmsg) skycmd_string_free(errmsg[i]);
    }
    if (s) model_give_session(self, s);
    PyMem_Free(texts);
    PyMem_Free(lens);
    PyMem_Free(reqs);
    PyMem_Free(parse_status);
    PyMem_Free(resps);
    PyMem_Free(status);
    PyMem_Free(errmsg);
    PyMem_Free(wires);
    Py_DECREF(seq);
    return result;
}

/* ------------------------------------------------------------------ tokenizer ----- */

typedef struct TokenizerObject {
    PyObject_HEAD
    skycmd_tokenizer *owned;  /* from tokenizer_open_json; NULL once closed or if borrowed */
    ModelObject *model;       /* the model it is borrowed from (a reference), or NULL */
} TokenizerObject;

static PyTypeObject TokenizerType;

/* The C tokenizer, or NULL with E_MISUSE when it (or its model) is closed. */
static const skycmd_tokenizer *tokenizer_get(TokenizerObject *self) {
    if (self->model) {
        if (model_check_open(self->model) < 0) return NULL;
        return skycmd_model_tokenizer(self->model->model);
    }
    if (!self->owned) {
        raise_status(SKYCMD_E_MISUSE, "the tokenizer is closed");
        return NULL;
    }
    return self->owned;
}

static PyObject *model_tokenizer(ModelObject *self, PyObject *unused) {
    (void)unused;
    if (model_check_open(self) < 0) return NULL;
    TokenizerObject *t = PyObject_New(TokenizerObject, &TokenizerType);
    if (!t) return NULL;
    t->owned = NULL;
    t->model = (ModelObject *)Py_NewRef(self);
    return (PyObject *)t;
}

static PyObject *tokenizer_open_json(PyObject *module, PyObject *args) {
    (void)module;
    PyObject *path;
    if (!PyArg_ParseTuple(args, "O&", PyUnicode_FSConverter, &path)) return NULL;
    skycmd_error *err = skycmd_error_new();
    if (!err) {
        Py_DECREF(path);
        return PyErr_NoMemory();
    }
    skycmd_tokenizer *tok = NULL;
    int rc;
    const char *p = PyBytes_AS_STRING(path);
    Py_BEGIN_ALLOW_THREADS
    rc = skycmd_tokenizer_open_json(p, &tok, err);
    Py_END_ALLOW_THREADS
    Py_DECREF(path);
    if (rc != SKYCMD_OK) {
        raise_call_error(rc, err);
        skycmd_error_free(err);
        return NULL;
    }
    skycmd_error_free(err);
    TokenizerObject *t = PyObject_New(TokenizerObject, &TokenizerType);
    if (!t) {
        skycmd_tokenizer_free(tok);
        return NULL;
    }
    t->owned = tok;
    t->model = NULL;
    return (PyObject *)t;
}

static void tokenizer_dealloc(TokenizerObject *self) {
    skycmd_tokenizer_free(self->owned);
    Py_XDECREF(self->model);
    PyObject_Free(self);
}

static PyObject *tokenizer_close(TokenizerObject *self, PyObject *unused) {
    (void)unused;
    skycmd_tokenizer_free(self->owned);
    self->owned = NULL;
    Py_CLEAR(self->model);
    Py_RETURN_NONE;
}

/* Token ids of a text (a list of int); with count_only, just their number. The GIL stays
 * held: tokenizing is short, and the tokenizer's lifetime then needs no other guard. */
static PyObject *tokenizer_encode_common(TokenizerObject *self, PyObject *arg, int count_only) {
    if (!PyUnicode_Check(arg)) {
        PyErr_Format(PyExc_TypeError, "%s: text must be a str, not %.100s",
                     count_only ? "count" : "encode", Py_TYPE(arg)->tp_name);
        return NULL;
    }
    Py_ssize_t len;
    const char *text = PyUnicode_AsUTF8AndSize(arg, &len);
    if (!text) return NULL;
    const skycmd_tokenizer *tok = tokenizer_get(self);
    if (!tok) return NULL;
    size_t n = 0;
    int rc = skycmd_tokenizer_encode(tok, text, (size_t)len, NULL, 0, &n);
    if (rc != SKYCMD_OK) return raise_status(rc, "cannot encode the text");
    if (count_only) return PyLong_FromSize_t(n);
    int32_t *ids = PyMem_Malloc((n ? n : 1) * sizeof *ids);
    if (!ids) return PyErr_NoMemory();
    rc = skycmd_tokenizer_encode(tok, text, (size_t)len, ids, n, &n);
    if (rc != SKYCMD_OK) {
        PyMem_Free(ids);
        return raise_status(rc, "cannot encode the text");
    }
    PyObject *list = PyList_New((Py_ssize_t)n);
    for (size_t i = 0; list && i < n; i++) {
        PyObject *v = PyLong_FromLong(ids[i]);
        if (!v) {
            Py_CLEAR(list);
            break;
        }
        PyList_SET_ITEM(list, (Py_ssize_t)i, v);
    }
    PyMem_Free(ids);
    return list;
}

static PyObject *tokenizer_encode(TokenizerObject *self, PyObject *arg) {
    return tokenizer_encode_common(self, arg, 0);
}

static PyObject *tokenizer_count(TokenizerObject *self, PyObject *arg) {
    return tokenizer_encode_common(self, arg, 1);
}

static PyObject *tokenizer_decode(TokenizerObject *self, PyObject *arg) {
    PyObject *seq = PySequence_Fast(arg, "decode takes a sequence of token ids");
    if (!seq) return NULL;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    int32_t *ids = PyMem_Malloc(((size_t)n ? (size_t)n : 1) * sizeof *ids);
    if (!ids) {
        Py_DECREF(seq);
        return PyErr_NoMemory();
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        /* any id out of the int32 range is the same error, however large (not OverflowError) */
        int overflow = 0;
        long long v = PyLong_AsLongLongAndOverflow(PySequence_Fast_GET_ITEM(seq, i), &overflow);
        if (v == -1 && PyErr_Occurred()) goto fail;
        if (overflow || v < INT32_MIN || v > INT32_MAX) {
            raise_status(SKYCMD_E_INVALID_ARGUMENT, "a token id is out of the int32 range");
            goto fail;
        }
        ids[i] = (int32_t)v;
    }
    const skycmd_tokenizer *tok = tokenizer_get(self);
    if (!tok) goto fail;
    char *out = NULL;
    int rc = skycmd_tokenizer_decode(tok, ids, (size_t)n, &out);
    PyMem_Free(ids);
    Py_DECREF(seq);
    if (rc != SKYCMD_OK) return raise_status(rc, "cannot decode the ids (an id out of range?)");
    PyObject *r = PyUnicode_DecodeUTF8(out, (Py_ssize_t)strlen(out), "replace");
    skycmd_string_free(out);
    return r;
fail:
    PyMem_Free(ids);
    Py_DECREF(seq);
    return NULL;
}

static PyObject *tokenizer_token(TokenizerObject *self, PyObject *arg) {
    int overflow = 0;
    long long id = PyLong_AsLongLongAndOverflow(arg, &overflow);
    if (id == -1 && PyErr_Occurred()) return NULL;
    const skycmd_tokenizer *tok = tokenizer_get(self);
    if (!tok) return NULL;
    if (overflow || id < INT32_MIN || id > INT32_MAX) Py_RETURN_NONE; /* out of range, any size */
    return str_or_none(skycmd_tokenizer_token(tok, (int32_t)id));
}

static PyObject *tokenizer_special_id(TokenizerObject *self, PyObject *arg) {
    int overflow = 0;
    long long which = PyLong_AsLongLongAndOverflow(arg, &overflow);
    if (which == -1 && PyErr_Occurred()) return NULL;
    if (overflow || which < 0 || which > INT32_MAX) Py_RETURN_NONE;
    const skycmd_tokenizer *tok = tokenizer_get(self);
    if (!tok) return NULL;
    int32_t id = skycmd_tokenizer_special_id(tok, (int)which);
    if (id < 0) Py_RETURN_NONE;
    return PyLong_FromLong(id);
}

static PyObject *tokenizer_get_vocab_size(TokenizerObject *self, void *unused) {
    (void)unused;
    const skycmd_tokenizer *tok = tokenizer_get(self);
    if (!tok) return NULL;
    return PyLong_FromSize_t(skycmd_tokenizer_vocab_size(tok));
}

static PyMethodDef tokenizer_methods[] = {
    {"encode", (PyCFunction)tokenizer_encode, METH_O, "encode(text) -> list of token ids"},
    {"count", (PyCFunction)tokenizer_count, METH_O, "count(text) -> number of token ids"},
    {"decode", (PyCFunction)tokenizer_decode, METH_O, "decode(ids) -> text"},
    {"token", (PyCFunction)tokenizer_token, METH_O, "token(id) -> vocabulary entry or None"},
    {"special_id", (PyCFunction)tokenizer_special_id, METH_O, "special_id(which) -> id or None"},
    {"close", (PyCFunction)tokenizer_close, METH_NOARGS, "release the tokenizer"},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef tokenizer_getset[] = {
    {"vocab_size", (getter)tokenizer_get_vocab_size, NULL, "number of vocabulary entries", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject TokenizerType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "skycmd._skycmd.Tokenizer",
    .tp_basicsize = sizeof(TokenizerObject),
    .tp_dealloc = (destructor)tokenizer_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A byte-level BPE tokenizer (owned, or borrowed from a model).",
    .tp_methods = tokenizer_methods,
    .tp_getset = tokenizer_getset,
};

static PyMethodDef model_methods[] = {
    {"open", (PyCFunction)model_open, METH_VARARGS | METH_CLASS,
     "open(path, options, session_options, log) -> Model"},
    {"open_buffer", (PyCFunction)model_open_buffer, METH_VARARGS | METH_CLASS,
     "open_buffer(data, options, session_options, log) -> Model"},
    {"close", (PyCFunction)model_close, METH_NOARGS, "close (freed when running calls end)"},
    {"decide", (PyCFunction)model_decide, METH_O, "decide(json) -> response tuple"},
    {"decide_batch", (PyCFunction)model_decide_batch, METH_O,
     "decide_batch(jsons) -> list of response tuples"},
    {"decide_each", (PyCFunction)model_decide_each, METH_O,
     "decide_each(jsons) -> list of response tuples or exception instances"},
    {"get_int", (PyCFunction)model_get_int, METH_O, "get_int(name) -> int"},
    {"tokenizer", (PyCFunction)model_tokenizer, METH_NOARGS, "the model's tokenizer"},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef model_getset[] = {
    {"closed", (getter)model_get_closed, NULL, "True once closed", NULL},
    {"name", (getter)model_get_name, NULL, "the model's name", NULL},
    {"idle_sessions", (getter)model_get_idle_sessions, NULL, "sessions in the pool", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject ModelType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "skycmd._skycmd.Model",
    .tp_basicsize = sizeof(ModelObject),
    .tp_dealloc = (destructor)model_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "An open decision model with a pool of sessions.",
    .tp_methods = model_methods,
    .tp_getset = model_getset,
};

/* ------------------------------------------------------------------ files --------- */

static PyObject *py_inspect(PyObject *module, PyObject *args) {
    (void)module;
    PyObject *path, *options = NULL;
    if (!PyArg_ParseTuple(args, "O&|O", PyUnicode_FSConverter, &path, &options)) return NULL;
    skycmd_options *opts = make_options(options, NULL);
    skycmd_error *err = opts ? skycmd_error_new() : NULL;
    PyObject *result = NULL;
    if (opts && !err) PyErr_NoMemory();
    if (opts && err) {
        char *out = NULL;
        int rc;
        const char *p = PyBytes_AS_STRING(path);
        Py_BEGIN_ALLOW_THREADS
        rc = skycmd_inspect(p, opts, &out, err);
        Py_END_ALLOW_THREADS
        if (rc != SKYCMD_OK)
            raise_call_error(rc, err);
        else
            result = PyUnicode_DecodeUTF8(out, (Py_ssize_t)strlen(out), "replace");
        skycmd_string_free(out);
    }
    skycmd_error_free(err);
    skycmd_options_free(opts);
    Py_DECREF(path);
    return result;
}

typedef int (*two_path_fn)(const char *, const char *, const skycmd_options *, skycmd_error *);

/* convert, quantize and random_model: (input, output, options[, progress[, log]]) with the
 * GIL released; a callable that raises cancels, and its exception is the __cause__. */
static PyObject *two_path_call(PyObject *args, two_path_fn fn, int input_is_path) {
    PyObject *in = NULL, *out = NULL, *options = NULL;
    callback_state callbacks = {NULL, NULL, NULL};
    int ok = input_is_path
                 ? PyArg_ParseTuple(args, "O&O&|OOO", PyUnicode_FSConverter, &in,
                                    PyUnicode_FSConverter, &out, &options, &callbacks.progress,
                                    &callbacks.log)
                 : PyArg_ParseTuple(args, "SO&|OOO", &in, PyUnicode_FSConverter, &out, &options,
                                    &callbacks.progress, &callbacks.log);
    if (!ok) return NULL; /* the converters released what they made */
    if (!input_is_path) Py_INCREF(in);
    PyObject *result = NULL;
    skycmd_options *opts = make_options(options, &callbacks);
    skycmd_error *err = opts ? skycmd_error_new() : NULL;
    if (opts && !err) PyErr_NoMemory();
    if (opts && err) {
        int rc;
        const char *a = PyBytes_AS_STRING(in), *b = PyBytes_AS_STRING(out);
        Py_BEGIN_ALLOW_THREADS
        rc = fn(a, b, opts, err);
        Py_END_ALLOW_THREADS
        if (rc != SKYCMD_OK && is_base_only(callbacks.raised)) {
            /* cancelled for a KeyboardInterrupt, SystemExit, ...: that exception, unwrapped */
            raise_kept(&callbacks);
        } else if (rc != SKYCMD_OK) {
            raise_status_errno(rc, skycmd_error_message(err), skycmd_error_errno(err), callbacks.raised);
            callbacks.raised = NULL;
        } else if (callbacks.raised) {
            /* The work ended before it looked at the cancel (or only logged): the callback's
             * exception is still the caller's to see. */
            raise_kept(&callbacks);
        } else {
            result = Py_NewRef(Py_None);
        }
    }
    Py_XDECREF(callbacks.raised);
    skycmd_error_free(err);
    skycmd_options_free(opts);
    Py_DECREF(in);
    Py_DECREF(out);
    return result;
}

static PyObject *py_convert(PyObject *module, PyObject *args) {
    (void)module;
    return two_path_call(args, skycmd_convert, 1);
}

static PyObject *py_quantize(PyObject *module, PyObject *args) {
    (void)module;
    return two_path_call(args, skycmd_quantize, 1);
}

static PyObject *py_random_model(PyObject *module, PyObject *args) {
    (void)module;
    /* The preset is a name, passed as bytes (the Python layer encodes it). */
    return two_path_call(args, skycmd_random_model, 0);
}

/* default_model_path() -> str: skycmd_default_model_path (a few stat calls: GIL kept). */
static PyObject *py_default_model_path(PyObject *module, PyObject *unused) {
    (void)module;
    (void)unused;
    skycmd_error *err = skycmd_error_new();
    if (!err) return PyErr_NoMemory();
    char *path = NULL;
    int rc = skycmd_default_model_path(&path, err);
    PyObject *r = rc == SKYCMD_OK ? PyUnicode_DecodeFSDefault(path) : raise_call_error(rc, err);
    skycmd_string_free(path);
    skycmd_error_free(err);
    return r;
}

/* ------------------------------------------------------------------ module -------- */

static PyObject *py_set_error_factory(PyObject *module, PyObject *arg) {
    (void)module;
    if (!PyCallable_Check(arg)) {
        PyErr_SetString(PyExc_TypeError, "the error factory must be callable");
        return NULL;
    }
    Py_XSETREF(error_factory, Py_NewRef(arg));
    Py_RETURN_NONE;
}

static PyObject *py_check_version(PyObject *module, PyObject *arg) {
    (void)module;
    unsigned long v = PyLong_AsUnsignedLong(arg);
    if (v == (unsigned long)-1 && PyErr_Occurred()) return NULL;
    skycmd_error *err = skycmd_error_new();
    if (!err) return PyErr_NoMemory();
    int rc = skycmd_check_version((unsigned)v, err);
    PyObject *r = rc == SKYCMD_OK ? Py_NewRef(Py_None) : raise_call_error(rc, err);
    skycmd_error_free(err);
    return r;
}

static PyObject *py_status_name(PyObject *module, PyObject *arg) {
    (void)module;
    int s = (int)PyLong_AsLong(arg);
    if (PyErr_Occurred()) return NULL;
    return PyUnicode_FromString(skycmd_status_name(s));
}

static PyObject *py_strerror(PyObject *module, PyObject *arg) {
    (void)module;
    int s = (int)PyLong_AsLong(arg);
    if (PyErr_Occurred()) return NULL;
    return PyUnicode_FromString(skycmd_strerror(s));
}

static PyObject *py_option_bounds(PyObject *module, PyObject *arg) {
    (void)module;
    int key = (int)PyLong_AsLong(arg);
    if (PyErr_Occurred()) return NULL;
    int64_t lo, hi;
    int rc = skycmd_option_bounds(key, &lo, &hi);
    if (rc != SKYCMD_OK) return raise_status(rc, "not an integer option");
    return Py_BuildValue("(LL)", (long long)lo, (long long)hi);
}

static PyObject *py_live_models(PyObject *module, PyObject *unused) {
    (void)module;
    (void)unused;
    return PyLong_FromSsize_t(live_models);
}

static PyObject *py_library_info(PyObject *module, PyObject *unused) {
    (void)module;
    (void)unused;
    return Py_BuildValue("{s:I,s:s,s:I,s:s,s:s}", "version_number", skycmd_version_number(),
                         "version_string", skycmd_version_string(), "abi_version",
                         skycmd_abi_version(), "build_id", skycmd_build_id(), "cpu_features",
                         skycmd_cpu_features());
}

static PyMethodDef module_methods[] = {
    {"_set_error_factory", py_set_error_factory, METH_O, NULL},
    {"check_version", py_check_version, METH_O, "check_version(header_number)"},
    {"status_name", py_status_name, METH_O, "status_name(status) -> 'SKYCMD_E_...'"},
    {"strerror", py_strerror, METH_O, "strerror(status) -> description"},
    {"option_bounds", py_option_bounds, METH_O, "option_bounds(key) -> (min, max)"},
    {"library_info", py_library_info, METH_NOARGS, "version, ABI, build id, CPU features"},
    {"live_models", py_live_models, METH_NOARGS, "C models open now"},
    {"inspect", py_inspect, METH_VARARGS, "inspect(path, options) -> str"},
    {"convert", py_convert, METH_VARARGS, "convert(laya_dir, out, options, progress, log)"},
    {"quantize", py_quantize, METH_VARARGS, "quantize(in, out, options, progress, log)"},
    {"random_model", py_random_model, METH_VARARGS, "random_model(preset, out, options, progress, log)"},
    {"tokenizer_open_json", tokenizer_open_json, METH_VARARGS, "tokenizer_open_json(path)"},
    {"default_model_path", py_default_model_path, METH_NOARGS, "default_model_path() -> str"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT, "_skycmd", "libskycmd's C ABI for the skycmd package", -1,
    module_methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__skycmd(void) {
    if (PyType_Ready(&ModelType) < 0 || PyType_Ready(&TokenizerType) < 0) return NULL;
    PyObject *m = PyModule_Create(&module_def);
    if (!m) return NULL;
    if (PyModule_AddObjectRef(m, "Model", (PyObject *)&ModelType) < 0 ||
        PyModule_AddObjectRef(m, "Tokenizer", (PyObject *)&TokenizerType) < 0 ||
        PyModule_AddIntConstant(m, "HEADER_VERSION_NUMBER", SKYCMD_VERSION_NUMBER) < 0 ||
        PyModule_AddIntConstant(m, "STATUS_COUNT", SKYCMD_STATUS_COUNT) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
