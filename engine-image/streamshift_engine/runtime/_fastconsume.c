/*
 * _fastconsume: one batched consume from a confluent-kafka Consumer's own librdkafka handle,
 * returned as packed columns instead of one Python `Message` per record.
 *
 * confluent-kafka's `Consumer.consume` builds a `Message` object per record, and reading its
 * fields costs more again: together about as much as a JSON worker's whole engine work per event
 * (docs/performance.md). `consume` here calls the same
 * `rd_kafka_consume_batch_queue` on the same handle, with the GIL released, then builds in one
 * C loop: the values, and the partitions (int32), Kafka offsets (int64) and topic indices
 * (int32, into the `topics` tuple given) as packed bytes that the caller wraps with numpy.
 * Values are `Payload` objects that own their message and expose its payload through the
 * buffer protocol (a null value as an empty buffer), for msgspec and Arrow to read in place:
 * copying a large columnar record into fresh bytes costs page faults of new memory and the copy,
 * many times the rest of its consume.
 * Assignment, seek, pause/resume, commits and offset look-ups stay with confluent-kafka on the
 * same handle. `wake` (rd_kafka_queue_yield) ends a consume waiting in another thread, so the
 * worker's control commands do not wait for its consume's timeout.
 *
 * How it reaches the handle, and why each part holds:
 * - The `rd_kafka_t *` is the first field after PyObject_HEAD of confluent-kafka's `Handle`
 *   (src/confluent_kafka/src/confluent_kafka.h of 2.16.1), followed by three callback objects,
 *   an int and the thread-local key its callbacks find their `CallState` under. Checked on every
 *   call: the object is a `cimpl.Consumer`, the handle is open, it is a consumer, its opaque
 *   (which confluent-kafka sets to the Handle) is this object, its name starts with the
 *   `client.id` the caller gave, and the key exists; the module refuses to load with any other
 *   confluent-kafka version than the one whose layout this is.
 * - librdkafka's functions are resolved with dlopen(cimpl's file, RTLD_NOLOAD) and dlsym, which
 *   searches cimpl's dependency tree: the librdkafka the wheel bundles, the very library instance
 *   that owns the handle. No link-time dependency and no librdkafka-dev package: the few
 *   prototypes and `rd_kafka_message_t` are declared below, from librdkafka's public rdkafka.h,
 *   whose message struct and these functions are ABI-stable across 1.x and 2.x.
 * - confluent-kafka forwards librdkafka's main queue to the consumer queue
 *   (rd_kafka_poll_set_consumer), so a consume may serve a client-level error op and call
 *   confluent-kafka's error callback, which takes the GIL back through the `CallState` it finds
 *   under the handle's thread-local key. The call below sets one up exactly as confluent-kafka's
 *   own consume does (CallState_begin/CallState_end), and raises what a callback raised.
 * - A message whose `err` is set (a consumer error, or a partition EOF when
 *   `enable.partition.eof` is on: KafkaSource keeps it off) raises KafkaException with a
 *   KafkaError of that code and its text; the whole batch is destroyed, as confluent-kafka's
 *   callers of `consume` do when they raise on a message's error.
 * The gate confluent-kafka's Consumer methods take against a concurrent close() is not taken:
 * KafkaSource consumes and closes on the worker loop's thread only.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <dlfcn.h>
#include <stdint.h>
#include <string.h>
#include <sys/types.h>

#define CONFLUENT_KAFKA_VERSION "2.16.1"
#define MAX_MESSAGES 1000000

/* librdkafka's public types (rdkafka.h) */
typedef struct rd_kafka_s rd_kafka_t;
typedef struct rd_kafka_topic_s rd_kafka_topic_t;
typedef struct rd_kafka_queue_s rd_kafka_queue_t;
typedef int rd_kafka_resp_err_t;
enum { RD_KAFKA_CONSUMER = 1 };

typedef struct {
        rd_kafka_resp_err_t err;
        rd_kafka_topic_t *rkt;
        int32_t partition;
        void *payload;
        size_t len;
        void *key;
        size_t key_len;
        int64_t offset;
        void *_private;
} rd_kafka_message_t;

/* The head of confluent-kafka 2.16.1's `Handle` (confluent_kafka.h), up to the callbacks'
 * thread-local key. */
typedef struct {
        PyObject_HEAD rd_kafka_t *rk;
        PyObject *error_cb;
        PyObject *throttle_cb;
        PyObject *stats_cb;
        int initiated;
        Py_tss_t tlskey;
} HandleHead;

/* confluent-kafka's `CallState` (confluent_kafka.h), what its callbacks find under tlskey. */
typedef struct {
        PyThreadState *thread_state;
        int crashed;
        PyObject *exception_value;
} CallState;

static struct {
        int (*type)(const rd_kafka_t *);
        const char *(*name)(const rd_kafka_t *);
        void *(*opaque)(const rd_kafka_t *);
        rd_kafka_queue_t *(*queue_get_consumer)(rd_kafka_t *);
        void (*queue_destroy)(rd_kafka_queue_t *);
        void (*queue_yield)(rd_kafka_queue_t *);
        ssize_t (*consume_batch_queue)(rd_kafka_queue_t *, int, rd_kafka_message_t **, size_t);
        void (*message_destroy)(rd_kafka_message_t *);
        const char *(*topic_name)(const rd_kafka_topic_t *);
        const char *(*err2str)(rd_kafka_resp_err_t);
        rd_kafka_resp_err_t (*last_error)(void);
} rdk;

static PyTypeObject *consumer_type;
static PyObject *kafka_error;     /* confluent_kafka.KafkaError */
static PyObject *kafka_exception; /* confluent_kafka.KafkaException */

/* A record's value without a copy: owns the message, read-only buffer protocol over its
 * payload, the message destroyed when the last reference (and buffer export) goes. It holds a
 * reference to the Consumer: librdkafka's close waits for every message it handed out, so the
 * Consumer must not be closed by its deallocation while a Payload lives (an explicit close()
 * with Payloads alive waits for them too: release them first). */
typedef struct {
        PyObject_HEAD rd_kafka_message_t *message;
        PyObject *consumer;
} Payload;

static Py_ssize_t payloads_alive;

static int payload_getbuffer(PyObject *self, Py_buffer *view, int flags) {
        rd_kafka_message_t *m = ((Payload *)self)->message;
        return PyBuffer_FillInfo(view, self, m->payload ? m->payload : (void *)"",
                                 m->payload ? (Py_ssize_t)m->len : 0, 1, flags);
}

static void payload_dealloc(PyObject *self) {
        Payload *payload = (Payload *)self;
        rdk.message_destroy(payload->message);
        Py_DECREF(payload->consumer);
        payloads_alive--;
        Py_TYPE(self)->tp_free(self);
}

static Py_ssize_t payload_length(PyObject *self) {
        rd_kafka_message_t *m = ((Payload *)self)->message;
        return m->payload ? (Py_ssize_t)m->len : 0;
}

static PyBufferProcs payload_buffer = {payload_getbuffer, NULL};
static PySequenceMethods payload_sequence = {.sq_length = payload_length};

static PyTypeObject payload_type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "_fastconsume.Payload",
    .tp_basicsize = sizeof(Payload),
    .tp_dealloc = payload_dealloc,
    .tp_as_buffer = &payload_buffer,
    .tp_as_sequence = &payload_sequence,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A record's value in the consumer's memory (buffer protocol, read-only); the "
              "record is freed when the Payload is.",
};

/* The message as a Payload. A message handed to a Payload is no longer the caller's to
 * destroy. */
static PyObject *value_of(rd_kafka_message_t *m, PyObject *consumer) {
        Payload *payload = PyObject_New(Payload, &payload_type);
        if (payload) {
                payload->message = m;
                payload->consumer = Py_NewRef(consumer);
                payloads_alive++;
        }
        return (PyObject *)payload;
}

/* KafkaException(KafkaError(code, reason)), as confluent-kafka raises its errors. */
static PyObject *raise_kafka(rd_kafka_resp_err_t code, const char *reason) {
        PyObject *error = PyObject_CallFunction(kafka_error, "is", (int)code, reason);
        if (error) {
                PyErr_SetObject(kafka_exception, error);
                Py_DECREF(error);
        }
        return NULL;
}

static PyObject *raise_message_error(const rd_kafka_message_t *m) {
        char reason[512];
        const char *text = rdk.err2str(m->err);
        int length = (int)strlen(text);
        if (m->payload && m->len) { /* a consumer error carries its text as the payload */
                text = (const char *)m->payload;
                length = m->len < 400 ? (int)m->len : 400;
        }
        snprintf(reason, sizeof(reason), "%.*s (topic %s, partition %d, offset %lld)", length,
                 text, m->rkt ? rdk.topic_name(m->rkt) : "-", (int)m->partition,
                 (long long)m->offset);
        return raise_kafka(m->err, reason);
}

static void destroy_all(rd_kafka_message_t **messages, Py_ssize_t from, Py_ssize_t n) {
        for (Py_ssize_t i = from; i < n; i++)
                rdk.message_destroy(messages[i]);
}

/* The consumer's rd_kafka_t, after checking that the object is what its layout says. */
static rd_kafka_t *handle_of(PyObject *consumer, const char *client_id) {
        HandleHead *h = (HandleHead *)consumer;
        rd_kafka_t *rk = h->rk;
        if (!rk) {
                PyErr_SetString(PyExc_RuntimeError, "_fastconsume: the consumer is closed");
                return NULL;
        }
        const char *name = rdk.name(rk);
        size_t prefix = strlen(client_id);
        if (rdk.opaque(rk) != (void *)h || rdk.type(rk) != RD_KAFKA_CONSUMER ||
            !PyThread_tss_is_created(&h->tlskey)) {
                PyErr_SetString(PyExc_RuntimeError,
                                "_fastconsume: the Consumer's handle is not laid out as in "
                                "confluent-kafka " CONFLUENT_KAFKA_VERSION);
                return NULL;
        }
        if (strncmp(name, client_id, prefix) != 0 || name[prefix] != '#') {
                PyErr_Format(PyExc_RuntimeError,
                             "_fastconsume: the handle is named %s, expected %s#...", name,
                             client_id);
                return NULL;
        }
        return rk;
}

/* rd_kafka_consume_batch_queue with the GIL released and a CallState for confluent-kafka's
 * callbacks (its CallState_begin/CallState_end). Returns -1 with an exception set. */
static Py_ssize_t consume_batch(HandleHead *h, rd_kafka_queue_t *queue, int timeout_ms,
                                rd_kafka_message_t **messages, Py_ssize_t max) {
        CallState cs;
        cs.thread_state = PyEval_SaveThread();
        cs.crashed = 0;
        cs.exception_value = NULL;
        PyThread_tss_set(&h->tlskey, &cs);
        ssize_t n = rdk.consume_batch_queue(queue, timeout_ms, messages, (size_t)max);
        PyThread_tss_set(&h->tlskey, NULL);
        PyEval_RestoreThread(cs.thread_state);
        if (n < 0) {
                rd_kafka_resp_err_t err = rdk.last_error();
                raise_kafka(err, rdk.err2str(err));
                return -1;
        }
        if (cs.crashed) {
                destroy_all(messages, 0, n);
                if (cs.exception_value) {
                        PyErr_SetObject(PyExceptionInstance_Class(cs.exception_value),
                                        cs.exception_value);
                        Py_DECREF(cs.exception_value);
                } else if (!PyErr_Occurred()) {
                        PyErr_SetString(PyExc_RuntimeError,
                                        "_fastconsume: a Kafka client callback failed");
                }
                return -1;
        }
        if (PyErr_CheckSignals() == -1) {
                destroy_all(messages, 0, n);
                return -1;
        }
        return (Py_ssize_t)n;
}

/* The index of the message's topic in `names`, -1 if it is none of them. */
static int topic_index(const rd_kafka_topic_t *rkt, const char **names, int count,
                       const rd_kafka_topic_t **seen) {
        for (int t = 0; t < count; t++)
                if (seen[t] == rkt)
                        return t;
        const char *name = rdk.topic_name(rkt);
        for (int t = 0; t < count; t++)
                if (strcmp(names[t], name) == 0) {
                        seen[t] = rkt;
                        return t;
                }
        return -1;
}

/* The packed columns of n messages, each handed to its Payload; NULL with an exception set
 * (every message not yet handed over destroyed). */
static PyObject *columns(rd_kafka_message_t **messages, Py_ssize_t n, PyObject *topics,
                         PyObject *consumer) {
        int count = (int)PyTuple_GET_SIZE(topics);
        const char *names[64];
        const rd_kafka_topic_t *seen[64] = {NULL};
        for (int t = 0; t < count; t++)
                if (!(names[t] = PyUnicode_AsUTF8(PyTuple_GET_ITEM(topics, t)))) {
                        destroy_all(messages, 0, n);
                        return NULL;
                }
        for (Py_ssize_t i = 0; i < n; i++)
                if (messages[i]->err) {
                        raise_message_error(messages[i]);
                        destroy_all(messages, 0, n);
                        return NULL;
                }
        PyObject *values = PyList_New(n);
        PyObject *partitions = PyBytes_FromStringAndSize(NULL, n * (Py_ssize_t)sizeof(int32_t));
        PyObject *offsets = PyBytes_FromStringAndSize(NULL, n * (Py_ssize_t)sizeof(int64_t));
        PyObject *codes = PyBytes_FromStringAndSize(NULL, n * (Py_ssize_t)sizeof(int32_t));
        if (!values || !partitions || !offsets || !codes)
                goto fail;
        int32_t *partition = (int32_t *)PyBytes_AS_STRING(partitions);
        int64_t *offset = (int64_t *)PyBytes_AS_STRING(offsets);
        int32_t *code = (int32_t *)PyBytes_AS_STRING(codes);
        for (Py_ssize_t i = 0; i < n; i++) {
                rd_kafka_message_t *m = messages[i];
                int t = topic_index(m->rkt, names, count, seen);
                if (t < 0) {
                        PyErr_Format(PyExc_ValueError,
                                     "_fastconsume: a record of topic %s, not one of the "
                                     "topics given",
                                     rdk.topic_name(m->rkt));
                        destroy_all(messages, i, n);
                        goto fail_destroyed;
                }
                partition[i] = m->partition;
                offset[i] = m->offset;
                code[i] = t;
                PyObject *value = value_of(m, consumer);
                if (!value) {
                        destroy_all(messages, i, n);
                        goto fail_destroyed;
                }
                PyList_SET_ITEM(values, i, value);
        }
        return Py_BuildValue("(NNNN)", values, partitions, offsets, codes);
fail:
        destroy_all(messages, 0, n);
fail_destroyed:
        Py_XDECREF(values);
        Py_XDECREF(partitions);
        Py_XDECREF(offsets);
        Py_XDECREF(codes);
        return NULL;
}

PyDoc_STRVAR(consume_doc,
             "consume(consumer, client_id, topics, max_messages, timeout)\n--\n\n"
             "Up to max_messages records within timeout seconds from the consumer's queue, as\n"
             "(values, partitions, offsets, topic indices): a list of Payload objects that hold\n"
             "the records, and packed int32, int64 and int32 arrays (bytes) with the index of\n"
             "each record's topic in `topics`. Raises KafkaException for a record that carries\n"
             "an error.");

PyDoc_STRVAR(payloads_alive_doc,
             "payloads_alive()\n--\n\nHow many Payload objects (records held) exist now.");

static PyObject *alive(PyObject *module, PyObject *unused) {
        return PyLong_FromSsize_t(payloads_alive);
}

/* The consumer queue of the checked handle (the caller destroys it), or NULL with an error set. */
static rd_kafka_queue_t *consumer_queue(PyObject *consumer, const char *client_id) {
        rd_kafka_t *rk = handle_of(consumer, client_id);
        if (!rk)
                return NULL;
        rd_kafka_queue_t *queue = rdk.queue_get_consumer(rk);
        if (!queue)
                PyErr_SetString(PyExc_RuntimeError, "_fastconsume: the handle has no consumer queue");
        return queue;
}

static PyObject *consume(PyObject *module, PyObject *args) {
        PyObject *consumer, *topics;
        const char *client_id;
        Py_ssize_t max;
        double timeout;
        if (!PyArg_ParseTuple(args, "O!sO!nd", consumer_type, &consumer, &client_id,
                              &PyTuple_Type, &topics, &max, &timeout))
                return NULL;
        if (max < 1 || max > MAX_MESSAGES || PyTuple_GET_SIZE(topics) > 64) {
                PyErr_SetString(PyExc_ValueError,
                                "_fastconsume: max_messages must be 1..1000000, topics at most 64");
                return NULL;
        }
        rd_kafka_queue_t *queue = consumer_queue(consumer, client_id);
        if (!queue)
                return NULL;
        rd_kafka_message_t **messages = PyMem_Malloc((size_t)max * sizeof(*messages));
        if (!messages) {
                rdk.queue_destroy(queue);
                return PyErr_NoMemory();
        }
        int timeout_ms = timeout <= 0 ? 0 : (int)(timeout * 1000 + 0.5);
        Py_INCREF(consumer);
        Py_ssize_t n = consume_batch((HandleHead *)consumer, queue, timeout_ms, messages, max);
        rdk.queue_destroy(queue);
        PyObject *result = n < 0 ? NULL : columns(messages, n, topics, consumer);
        Py_DECREF(consumer);
        PyMem_Free(messages);
        return result;
}

PyDoc_STRVAR(wake_doc,
             "wake(consumer, client_id)\n--\n\n"
             "End a consume waiting on the consumer's queue in another thread now, with what it\n"
             "holds (rd_kafka_queue_yield); with none waiting, the next consume returns at once.");

static PyObject *wake(PyObject *module, PyObject *args) {
        PyObject *consumer;
        const char *client_id;
        if (!PyArg_ParseTuple(args, "O!s", consumer_type, &consumer, &client_id))
                return NULL;
        rd_kafka_queue_t *queue = consumer_queue(consumer, client_id);
        if (!queue)
                return NULL;
        rdk.queue_yield(queue);
        rdk.queue_destroy(queue);
        Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"consume", consume, METH_VARARGS, consume_doc},
    {"wake", wake, METH_VARARGS, wake_doc},
    {"payloads_alive", alive, METH_NOARGS, payloads_alive_doc},
    {NULL, NULL, 0, NULL},
};

/* librdkafka's functions from the library confluent-kafka's cimpl loaded. */
static int resolve(PyObject *cimpl) {
        PyObject *file = PyObject_GetAttrString(cimpl, "__file__");
        if (!file)
                return -1;
        const char *path = PyUnicode_AsUTF8(file);
        void *library = path ? dlopen(path, RTLD_NOW | RTLD_NOLOAD) : NULL;
        Py_DECREF(file);
        if (!library) {
                if (!PyErr_Occurred())
                        PyErr_Format(PyExc_ImportError, "_fastconsume: %s", dlerror());
                return -1;
        }
        struct {
                void **slot;
                const char *name;
        } wanted[] = {
            {(void **)&rdk.type, "rd_kafka_type"},
            {(void **)&rdk.name, "rd_kafka_name"},
            {(void **)&rdk.opaque, "rd_kafka_opaque"},
            {(void **)&rdk.queue_get_consumer, "rd_kafka_queue_get_consumer"},
            {(void **)&rdk.queue_destroy, "rd_kafka_queue_destroy"},
            {(void **)&rdk.queue_yield, "rd_kafka_queue_yield"},
            {(void **)&rdk.consume_batch_queue, "rd_kafka_consume_batch_queue"},
            {(void **)&rdk.message_destroy, "rd_kafka_message_destroy"},
            {(void **)&rdk.topic_name, "rd_kafka_topic_name"},
            {(void **)&rdk.err2str, "rd_kafka_err2str"},
            {(void **)&rdk.last_error, "rd_kafka_last_error"},
        };
        for (size_t i = 0; i < sizeof(wanted) / sizeof(wanted[0]); i++)
                if (!(*wanted[i].slot = dlsym(library, wanted[i].name))) {
                        PyErr_Format(PyExc_ImportError, "_fastconsume: %s not found: %s",
                                     wanted[i].name, dlerror());
                        return -1;
                }
        return 0; /* the handle stays open: cimpl (and so librdkafka) is never unloaded */
}

/* The Consumer type and error classes, refusing a confluent-kafka of another layout. */
static int bind(PyObject *cimpl) {
        PyObject *version = PyObject_CallMethod(cimpl, "version", NULL);
        if (!version)
                return -1;
        /* cimpl.version(): the version string */
        const char *found = PyUnicode_Check(version) ? PyUnicode_AsUTF8(version) : NULL;
        if (!found || strcmp(found, CONFLUENT_KAFKA_VERSION) != 0) {
                PyErr_Format(PyExc_ImportError,
                             "_fastconsume reads confluent-kafka " CONFLUENT_KAFKA_VERSION
                             "'s Handle layout; found version %s",
                             found ? found : "?");
                Py_DECREF(version);
                return -1;
        }
        Py_DECREF(version);
        consumer_type = (PyTypeObject *)PyObject_GetAttrString(cimpl, "Consumer");
        kafka_error = PyObject_GetAttrString(cimpl, "KafkaError");
        kafka_exception = PyObject_GetAttrString(cimpl, "KafkaException");
        if (!consumer_type || !kafka_error || !kafka_exception)
                return -1;
        if (!PyType_Check(consumer_type)) {
                PyErr_SetString(PyExc_ImportError, "_fastconsume: cimpl.Consumer is not a type");
                return -1;
        }
        return 0;
}

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_fastconsume",
    "Batched consume from a confluent-kafka Consumer's handle into packed columns.", -1,
    methods,
};

PyMODINIT_FUNC PyInit__fastconsume(void) {
        PyObject *cimpl = PyImport_ImportModule("confluent_kafka.cimpl");
        if (!cimpl)
                return NULL;
        int failed = bind(cimpl) < 0 || resolve(cimpl) < 0 || PyType_Ready(&payload_type) < 0;
        Py_DECREF(cimpl);
        PyObject *created = failed ? NULL : PyModule_Create(&module);
        if (created && PyModule_AddObjectRef(created, "Payload", (PyObject *)&payload_type) < 0)
                Py_CLEAR(created);
        return created;
}
