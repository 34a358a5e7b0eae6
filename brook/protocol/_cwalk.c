/*
 * The schema walk's fast path (brook.protocol.schema_walk), in C.
 *
 * Every message the broker and the client read is walked along its schema before kio reads
 * it: each length and count must fit in the bytes that remain, nulls only where the schema
 * allows them. The Python walk does it for any message and says what is wrong; walked in
 * Python, a three-partition Produce request costs several microseconds of the broker's time.
 * This module runs the same checks over a program compiled from the schema
 * (schema_walk._program) and answers True only when the message passed every one of them and
 * carries no tagged field at all. Anything else (an error, a tagged field, a program it does
 * not understand) answers False, and the Python walk decides and explains: this code can
 * only say "fine" where the Python walk would, never the reverse.
 *
 * The program is an array of int32 (native byte order), four per op:
 *   op 0..: (opcode, a, b, c)
 *   FIXED   a = size                     STRING, BYTES  a = flags
 *   ARRAY   a = flags, b = least bytes an element takes (>= 1), c = op index of the element
 *   STRUCT  a = op index of the struct's first op      NSTRUCT (int8 marker, -1 null) same
 *   TAGS    the tagged-field section of a flexible struct: only an empty one passes
 *   END     the struct's last op
 * flags: 1 = flexible (compact uvarint length + 1), 2 = nullable.
 * A struct's ops run from its first op to its END; op 0 starts the message's struct.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

enum { OP_END = 0, OP_FIXED = 1, OP_STRING = 2, OP_BYTES = 3, OP_ARRAY = 4,
       OP_STRUCT = 5, OP_NSTRUCT = 6, OP_TAGS = 7 };
enum { F_FLEXIBLE = 1, F_NULLABLE = 2 };

#define MAX_STRING 0x7FFF
#define MAX_DEPTH 32

typedef struct {
    const int32_t *ops;
    Py_ssize_t n_ops;
    const unsigned char *data;
    Py_ssize_t end;
} Walk;

/* An unsigned varint of at most 5 bytes, as Kafka and kio read them; 0 when it does not fit. */
static int
read_uvarint(const Walk *w, Py_ssize_t *pos, int64_t *out)
{
    Py_ssize_t p = *pos;
    int64_t result = 0;
    for (int shift = 0; shift <= 28; shift += 7) {
        if (p >= w->end) {
            return 0;
        }
        unsigned char b = w->data[p++];
        result |= (int64_t)(b & 0x7F) << shift;
        if (!(b & 0x80)) {
            *pos = p;
            *out = result;
            return 1;
        }
    }
    return 0;
}

/* The length or count of a field: compact (uvarint - 1) or int16 / int32, -1 for null. */
static int
read_length(const Walk *w, Py_ssize_t *pos, int flags, int int16, int64_t *out)
{
    if (flags & F_FLEXIBLE) {
        int64_t raw;
        if (!read_uvarint(w, pos, &raw)) {
            return 0;
        }
        *out = raw - 1;
        return 1;
    }
    Py_ssize_t p = *pos;
    const unsigned char *d = w->data;
    if (int16) {
        if (p + 2 > w->end) {
            return 0;
        }
        *out = (int16_t)(((uint16_t)d[p] << 8) | d[p + 1]);
        *pos = p + 2;
        return 1;
    }
    if (p + 4 > w->end) {
        return 0;
    }
    *out = (int32_t)(((uint32_t)d[p] << 24) | ((uint32_t)d[p + 1] << 16) |
                     ((uint32_t)d[p + 2] << 8) | (uint32_t)d[p + 3]);
    *pos = p + 4;
    return 1;
}

static int walk_struct(const Walk *w, Py_ssize_t first, Py_ssize_t *pos, int depth);

/* One value of the op at index ``op``; 1 when it passed. */
static int
walk_value(const Walk *w, Py_ssize_t op, Py_ssize_t *pos, int depth)
{
    if (op < 0 || op >= w->n_ops) {
        return 0;
    }
    const int32_t *o = w->ops + 4 * op;
    int64_t n;
    switch (o[0]) {
    case OP_FIXED:
        if (o[1] < 0 || o[1] > w->end - *pos) {
            return 0;
        }
        *pos += o[1];
        return 1;
    case OP_STRING:
    case OP_BYTES:
        if (!read_length(w, pos, o[1], o[0] == OP_STRING, &n)) {
            return 0;
        }
        if (n < 0) {
            return n == -1 && (o[1] & F_NULLABLE);
        }
        if (n > w->end - *pos || (o[0] == OP_STRING && n > MAX_STRING)) {
            return 0;
        }
        *pos += (Py_ssize_t)n;
        return 1;
    case OP_ARRAY: {
        if (!read_length(w, pos, o[1], 0, &n)) {
            return 0;
        }
        if (n < 0) {
            return n == -1 && (o[1] & F_NULLABLE);
        }
        int64_t least = o[2] < 1 ? 1 : o[2];
        /* n < 2^35 and least is a few hundred at most: no overflow */
        if (n * least > (int64_t)(w->end - *pos)) {
            return 0;
        }
        Py_ssize_t item = o[3];
        if (item < 0 || item >= w->n_ops) {
            return 0;
        }
        const int32_t *it = w->ops + 4 * item;
        if (it[0] == OP_FIXED) {
            if (it[1] < 0 || n * it[1] > (int64_t)(w->end - *pos)) {
                return 0;
            }
            *pos += (Py_ssize_t)(n * it[1]);
            return 1;
        }
        for (int64_t i = 0; i < n; i++) {
            if (!walk_value(w, item, pos, depth + 1)) {
                return 0;
            }
        }
        return 1;
    }
    case OP_STRUCT:
        return walk_struct(w, o[1], pos, depth + 1);
    case OP_NSTRUCT:
        if (*pos >= w->end) {
            return 0;
        }
        if (w->data[*pos] == 0xFF) {
            *pos += 1;
            return 1;
        }
        *pos += 1;
        return walk_struct(w, o[1], pos, depth + 1);
    default:
        return 0;
    }
}

/* A struct's ops from ``first`` to its END. */
static int
walk_struct(const Walk *w, Py_ssize_t first, Py_ssize_t *pos, int depth)
{
    if (depth > MAX_DEPTH) {
        return 0;
    }
    for (Py_ssize_t op = first; op >= 0 && op < w->n_ops; op++) {
        int32_t code = w->ops[4 * op];
        if (code == OP_END) {
            return 1;
        }
        if (code == OP_TAGS) {
            /* only an empty section passes: tags, known or not, are the Python walk's */
            if (*pos >= w->end || w->data[*pos] != 0) {
                return 0;
            }
            *pos += 1;
            continue;
        }
        if (!walk_value(w, op, pos, depth)) {
            return 0;
        }
    }
    return 0; /* ran off the program */
}

static PyObject *
walk(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    (void)self;
    if (nargs != 3) {
        PyErr_SetString(PyExc_TypeError, "walk(program, data, offset)");
        return NULL;
    }
    Py_ssize_t offset = PyLong_AsSsize_t(args[2]);
    if (offset == -1 && PyErr_Occurred()) {
        return NULL;
    }
    Py_buffer program, data;
    if (PyObject_GetBuffer(args[0], &program, PyBUF_SIMPLE) < 0) {
        return NULL;
    }
    if (PyObject_GetBuffer(args[1], &data, PyBUF_SIMPLE) < 0) {
        PyBuffer_Release(&program);
        return NULL;
    }
    int ok = 0;
    if (program.len % 16 == 0 && offset >= 0 && offset <= data.len) {
        Walk w = {(const int32_t *)program.buf, program.len / 16,
                  (const unsigned char *)data.buf, data.len};
        Py_ssize_t pos = offset;
        ok = walk_struct(&w, 0, &pos, 0);
    }
    PyBuffer_Release(&data);
    PyBuffer_Release(&program);
    return PyBool_FromLong(ok);
}

static PyMethodDef methods[] = {
    {"walk", (PyCFunction)(void (*)(void))walk, METH_FASTCALL,
     "True when the message at data[offset:] passes every check of the compiled schema "
     "program and carries no tagged field (see schema_walk.py)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "_cwalk",
    .m_doc = "The schema walk's fast path in C for Brook's broker and client.",
    .m_size = -1,
    .m_methods = methods,
};

PyMODINIT_FUNC
PyInit__cwalk(void)
{
    return PyModule_Create(&module);
}
