/*
 * _skippable: whether msgspec may skip the values of JSON records a query does not read.
 *
 * msgspec skips a value it does not decode (an unknown field) checking its JSON grammar, its
 * strings' escapes, surrogates and control characters, but neither UTF-8 nor whether a number
 * fits a double, both of which the engine's reference (orjson) refuses: `1e999`, a 400-digit
 * integer, an invalid UTF-8 byte in a string. `skippable(records)` is true when no record can
 * hold any of them: every byte ASCII (so valid UTF-8), no digit followed by `e` or `E` (so no
 * exponent) and fewer than `MAX_DIGITS` digits a record (so no number beyond 1e300). It is
 * conservative: a record with an exponent or a long digit run inside a string fails it too, and
 * its batch takes the decoder that checks every value (`typed_json`).
 *
 * The scan reads 16 bytes at a time with SSE2 where the compiler targets it (every x86-64), a
 * byte at a time otherwise; a record is read in place through the buffer protocol (bytes, or a
 * Kafka record where the consumer holds it).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#define MAX_DIGITS 300

/* Bytes from `start` to `end`: 1 when all ASCII with no digit before an e/E; `*digits` counts
 * the digits, `*after_digit` says whether the byte before `start` was a digit. */
static int scan_bytes(const unsigned char *start, const unsigned char *end, Py_ssize_t *digits,
                      int *after_digit)
{
    for (const unsigned char *p = start; p < end; p++) {
        unsigned char c = *p;
        if (c & 0x80) {
            return 0;
        }
        int digit = (unsigned char)(c - '0') <= 9;
        if (!digit && *after_digit && (c | 0x20) == 'e') {
            return 0;
        }
        *digits += digit;
        *after_digit = digit;
    }
    return 1;
}

static int plain(const unsigned char *data, Py_ssize_t size)
{
    Py_ssize_t digits = 0;
    int after_digit = 0;
    const unsigned char *p = data, *end = data + size;
#if defined(__SSE2__)
    const __m128i zero = _mm_setzero_si128(), nine = _mm_set1_epi8(9);
    const __m128i digit_zero = _mm_set1_epi8('0'), lower = _mm_set1_epi8(0x20);
    const __m128i letter_e = _mm_set1_epi8('e');
    __m128i high = zero;
    while (end - p >= 16) {
        __m128i counts = zero; /* digits per byte lane, at most 255 blocks between flushes */
        for (int block = 0; block < 255 && end - p >= 16; block++, p += 16) {
            __m128i bytes = _mm_loadu_si128((const __m128i *)p);
            __m128i offset = _mm_sub_epi8(bytes, digit_zero);
            __m128i digit = _mm_cmpeq_epi8(_mm_min_epu8(offset, nine), offset);
            __m128i e = _mm_cmpeq_epi8(_mm_or_si128(bytes, lower), letter_e);
            unsigned digit_bits = (unsigned)_mm_movemask_epi8(digit);
            unsigned e_bits = (unsigned)_mm_movemask_epi8(e);
            if (e_bits & ((digit_bits << 1) | (unsigned)after_digit)) {
                return 0;
            }
            after_digit = (int)(digit_bits >> 15);
            high = _mm_or_si128(high, bytes);
            counts = _mm_sub_epi8(counts, digit);
        }
        __m128i sums = _mm_sad_epu8(counts, zero);
        digits += _mm_cvtsi128_si32(sums) + _mm_cvtsi128_si32(_mm_srli_si128(sums, 8));
    }
    if (_mm_movemask_epi8(high)) {
        return 0;
    }
#endif
    return scan_bytes(p, end, &digits, &after_digit) && digits < MAX_DIGITS;
}

static PyObject *skippable(PyObject *module, PyObject *records)
{
    PyObject *iterator = PyObject_GetIter(records);
    if (iterator == NULL) {
        return NULL;
    }
    int result = 1;
    PyObject *record;
    while (result && (record = PyIter_Next(iterator)) != NULL) {
        Py_buffer view;
        if (PyObject_GetBuffer(record, &view, PyBUF_SIMPLE) < 0) {
            Py_DECREF(record);
            Py_DECREF(iterator);
            return NULL;
        }
        result = plain((const unsigned char *)view.buf, view.len);
        PyBuffer_Release(&view);
        Py_DECREF(record);
    }
    Py_DECREF(iterator);
    if (PyErr_Occurred()) {
        return NULL;
    }
    return PyBool_FromLong(result);
}

static PyMethodDef methods[] = {
    {"skippable", skippable, METH_O,
     "skippable(records) -> bool: every record ASCII, without exponents and with fewer than "
     "300 digits."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_skippable", "Whether msgspec may skip JSON values unchecked.", -1,
    methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__skippable(void)
{
    return PyModule_Create(&module);
}
