/*
 * _arenas: keep the arenas Python's small-object allocator frees, up to a byte limit, and hand
 * them back when it asks for new ones, instead of returning them to the kernel at once.
 *
 * pymalloc takes memory for objects of up to 512 bytes in arenas (1 MiB in 3.11, from mmap) and
 * unmaps an arena as soon as its last object is freed (it keeps one empty arena at most). The
 * engine builds and drops tens of MB of such objects per batch (a JSON worker's record values,
 * msgspec's decoded records, result rows), so every batch mapped fresh arenas, took a page fault
 * and a zeroed page per 4 KB touched, and unmapped them again: a large share of a JSON worker
 * loop's CPU went to those page faults and unmaps (docs/performance.md). A kept arena is reused
 * as it is, its pages already resident (pymalloc needs no zeroed memory).
 *
 * `keep(limit)` installs the allocator (once per process; Python's own allocator stays
 * underneath it: arenas come from it and go back to it) and sets how many bytes of freed arenas
 * it keeps; lowering the limit gives the excess back at once, 0 keeps none. Arena allocation and
 * release run with the GIL held, as all of pymalloc does, so the cache needs no lock of its own.
 * An arena allocated before `keep` is freed the same way as one after: both come from the same
 * underlying allocator.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#define MAX_KEPT 16384 /* arenas: 16 GiB of 1 MiB arenas, far above any sensible limit */

typedef struct {
    void *arena;
    size_t size;
} Kept;

static PyObjectArenaAllocator underlying;
static Kept kept[MAX_KEPT];
static Py_ssize_t kept_count = 0;
static size_t kept_bytes = 0;
static size_t limit_bytes = 0;
static int installed = 0;

static void *arena_alloc(void *ctx, size_t size)
{
    for (Py_ssize_t i = kept_count - 1; i >= 0; i--) {
        if (kept[i].size == size) {
            void *arena = kept[i].arena;
            kept[i] = kept[kept_count - 1];
            kept_count--;
            kept_bytes -= size;
            return arena;
        }
    }
    return underlying.alloc(underlying.ctx, size);
}

static void arena_free(void *ctx, void *arena, size_t size)
{
    if (arena != NULL && kept_count < MAX_KEPT && kept_bytes + size <= limit_bytes) {
        kept[kept_count].arena = arena;
        kept[kept_count].size = size;
        kept_count++;
        kept_bytes += size;
        return;
    }
    underlying.free(underlying.ctx, arena, size);
}

static PyObject *keep(PyObject *self, PyObject *args)
{
    Py_ssize_t limit;
    if (!PyArg_ParseTuple(args, "n:keep", &limit)) {
        return NULL;
    }
    if (limit < 0) {
        PyErr_SetString(PyExc_ValueError, "keep: the limit must not be negative");
        return NULL;
    }
    if (!installed) {
        PyObject_GetArenaAllocator(&underlying);
        PyObjectArenaAllocator caching = {NULL, arena_alloc, arena_free};
        PyObject_SetArenaAllocator(&caching);
        installed = 1;
    }
    limit_bytes = (size_t)limit;
    while (kept_bytes > limit_bytes) {
        kept_count--;
        kept_bytes -= kept[kept_count].size;
        underlying.free(underlying.ctx, kept[kept_count].arena, kept[kept_count].size);
    }
    Py_RETURN_NONE;
}

static PyObject *kept_now(PyObject *self, PyObject *unused)
{
    return PyLong_FromSize_t(kept_bytes);
}

static PyMethodDef methods[] = {
    {"keep", keep, METH_VARARGS,
     "keep(limit): keep up to `limit` bytes of freed arenas for reuse (installs the cache)."},
    {"kept", kept_now, METH_NOARGS, "kept(): bytes of freed arenas kept now."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT,
    "_arenas",
    "Reuse of freed pymalloc arenas up to a byte limit (see _arenas.c).",
    -1,
    methods,
};

PyMODINIT_FUNC PyInit__arenas(void)
{
    return PyModule_Create(&module);
}
