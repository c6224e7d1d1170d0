/* The record walk of wire.records.check_record_offsets, in C.
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
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

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

static PyObject *walk_records(PyObject *self, PyObject *args)
{
    Py_buffer view;
    Py_ssize_t count;
    long long base_timestamp;
    long long max_timestamp = -1; /* RecordBatch.NO_TIMESTAMP */
    PyObject *problem = NULL;
    if (!PyArg_ParseTuple(args, "y*nL", &view, &count, &base_timestamp))
        return NULL;
    const unsigned char *buf = (const unsigned char *)view.buf;
    Py_ssize_t end = view.len;
    Py_ssize_t p = 0;
    const char *err = NULL;
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
        if (timestamp > max_timestamp)
            max_timestamp = timestamp;
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
    PyBuffer_Release(&view);
    if (problem == NULL) {
        if (PyErr_Occurred())
            return NULL;
        problem = Py_NewRef(Py_None);
    }
    PyObject *result = Py_BuildValue("(NL)", problem, max_timestamp);
    return result;
}

static PyMethodDef methods[] = {
    {"walk_records", walk_records, METH_VARARGS,
     "walk_records(section, count, base_timestamp) -> (None or the error message, max timestamp)"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_walk", NULL, -1, methods};

PyMODINIT_FUNC PyInit__walk(void)
{
    return PyModule_Create(&module);
}
