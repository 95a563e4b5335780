/*
 * _rowtext: each row's text as the concatenation of its parts, for the JSON encoding of results.
 *
 * `join(count, parts)` does what Arrow's `binary_join_element_wise(*parts, "")` does for string
 * arrays without nulls and constants: row by row, the bytes of each part in turn. Arrow's kernel
 * takes about 10 ns a part and row whether the part is a constant or an array (a result record
 * has some 14 parts); here a row is a few `memcpy`s. A part is a `bytes` constant, a pair
 * `(offsets, data)` of an Arrow string array's buffers: `count + 1` int32 offsets (from the
 * array's own offset on) and the data they index, or a 1-tuple `(values,)` of `count` int64
 * values, written in decimal as Arrow's cast to string writes them (`-` and the digits, no
 * leading zeros). The result is the pair `(data, offsets)` of a binary array: the rows back to
 * back, and `count + 1` int32 offsets from 0.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

enum Kind { CONSTANT, STRINGS, INTEGERS };

typedef struct {
    Py_buffer offsets; /* strings only */
    Py_buffer data;    /* strings: their bytes; integers: the values */
    const int32_t *ends;
    const int64_t *values;
    const char *bytes;
    Py_ssize_t size; /* a constant's length */
    enum Kind kind;
} Part;

static void release(Part *parts, Py_ssize_t taken)
{
    for (Py_ssize_t k = 0; k < taken; k++) {
        if (parts[k].kind == STRINGS) {
            PyBuffer_Release(&parts[k].offsets);
        }
        if (parts[k].kind != CONSTANT) {
            PyBuffer_Release(&parts[k].data);
        }
    }
    PyMem_Free(parts);
}

/* The decimal text of `value` written ending just before `end`; returns where it starts. */
static char *decimal(int64_t value, char *end)
{
    uint64_t magnitude = value < 0 ? (uint64_t)0 - (uint64_t)value : (uint64_t)value;
    do {
        *--end = (char)('0' + magnitude % 10);
        magnitude /= 10;
    } while (magnitude);
    if (value < 0) {
        *--end = '-';
    }
    return end;
}

static Py_ssize_t decimal_size(int64_t value)
{
    char text[24];
    return text + sizeof(text) - decimal(value, text + sizeof(text));
}

/* Reads `item` into `part`; 0 on success, -1 with an exception set. */
static int take(PyObject *item, Part *part, Py_ssize_t count)
{
    if (PyBytes_Check(item)) {
        part->kind = CONSTANT;
        part->bytes = PyBytes_AS_STRING(item);
        part->size = PyBytes_GET_SIZE(item);
        return 0;
    }
    if (PyTuple_Check(item) && PyTuple_GET_SIZE(item) == 1) {
        if (PyObject_GetBuffer(PyTuple_GET_ITEM(item, 0), &part->data, PyBUF_C_CONTIGUOUS) < 0) {
            return -1;
        }
        part->kind = INTEGERS;
        part->values = (const int64_t *)part->data.buf;
        if (part->data.len != (Py_ssize_t)sizeof(int64_t) * count) {
            PyBuffer_Release(&part->data);
            PyErr_SetString(PyExc_ValueError, "integers: not count int64 values");
            return -1;
        }
        return 0;
    }
    PyObject *offsets, *data;
    if (!PyTuple_Check(item) || PyTuple_GET_SIZE(item) != 2) {
        PyErr_SetString(PyExc_TypeError, "a part is bytes, (offsets, data) or (values,)");
        return -1;
    }
    offsets = PyTuple_GET_ITEM(item, 0);
    data = PyTuple_GET_ITEM(item, 1);
    if (PyObject_GetBuffer(offsets, &part->offsets, PyBUF_C_CONTIGUOUS) < 0) {
        return -1;
    }
    if (PyObject_GetBuffer(data, &part->data, PyBUF_C_CONTIGUOUS) < 0) {
        PyBuffer_Release(&part->offsets);
        return -1;
    }
    part->kind = STRINGS;
    part->ends = (const int32_t *)part->offsets.buf;
    part->bytes = (const char *)part->data.buf;
    if (part->offsets.len < (Py_ssize_t)sizeof(int32_t) * (count + 1)) {
        PyErr_SetString(PyExc_ValueError, "fewer offsets than rows + 1");
        goto fail;
    }
    for (Py_ssize_t row = 0; row < count; row++) {
        if (part->ends[row] < 0 || part->ends[row] > part->ends[row + 1]) {
            PyErr_SetString(PyExc_ValueError, "offsets not ascending from 0 or more");
            goto fail;
        }
    }
    if (part->ends[count] > part->data.len) {
        PyErr_SetString(PyExc_ValueError, "offsets beyond the data");
        goto fail;
    }
    return 0;
fail:
    PyBuffer_Release(&part->offsets);
    PyBuffer_Release(&part->data);
    return -1;
}

static PyObject *join(PyObject *module, PyObject *args)
{
    Py_ssize_t count;
    PyObject *items;
    if (!PyArg_ParseTuple(args, "nO!", &count, &PyList_Type, &items)) {
        return NULL;
    }
    if (count < 0) {
        PyErr_SetString(PyExc_ValueError, "a negative count");
        return NULL;
    }
    Py_ssize_t n = PyList_GET_SIZE(items);
    Part *parts = PyMem_Calloc(n ? n : 1, sizeof(Part));
    if (parts == NULL) {
        return PyErr_NoMemory();
    }
    long long total = 0;
    for (Py_ssize_t k = 0; k < n; k++) {
        if (take(PyList_GET_ITEM(items, k), &parts[k], count) < 0) {
            release(parts, k);
            return NULL;
        }
        const Part *part = &parts[k];
        if (part->kind == CONSTANT) {
            total += (long long)part->size * count;
        } else if (part->kind == STRINGS) {
            total += (long long)part->ends[count] - part->ends[0];
        } else {
            for (Py_ssize_t row = 0; row < count; row++) {
                total += decimal_size(part->values[row]);
            }
        }
        if (total > INT32_MAX) {
            release(parts, k + 1);
            PyErr_SetString(PyExc_OverflowError, "more than 2 GiB of text");
            return NULL;
        }
    }
    PyObject *data = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)total);
    PyObject *offsets = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)sizeof(int32_t) * (count + 1));
    if (data == NULL || offsets == NULL) {
        Py_XDECREF(data);
        Py_XDECREF(offsets);
        release(parts, n);
        return NULL;
    }
    char *out = PyBytes_AS_STRING(data);
    int32_t *ends = (int32_t *)PyBytes_AS_STRING(offsets);
    int32_t at = 0;
    ends[0] = 0;
    for (Py_ssize_t row = 0; row < count; row++) {
        for (Py_ssize_t k = 0; k < n; k++) {
            const Part *part = &parts[k];
            const char *from = part->bytes;
            Py_ssize_t size = part->size;
            char text[24];
            if (part->kind == STRINGS) {
                from += part->ends[row];
                size = part->ends[row + 1] - part->ends[row];
            } else if (part->kind == INTEGERS) {
                from = decimal(part->values[row], text + sizeof(text));
                size = text + sizeof(text) - from;
            }
            memcpy(out + at, from, (size_t)size);
            at += (int32_t)size;
        }
        ends[row + 1] = at;
    }
    release(parts, n);
    PyObject *pair = PyTuple_Pack(2, data, offsets);
    Py_DECREF(data);
    Py_DECREF(offsets);
    return pair;
}

static PyMethodDef methods[] = {
    {"join", join, METH_VARARGS,
     "join(count, parts) -> (data, offsets): each row's parts (bytes constants, (offsets, data) "
     "string buffers or (values,) int64 values) concatenated, as a binary array's buffers."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_rowtext", "Each row's text as the concatenation of its parts.", -1,
    methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__rowtext(void)
{
    return PyModule_Create(&module);
}
