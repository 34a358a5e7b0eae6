/*
 * The consumer's record decoder in C, the column buffers the Spark source builds from the
 * records it decodes, and the producer's per-record encoding (record body and append to an
 * open batch; pure-Python references in brook.client.producer.batch). The decoder has the same contract as the pure-Python
 * brook.protocol.records._decode_records_into_py, which stays the reference and the
 * fallback when this module is not built. Every read is bounds-checked against the
 * record's own length; malformed input raises brook.protocol.batch.CorruptBatch.
 *
 *   record := length varint, attributes int8, timestampDelta varlong, offsetDelta varint,
 *             keyLength varint, key, valueLength varint, value,
 *             headerCount varint, (keyLength varint, key utf8, valueLength varint, value)*
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

static PyObject *CorruptBatch = NULL;

/* A zigzag varint from [*pos, end): a varlong (``limit`` 63, up to 10 bytes) or, as Kafka
 * reads every field but the timestamp delta, a 32-bit varint (``limit`` 28, up to 5 bytes);
 * -1 and an exception on failure. */
static int
read_varint_upto(const unsigned char *data, Py_ssize_t *pos, Py_ssize_t end, int64_t *out,
                 int limit)
{
    uint64_t raw = 0;
    int shift = 0;
    Py_ssize_t p = *pos;
    for (;;) {
        if (p >= end) {
            PyErr_SetString(CorruptBatch, "record runs past its batch");
            return -1;
        }
        unsigned char b = data[p++];
        raw |= (uint64_t)(b & 0x7F) << shift;
        if (!(b & 0x80)) {
            break;
        }
        shift += 7;
        if (shift > limit) {
            PyErr_SetString(CorruptBatch, "varint too long");
            return -1;
        }
    }
    *pos = p;
    *out = (int64_t)(raw >> 1) ^ -(int64_t)(raw & 1);
    return 0;
}

static int
read_varint(const unsigned char *data, Py_ssize_t *pos, Py_ssize_t end, int64_t *out)
{
    return read_varint_upto(data, pos, end, out, 28);
}

/* A nullable byte string of the varint length at *pos; Py_None for length -1. */
static PyObject *
read_bytes(const unsigned char *data, Py_ssize_t *pos, Py_ssize_t end, int64_t *size)
{
    if (read_varint(data, pos, end, size) < 0) {
        return NULL;
    }
    if (*size == -1) {
        Py_RETURN_NONE;
    }
    if (*size < -1 || *size > end - *pos) {
        PyErr_SetString(CorruptBatch, "record length does not match its fields");
        return NULL;
    }
    PyObject *result = PyBytes_FromStringAndSize((const char *)data + *pos, (Py_ssize_t)*size);
    *pos += (Py_ssize_t)*size;
    return result;
}

static PyObject *
read_headers(const unsigned char *data, Py_ssize_t *pos, Py_ssize_t end)
{
    int64_t count;
    if (read_varint(data, pos, end, &count) < 0) {
        return NULL;
    }
    if (count < 0 || count > end - *pos) {
        PyErr_SetString(CorruptBatch, "record length does not match its fields");
        return NULL;
    }
    PyObject *headers = PyTuple_New((Py_ssize_t)count);
    if (headers == NULL) {
        return NULL;
    }
    for (Py_ssize_t i = 0; i < (Py_ssize_t)count; i++) {
        int64_t klen, vlen;
        if (read_varint(data, pos, end, &klen) < 0) {
            goto fail;
        }
        if (klen < 0 || klen > end - *pos) {
            PyErr_SetString(CorruptBatch, klen < 0 ? "null header key"
                                                   : "record length does not match its fields");
            goto fail;
        }
        PyObject *name = PyUnicode_DecodeUTF8((const char *)data + *pos, (Py_ssize_t)klen,
                                              "replace");
        if (name == NULL) {
            goto fail;
        }
        *pos += (Py_ssize_t)klen;
        PyObject *value = read_bytes(data, pos, end, &vlen);
        if (value == NULL) {
            Py_DECREF(name);
            goto fail;
        }
        PyObject *pair = PyTuple_Pack(2, name, value);
        Py_DECREF(name);
        Py_DECREF(value);
        if (pair == NULL) {
            goto fail;
        }
        PyTuple_SET_ITEM(headers, i, pair);
    }
    return headers;
fail:
    Py_DECREF(headers);
    return NULL;
}

/* decode_into(out, record_type, data, count, base_offset, base_timestamp, topic, partition,
 *             timestamp_type, leader_epoch, min_offset, log_append_time, start, end) */
static PyObject *
decode_into(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    (void)module;
    if (nargs != 14) {
        PyErr_SetString(PyExc_TypeError, "decode_into takes exactly 14 arguments");
        return NULL;
    }
    PyObject *out = args[0];
    PyTypeObject *record_type = (PyTypeObject *)args[1];
    if (!PyList_Check(out) || !PyType_Check(args[1]) ||
        !PyType_IsSubtype(record_type, &PyTuple_Type)) {
        PyErr_SetString(PyExc_TypeError, "decode_into needs a list and a tuple subclass");
        return NULL;
    }
    Py_ssize_t count = PyLong_AsSsize_t(args[3]);
    long long base_offset = PyLong_AsLongLong(args[4]);
    long long base_timestamp = PyLong_AsLongLong(args[5]);
    long long min_offset = PyLong_AsLongLong(args[10]);
    int has_append_time = args[11] != Py_None;
    long long append_time = has_append_time ? PyLong_AsLongLong(args[11]) : 0;
    Py_ssize_t start = PyLong_AsSsize_t(args[12]);
    if (PyErr_Occurred()) {
        return NULL;
    }
    PyObject *topic = args[6], *partition = args[7], *timestamp_type = args[8];
    PyObject *leader_epoch = args[9];

    Py_buffer view;
    if (PyObject_GetBuffer(args[2], &view, PyBUF_SIMPLE) < 0) {
        return NULL;
    }
    const unsigned char *data = (const unsigned char *)view.buf;
    Py_ssize_t end = view.len;
    if (args[13] != Py_None) {
        end = PyLong_AsSsize_t(args[13]);
        if (end == -1 && PyErr_Occurred()) {
            goto fail;
        }
    }
    if (start < 0 || end > view.len || start > end) {
        PyErr_SetString(PyExc_ValueError, "start and end must lie within the data");
        goto fail;
    }

    Py_ssize_t pos = start;
    PyObject *log_time = has_append_time ? PyLong_FromLongLong(append_time) : NULL;
    if (has_append_time && log_time == NULL) {
        goto fail;
    }
    for (Py_ssize_t i = 0; i < count; i++) {
        int64_t length, ts_delta, offset_delta, key_size, value_size;
        if (read_varint(data, &pos, end, &length) < 0) {
            goto fail_record;
        }
        if (length < 6 || length > end - pos) {
            PyErr_SetString(CorruptBatch, "record runs past its batch");
            goto fail_record;
        }
        Py_ssize_t record_end = pos + (Py_ssize_t)length;
        pos += 1; /* attributes: unused in v2 */
        if (read_varint_upto(data, &pos, record_end, &ts_delta, 63) < 0 ||
            read_varint(data, &pos, record_end, &offset_delta) < 0) {
            goto fail_record;
        }
        long long offset, timestamp;
        if (__builtin_add_overflow(base_offset, (long long)offset_delta, &offset)) {
            PyErr_SetString(CorruptBatch, "offset out of range");
            goto fail_record;
        }
        if (offset < min_offset) {
            pos = record_end;
            continue;
        }
        PyObject *key = read_bytes(data, &pos, record_end, &key_size);
        if (key == NULL) {
            goto fail_record;
        }
        PyObject *value = read_bytes(data, &pos, record_end, &value_size);
        if (value == NULL) {
            Py_DECREF(key);
            goto fail_record;
        }
        PyObject *headers = read_headers(data, &pos, record_end);
        if (headers == NULL) {
            Py_DECREF(key);
            Py_DECREF(value);
            goto fail_record;
        }
        if (pos != record_end ||
            __builtin_add_overflow(base_timestamp, (long long)ts_delta, &timestamp)) {
            Py_DECREF(key);
            Py_DECREF(value);
            Py_DECREF(headers);
            PyErr_SetString(CorruptBatch, pos != record_end
                                              ? "record length does not match its fields"
                                              : "timestamp out of range");
            goto fail_record;
        }
        PyObject *record = record_type->tp_alloc(record_type, 11);
        PyObject *offset_obj = PyLong_FromLongLong(offset);
        PyObject *ts_obj = has_append_time ? Py_NewRef(log_time) : PyLong_FromLongLong(timestamp);
        PyObject *key_size_obj = PyLong_FromLongLong(key_size);
        PyObject *value_size_obj = PyLong_FromLongLong(value_size);
        if (record == NULL || offset_obj == NULL || ts_obj == NULL || key_size_obj == NULL ||
            value_size_obj == NULL) {
            Py_XDECREF(record);
            Py_XDECREF(offset_obj);
            Py_XDECREF(ts_obj);
            Py_XDECREF(key_size_obj);
            Py_XDECREF(value_size_obj);
            Py_DECREF(key);
            Py_DECREF(value);
            Py_DECREF(headers);
            goto fail_record;
        }
        PyTuple_SET_ITEM(record, 0, Py_NewRef(topic));
        PyTuple_SET_ITEM(record, 1, Py_NewRef(partition));
        PyTuple_SET_ITEM(record, 2, offset_obj);
        PyTuple_SET_ITEM(record, 3, ts_obj);
        PyTuple_SET_ITEM(record, 4, Py_NewRef(timestamp_type));
        PyTuple_SET_ITEM(record, 5, key);
        PyTuple_SET_ITEM(record, 6, value);
        PyTuple_SET_ITEM(record, 7, headers);
        PyTuple_SET_ITEM(record, 8, Py_NewRef(leader_epoch));
        PyTuple_SET_ITEM(record, 9, key_size_obj);
        PyTuple_SET_ITEM(record, 10, value_size_obj);
        int appended = PyList_Append(out, record);
        Py_DECREF(record);
        if (appended < 0) {
            goto fail_record;
        }
    }
    Py_XDECREF(log_time);
    PyBuffer_Release(&view);
    Py_RETURN_NONE;

fail_record:
    Py_XDECREF(log_time);
fail:
    PyBuffer_Release(&view);
    return NULL;
}

/* Append the bytes of a nullable bytes field of every record to one buffer, with Arrow's
 * int32 offsets and (when any is null) a validity bitmap; NULL with an exception on error. */
static PyObject *
binary_column(PyObject *records, Py_ssize_t n, Py_ssize_t field)
{
    Py_ssize_t total = 0, nulls = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *item = PyTuple_GET_ITEM(PyList_GET_ITEM(records, i), field);
        if (item == Py_None) {
            nulls++;
        } else if (PyBytes_Check(item)) {
            total += PyBytes_GET_SIZE(item);
        } else {
            PyErr_SetString(PyExc_TypeError, "record keys and values must be bytes or None");
            return NULL;
        }
    }
    if (total > INT32_MAX) {
        Py_RETURN_NONE; /* too large for Arrow's 32-bit offsets: the caller falls back */
    }
    PyObject *offsets = PyBytes_FromStringAndSize(NULL, (n + 1) * (Py_ssize_t)sizeof(int32_t));
    PyObject *data = PyBytes_FromStringAndSize(NULL, total);
    PyObject *validity = nulls ? PyBytes_FromStringAndSize(NULL, (n + 7) / 8) : Py_NewRef(Py_None);
    if (offsets == NULL || data == NULL || validity == NULL) {
        Py_XDECREF(offsets);
        Py_XDECREF(data);
        Py_XDECREF(validity);
        return NULL;
    }
    int32_t *off = (int32_t *)PyBytes_AS_STRING(offsets);
    char *out = PyBytes_AS_STRING(data);
    unsigned char *bits = nulls ? (unsigned char *)PyBytes_AS_STRING(validity) : NULL;
    if (bits != NULL) {
        memset(bits, 0, (size_t)((n + 7) / 8));
    }
    int32_t at = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        off[i] = at;
        PyObject *item = PyTuple_GET_ITEM(PyList_GET_ITEM(records, i), field);
        if (item != Py_None) {
            Py_ssize_t len = PyBytes_GET_SIZE(item);
            memcpy(out + at, PyBytes_AS_STRING(item), (size_t)len);
            at += (int32_t)len;
            if (bits != NULL) {
                bits[i >> 3] |= (unsigned char)(1u << (i & 7));
            }
        }
    }
    off[n] = at;
    return Py_BuildValue("(NNN)", validity, offsets, data);
}

/* Fill an int64 or int32 column from an int field of every record, times ``scale``. */
static PyObject *
int_column(PyObject *records, Py_ssize_t n, Py_ssize_t field, int wide, long long scale)
{
    Py_ssize_t width = wide ? 8 : 4;
    PyObject *column = PyBytes_FromStringAndSize(NULL, n * width);
    if (column == NULL) {
        return NULL;
    }
    char *out = PyBytes_AS_STRING(column);
    for (Py_ssize_t i = 0; i < n; i++) {
        long long v = PyLong_AsLongLong(PyTuple_GET_ITEM(PyList_GET_ITEM(records, i), field));
        if (v == -1 && PyErr_Occurred()) {
            Py_DECREF(column);
            return NULL;
        }
        if (wide) {
            long long w;
            if (__builtin_mul_overflow(v, scale, &w)) {
                Py_DECREF(column);
                PyErr_SetString(PyExc_OverflowError, "timestamp out of range");
                return NULL;
            }
            int64_t w64 = (int64_t)w;
            memcpy(out + i * 8, &w64, 8);
        } else {
            int32_t w = (int32_t)v;
            memcpy(out + i * 4, &w, 4);
        }
    }
    return column;
}

/* record_columns(records) -> (key, value, offsets, timestamps_us, timestamp_types) for a list
 * of consumer record tuples: key and value as (validity bitmap or None, int32 offsets, data)
 * or None when their bytes do not fit 32-bit offsets; the rest as little-endian int64 /
 * int32 buffers. The buffers Arrow's binary, int64, timestamp and int32 arrays are made of. */
static PyObject *
record_columns(PyObject *module, PyObject *records)
{
    (void)module;
    if (!PyList_Check(records)) {
        PyErr_SetString(PyExc_TypeError, "record_columns needs a list of record tuples");
        return NULL;
    }
    Py_ssize_t n = PyList_GET_SIZE(records);
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *r = PyList_GET_ITEM(records, i);
        if (!PyTuple_Check(r) || PyTuple_GET_SIZE(r) < 7) {
            PyErr_SetString(PyExc_TypeError, "record_columns needs consumer record tuples");
            return NULL;
        }
    }
    PyObject *key = binary_column(records, n, 5);
    PyObject *value = key ? binary_column(records, n, 6) : NULL;
    PyObject *offsets = value ? int_column(records, n, 2, 1, 1) : NULL;
    PyObject *timestamps = offsets ? int_column(records, n, 3, 1, 1000) : NULL;
    PyObject *types = timestamps ? int_column(records, n, 4, 0, 1) : NULL;
    if (types == NULL) {
        Py_XDECREF(key);
        Py_XDECREF(value);
        Py_XDECREF(offsets);
        Py_XDECREF(timestamps);
        return NULL;
    }
    return Py_BuildValue("(NNNNN)", key, value, offsets, timestamps, types);
}

/* Skip a nullable byte string of the varint length at *pos; its length (-1 for null) in
 * *size. -1 and CorruptBatch when it does not fit before ``end``. */
static int
skip_bytes(const unsigned char *data, Py_ssize_t *pos, Py_ssize_t end, int64_t *size)
{
    if (read_varint(data, pos, end, size) < 0) {
        return -1;
    }
    if (*size < -1 || *size > end - *pos) {
        PyErr_SetString(CorruptBatch, "record length does not match its fields");
        return -1;
    }
    if (*size > 0) {
        *pos += (Py_ssize_t)*size;
    }
    return 0;
}

/* validate_records(data, count, base_timestamp, low, high, key_required, reject_timestamps)
 * -> (max_timestamp, problems): walk a batch's record data as a broker does before appending
 * a client's batch (see records.validate_records): CorruptBatch for a malformed record or
 * bytes left after ``count`` records; else the largest timestamp (-1 for none) and None, or
 * a list of (index, problem, offset_delta, timestamp, key_size, value_size) for every invalid
 * record: problem 1 for a null key when ``key_required``, else 2 when ``reject_timestamps``
 * or its timestamp, other than -1, lies outside [low, high]. */
static PyObject *
validate_records(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    (void)module;
    if (nargs != 7) {
        PyErr_SetString(PyExc_TypeError,
                        "validate_records(data, count, base_timestamp, low, high, key_required, "
                        "reject_timestamps)");
        return NULL;
    }
    Py_ssize_t count = PyLong_AsSsize_t(args[1]);
    long long base_timestamp = PyLong_AsLongLong(args[2]);
    long long low = PyLong_AsLongLong(args[3]);
    long long high = PyLong_AsLongLong(args[4]);
    if (PyErr_Occurred()) {
        return NULL;
    }
    int key_required = PyObject_IsTrue(args[5]);
    int reject_timestamps = key_required < 0 ? -1 : PyObject_IsTrue(args[6]);
    if (reject_timestamps < 0) {
        return NULL;
    }
    Py_buffer view;
    if (PyObject_GetBuffer(args[0], &view, PyBUF_SIMPLE) < 0) {
        return NULL;
    }
    const unsigned char *data = (const unsigned char *)view.buf;
    Py_ssize_t end = view.len;
    Py_ssize_t pos = 0;
    PyObject *problems = NULL;
    long long max_timestamp = -1;
    for (Py_ssize_t i = 0; i < count; i++) {
        int64_t length, ts_delta, offset_delta, key_size, value_size, headers;
        if (read_varint(data, &pos, end, &length) < 0) {
            goto fail;
        }
        if (length < 6 || length > end - pos) {
            PyErr_SetString(CorruptBatch, "record runs past its batch");
            goto fail;
        }
        Py_ssize_t record_end = pos + (Py_ssize_t)length;
        pos += 1; /* attributes */
        if (read_varint_upto(data, &pos, record_end, &ts_delta, 63) < 0 ||
            read_varint(data, &pos, record_end, &offset_delta) < 0 ||
            skip_bytes(data, &pos, record_end, &key_size) < 0 ||
            skip_bytes(data, &pos, record_end, &value_size) < 0 ||
            read_varint(data, &pos, record_end, &headers) < 0) {
            goto fail;
        }
        if (headers < 0) {
            PyErr_SetString(CorruptBatch, "negative header count");
            goto fail;
        }
        for (int64_t h = 0; h < headers; h++) {
            int64_t hkey, hvalue;
            if (skip_bytes(data, &pos, record_end, &hkey) < 0) {
                goto fail;
            }
            if (hkey < 0) {
                PyErr_SetString(CorruptBatch, "null header key");
                goto fail;
            }
            if (skip_bytes(data, &pos, record_end, &hvalue) < 0) {
                goto fail;
            }
        }
        if (pos != record_end) {
            PyErr_SetString(CorruptBatch, "record length does not match its fields");
            goto fail;
        }
        long long timestamp;
        if (__builtin_add_overflow(base_timestamp, (long long)ts_delta, &timestamp)) {
            PyErr_SetString(CorruptBatch, "timestamp out of range");
            goto fail;
        }
        int problem = 0;
        if (__builtin_expect(key_required && key_size < 0, 0)) {
            problem = 1;
        } else if (__builtin_expect(reject_timestamps || (timestamp != -1 &&
                                                          (timestamp < low || timestamp > high)),
                                    0)) {
            problem = 2;
        }
        if (__builtin_expect(problem, 0)) {
            if (problems == NULL && (problems = PyList_New(0)) == NULL) {
                goto fail;
            }
            PyObject *item = Py_BuildValue("(niLLLL)", i, problem, (long long)offset_delta,
                                           timestamp, (long long)key_size,
                                           (long long)value_size);
            if (item == NULL || PyList_Append(problems, item) < 0) {
                Py_XDECREF(item);
                goto fail;
            }
            Py_DECREF(item);
        }
        if (timestamp > max_timestamp) {
            max_timestamp = timestamp;
        }
    }
    if (pos != end) {
        PyErr_SetString(CorruptBatch, "records still remaining after the batch's record count");
        goto fail;
    }
    PyBuffer_Release(&view);
    if (problems == NULL) {
        return Py_BuildValue("(LO)", max_timestamp, Py_None);
    }
    return Py_BuildValue("(LN)", max_timestamp, problems);
fail:
    Py_XDECREF(problems);
    PyBuffer_Release(&view);
    return NULL;
}

/* ---- the producer's side: encoding one record ------------------------------------------ */

static Py_ssize_t
varint_size(uint64_t z)
{
    Py_ssize_t n = 1;
    while (z >= 0x80) {
        z >>= 7;
        n++;
    }
    return n;
}

static uint64_t
zigzag(int64_t v)
{
    return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
}

static char *
write_varint(char *out, uint64_t z)
{
    while (z >= 0x80) {
        *out++ = (char)((z & 0x7F) | 0x80);
        z >>= 7;
    }
    *out++ = (char)z;
    return out;
}

/* A bytes argument or None (length -1); -2 and TypeError for anything else. */
static Py_ssize_t
optional_bytes(PyObject *obj, const char *what)
{
    if (obj == Py_None) {
        return -1;
    }
    if (!PyBytes_Check(obj)) {
        PyErr_Format(PyExc_TypeError, "%s must be bytes or None", what);
        return -2;
    }
    return PyBytes_GET_SIZE(obj);
}

/* encode_record_body(key, value, headers) -> bytes: a record from its key length to its end
 * (headers: the encoded header section, None for no headers). */
static PyObject *
encode_record_body(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    (void)module;
    if (nargs != 3) {
        PyErr_SetString(PyExc_TypeError, "encode_record_body(key, value, headers)");
        return NULL;
    }
    Py_ssize_t klen = optional_bytes(args[0], "key");
    Py_ssize_t vlen = klen < -1 ? -2 : optional_bytes(args[1], "value");
    Py_ssize_t hlen = vlen < -1 ? -2 : optional_bytes(args[2], "headers");
    if (hlen < -1) {
        return NULL;
    }
    Py_ssize_t size = (klen < 0 ? 1 : varint_size(zigzag(klen)) + klen)
                      + (vlen < 0 ? 1 : varint_size(zigzag(vlen)) + vlen)
                      + (hlen < 0 ? 1 : hlen);
    PyObject *body = PyBytes_FromStringAndSize(NULL, size);
    if (body == NULL) {
        return NULL;
    }
    char *out = PyBytes_AS_STRING(body);
    if (klen < 0) {
        *out++ = 1;
    } else {
        out = write_varint(out, zigzag(klen));
        memcpy(out, PyBytes_AS_STRING(args[0]), klen);
        out += klen;
    }
    if (vlen < 0) {
        *out++ = 1;
    } else {
        out = write_varint(out, zigzag(vlen));
        memcpy(out, PyBytes_AS_STRING(args[1]), vlen);
        out += vlen;
    }
    if (hlen < 0) {
        *out = 0;
    } else {
        memcpy(out, PyBytes_AS_STRING(args[2]), hlen);
    }
    return body;
}

/* append_record(buf, offset_delta, timestamp_delta, body, limit, factor) -> int: append one
 * record (length, attributes, deltas, then ``body``) to the bytearray ``buf`` and return the
 * estimated size of all its records: their bytes, times ``factor`` when factor > 0 (an
 * estimate of their compressed size), truncated. When offset_delta > 0 and that estimate
 * would pass ``limit``, nothing is appended and -1 is returned. */
static PyObject *
append_record(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    (void)module;
    if (nargs != 6) {
        PyErr_SetString(PyExc_TypeError,
                        "append_record(buf, offset_delta, timestamp_delta, body, limit, factor)");
        return NULL;
    }
    PyObject *buf = args[0];
    PyObject *body = args[3];
    if (!PyByteArray_Check(buf) || !PyBytes_Check(body)) {
        PyErr_SetString(PyExc_TypeError, "append_record needs a bytearray and a bytes body");
        return NULL;
    }
    long long offset_delta = PyLong_AsLongLong(args[1]);
    if (offset_delta == -1 && PyErr_Occurred()) {
        return NULL;
    }
    long long timestamp_delta = PyLong_AsLongLong(args[2]);
    if (timestamp_delta == -1 && PyErr_Occurred()) {
        return NULL;
    }
    long long limit = PyLong_AsLongLong(args[4]);
    if (limit == -1 && PyErr_Occurred()) {
        return NULL;
    }
    double factor = PyFloat_AsDouble(args[5]);
    if (factor == -1.0 && PyErr_Occurred()) {
        return NULL;
    }
    uint64_t ts = zigzag(timestamp_delta);
    uint64_t od = zigzag(offset_delta);
    Py_ssize_t blen = PyBytes_GET_SIZE(body);
    Py_ssize_t size = 1 + varint_size(ts) + varint_size(od) + blen;
    uint64_t zsize = zigzag(size);
    Py_ssize_t old = PyByteArray_GET_SIZE(buf);
    Py_ssize_t written = old + varint_size(zsize) + size;
    long long estimated = factor > 0 ? (long long)((double)written * factor) : (long long)written;
    if (offset_delta > 0 && estimated > limit) {
        return PyLong_FromLong(-1);
    }
    if (PyByteArray_Resize(buf, written) < 0) {
        return NULL;
    }
    char *out = PyByteArray_AS_STRING(buf) + old;
    out = write_varint(out, zsize);
    *out++ = 0;
    out = write_varint(out, ts);
    out = write_varint(out, od);
    memcpy(out, PyBytes_AS_STRING(body), blen);
    return PyLong_FromLongLong(estimated);
}

static PyMethodDef methods[] = {
    {"decode_into", (PyCFunction)(void (*)(void))decode_into, METH_FASTCALL,
     "Append the records of one batch's record data to a list (see records.py)."},
    {"record_columns", (PyCFunction)record_columns, METH_O,
     "Arrow-ready column buffers of a list of consumer record tuples."},
    {"validate_records", (PyCFunction)(void (*)(void))validate_records, METH_FASTCALL,
     "Check a batch's records before a broker appends it (see records.py)."},
    {"encode_record_body", (PyCFunction)(void (*)(void))encode_record_body, METH_FASTCALL,
     "A record's key, value and header section, encoded (see producer/batch.py)."},
    {"append_record", (PyCFunction)(void (*)(void))append_record, METH_FASTCALL,
     "Append one record to an open batch's buffer (see producer/batch.py)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "_crecords",
    .m_doc = "Record decoding and encoding in C for Brook's clients.",
    .m_size = -1,
    .m_methods = methods,
};

PyMODINIT_FUNC
PyInit__crecords(void)
{
    PyObject *batch = PyImport_ImportModule("brook.protocol.batch");
    if (batch == NULL) {
        return NULL;
    }
    CorruptBatch = PyObject_GetAttrString(batch, "CorruptBatch");
    Py_DECREF(batch);
    if (CorruptBatch == NULL) {
        return NULL;
    }
    return PyModule_Create(&module);
}
