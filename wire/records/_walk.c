/* The produce path's record checks of wire.records (check_records' walk, check_plain_batch), in C.
 *
 * Kafka checks every record of a produced batch (LogValidator): the records
 * section holds exactly `count` records whose offset deltas run 0, 1, 2, ...
 * and nothing follows the last one. Doing that per record in Python costs
 * about 2.5 us a record on the produce path; here it is a few ns. The Python
 * loop in records.py (_walk_records) stays as the reference and the fallback;
 * tests hold the two to the same answer on random and mutated input.
 *
 * The same walk reads each record's timestamp delta, because Kafka stores a
 * CreateTime batch with the largest of its records' timestamps as the batch's
 * max timestamp, whatever the producer wrote there (librdkafka writes 0 when
 * every record has no timestamp, -1): retention ages segments by it.
 *
 * walk_records(section, count, base_timestamp) -> (problem, max_timestamp):
 * problem is None, or the error message (str) the caller raises DecodeError
 * with; max_timestamp is Kafka's maxBatchTimestamp: the largest record
 * timestamp (base + delta, wrapping as Java's long does), or -1 when none is
 * above -1. Reads only within the buffer.
 *
 * check_plain_batch(batch) does the produce path's checks of the common
 * batch (one whole uncompressed CreateTime batch, base offset 0, a header
 * Kafka accepts) and this walk in one call, where the Python checks cost
 * several microseconds a partition: records._check_plain_batch is its
 * reference and says what passes.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>

#define MIN_RECORD_SIZE 7

/* A zigzag varint of at most max_bytes bytes and `bits` bits, ending before
 * `end`; *err set (and 0 returned) when it is malformed. Mirrors
 * records._read_varint_slow, messages included. */
static long long read_varint(const unsigned char *buf, Py_ssize_t *pos, Py_ssize_t end,
                             int max_bytes, int bits, const char **err)
{
    unsigned long long value = 0;
    int shift = 0;
    Py_ssize_t p = *pos;
    Py_ssize_t limit = p + max_bytes < end ? p + max_bytes : end;
    while (p < limit) {
        unsigned char b = buf[p++];
        value |= (unsigned long long)(b & 0x7F) << shift;
        if (b < 0x80) {
            if (value >> bits) {
                *err = bits == 32 ? "varint overflows 32 bits" : "varint overflows";
                return 0;
            }
            *pos = p;
            return (long long)(value >> 1) ^ -(long long)(value & 1);
        }
        shift += 7;
    }
    if (limit == end && shift < 7 * max_bytes)
        *err = "varint runs past the end of the record data";
    else
        *err = "varint longer than 5 bytes";
    return 0;
}

/* A zigzag varlong of at most 10 bytes and 64 bits, as
 * records._read_varint_slow(buf, p, end, 10, 64) reads it. */
static long long read_varlong(const unsigned char *buf, Py_ssize_t *pos, Py_ssize_t end,
                              const char **err)
{
    unsigned long long value = 0;
    int shift = 0;
    Py_ssize_t p = *pos;
    Py_ssize_t limit = p + 10 < end ? p + 10 : end;
    while (p < limit) {
        unsigned char b = buf[p++];
        value |= (unsigned long long)(b & 0x7F) << shift;
        if (b < 0x80) {
            /* Only the tenth byte can carry bits past the 64th. */
            if (shift == 63 && (b & 0x7E)) {
                *err = "varint overflows 64 bits";
                return 0;
            }
            *pos = p;
            return (long long)(value >> 1) ^ -(long long)(value & 1);
        }
        shift += 7;
    }
    if (limit == end && shift < 70)
        *err = "varint runs past the end of the record data";
    else
        *err = "varint longer than 10 bytes";
    return 0;
}

/* The walk itself: NULL when the records are sound (*max_timestamp set),
 * else the problem as a new str (or NULL with a Python error set, *failed). */
static PyObject *walk(const unsigned char *buf, Py_ssize_t end, Py_ssize_t count,
                      long long base_timestamp, long long *max_timestamp, int *failed)
{
    Py_ssize_t p = 0;
    const char *err = NULL;
    *max_timestamp = -1; /* RecordBatch.NO_TIMESTAMP */
    *failed = 0;
    PyObject *problem = NULL;
    for (Py_ssize_t i = 0; i < count; i++) {
        long long length = read_varint(buf, &p, end, 5, 32, &err);
        if (err) {
            problem = PyUnicode_FromString(err);
            goto done;
        }
        Py_ssize_t record_end = p + (Py_ssize_t)length;
        if (length < MIN_RECORD_SIZE - 1 || record_end > end) {
            problem = PyUnicode_FromFormat("record %zd has an impossible length %lld", i, length);
            goto done;
        }
        /* Past the attributes byte: the timestamp delta, then the offset delta. */
        Py_ssize_t q = p + 1;
        long long timestamp_delta = read_varlong(buf, &q, record_end, &err);
        if (err) {
            problem = PyUnicode_FromString(err);
            goto done;
        }
        long long timestamp =
            (long long)((unsigned long long)base_timestamp + (unsigned long long)timestamp_delta);
        if (timestamp > *max_timestamp)
            *max_timestamp = timestamp;
        long long delta = read_varint(buf, &q, record_end, 5, 32, &err);
        if (err) {
            problem = PyUnicode_FromString(err);
            goto done;
        }
        if (delta != i) {
            problem = PyUnicode_FromFormat("record %zd of the batch has offset delta %lld", i, delta);
            goto done;
        }
        p = record_end;
    }
    if (p != end)
        problem = PyUnicode_FromFormat("%zd bytes follow the last of %zd records", end - p, count);
done:
    if (problem == NULL && PyErr_Occurred())
        *failed = 1;
    return problem;
}

static PyObject *walk_records(PyObject *self, PyObject *args)
{
    Py_buffer view;
    Py_ssize_t count;
    long long base_timestamp;
    long long max_timestamp;
    int failed;
    if (!PyArg_ParseTuple(args, "y*nL", &view, &count, &base_timestamp))
        return NULL;
    PyObject *problem =
        walk((const unsigned char *)view.buf, view.len, count, base_timestamp, &max_timestamp, &failed);
    PyBuffer_Release(&view);
    if (failed)
        return NULL;
    if (problem == NULL)
        problem = Py_NewRef(Py_None);
    return Py_BuildValue("(NL)", problem, max_timestamp);
}

/* Big-endian fields of the batch header (records.py's _HEADER). */
static long long be64(const unsigned char *b)
{
    unsigned long long v = 0;
    for (int i = 0; i < 8; i++)
        v = (v << 8) | b[i];
    return (long long)v;
}

static long be32(const unsigned char *b)
{
    return (long)(int32_t)(((uint32_t)b[0] << 24) | ((uint32_t)b[1] << 16) | ((uint32_t)b[2] << 8) |
                           (uint32_t)b[3]);
}

#define BATCH_HEADER_SIZE 61
#define LOG_OVERHEAD 12
/* compression | timestamp type | control */
#define NOT_PLAIN_ATTRIBUTES (0x07 | 0x08 | 0x20)

/* check_plain_batch(buf) -> (crc, header max timestamp, records max timestamp) or None:
 * records._check_plain_batch, which says what passes. */
static PyObject *check_plain_batch(PyObject *self, PyObject *arg)
{
    Py_buffer view;
    if (PyObject_GetBuffer(arg, &view, PyBUF_SIMPLE) < 0)
        return NULL;
    const unsigned char *b = (const unsigned char *)view.buf;
    Py_ssize_t len = view.len;
    PyObject *result = NULL;
    if (len < BATCH_HEADER_SIZE || b[16] != 2)
        goto plain_none;
    long long base_offset = be64(b);
    long batch_length = be32(b + 8);
    unsigned long crc = (unsigned long)(uint32_t)be32(b + 17);
    int attributes = (int)(int16_t)(((unsigned)b[21] << 8) | b[22]);
    long last_offset_delta = be32(b + 23);
    long long base_timestamp = be64(b + 27);
    long long max_timestamp_header = be64(b + 35);
    long long producer_id = be64(b + 43);
    long base_sequence = be32(b + 53);
    long records_count = be32(b + 57);
    if (LOG_OVERHEAD + (long long)batch_length != (long long)len || base_offset != 0 ||
        (attributes & NOT_PLAIN_ATTRIBUTES) || records_count <= 0 ||
        (long long)last_offset_delta + 1 != (long long)records_count ||
        (producer_id >= 0 && base_sequence < 0) ||
        (long long)records_count * MIN_RECORD_SIZE > (long long)(len - BATCH_HEADER_SIZE))
        goto plain_none;
    long long max_timestamp;
    int failed;
    PyObject *problem = walk(b + BATCH_HEADER_SIZE, len - BATCH_HEADER_SIZE, records_count,
                             base_timestamp, &max_timestamp, &failed);
    if (failed)
        goto out;
    if (problem != NULL) {
        Py_DECREF(problem);
        goto plain_none;
    }
    result = Py_BuildValue("(kLL)", crc, max_timestamp_header, max_timestamp);
    goto out;
plain_none:
    result = Py_NewRef(Py_None);
out:
    PyBuffer_Release(&view);
    return result;
}

static PyMethodDef methods[] = {
    {"walk_records", walk_records, METH_VARARGS,
     "walk_records(section, count, base_timestamp) -> (None or the error message, max timestamp)"},
    {"check_plain_batch", check_plain_batch, METH_O,
     "check_plain_batch(batch) -> (crc, header max timestamp, records max timestamp) or None"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_walk", NULL, -1, methods};

PyMODINIT_FUNC PyInit__walk(void)
{
    return PyModule_Create(&module);
}
