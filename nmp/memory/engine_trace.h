/* Reading a trace's text in C (issue 43: a replay's cost is mostly start-up; the numpy parse
 * of nmp/memory/trace.py took 6-7 ms of the README trace's 10 ms read, gunzip 3 ms).
 *
 * parse_trace_c takes the canonical Ramulator form only, the one nmp.memory.write_trace
 * writes and the numpy fast path of trace.py reads: every line exactly "LD 0x<hex>" or
 * "ST 0x<hex>" (1-16 digits, either case, 'x' or 'X'), '\n'-separated, the last newline
 * optional. It writes each line as a request record of numpy's REQUEST_DTYPE (9 bytes: the
 * address as a little-endian uint64, then the write flag) and returns the count; anything
 * else (a blank or comment line, '\r', a DRAMsim3 line, more than 16 digits, an empty text)
 * returns -1, and the caller reads the trace the general way, which names a malformed line.
 * Same result as the numpy path on every text it takes (tests/memory/test_mem_trace_io.py);
 * parse_lines_c reads the same texts into the engine's separate inputs. */
#include <stdint.h>
#include <string.h>

static inline int hex_digit(uint8_t c)
{
    if (c >= '0' && c <= '9') return c - '0';
    c |= 0x20; /* lower case */
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
}

/* One canonical line from text[*at]: its address and write flag; *at moves past its newline.
 * Returns 0, or -1 where the line is not canonical. */
static inline int parse_line(const uint8_t *text, int64_t len, int64_t *at, uint64_t *addr,
                             uint8_t *write)
{
    int64_t i = *at;
    /* "LD 0x" or "ST 0x" */
    if (len - i < 6) return -1;
    const uint8_t a = text[i], b = text[i + 1];
    *write = a == 'S' && b == 'T';
    if (!*write && !(a == 'L' && b == 'D')) return -1;
    if (text[i + 2] != ' ' || text[i + 3] != '0' || (text[i + 4] | 0x20) != 'x') return -1;
    i += 5;
    uint64_t value = 0;
    int digits = 0;
    for (; i < len && text[i] != '\n'; i++, digits++) {
        const int d = hex_digit(text[i]);
        if (d < 0 || digits == 16) return -1;
        value = value << 4 | (uint64_t)d;
    }
    if (!digits) return -1;
    *at = i + 1; /* past the newline (or past the end) */
    *addr = value;
    return 0;
}

int64_t parse_trace_c(const uint8_t *text, int64_t len, uint8_t *out, int64_t cap)
{
    int64_t n = 0, i = 0;
    if (len <= 0) return -1;
    while (i < len) {
        uint64_t value;
        uint8_t write;
        if (n >= cap || parse_line(text, len, &i, &value, &write)) return -1;
        uint8_t *rec = out + 9 * n++;
        for (int k = 0; k < 8; k++) rec[k] = (uint8_t)(value >> (8 * k)); /* little-endian */
        rec[8] = write;
    }
    return n;
}

/* The same text as parse_trace_c takes, as the engine's inputs (simulate_c's addr and
 * line_wr): the addresses into addr, the write flags into wr, the count returned (-1 for a
 * text that is not canonical); info[0] = the largest address, info[1] = the writes. The
 * replay path without numpy (nmp/memory/text_replay.py) reads a trace with it. */
int64_t parse_lines_c(const uint8_t *text, int64_t len, uint64_t *addr, uint8_t *wr,
                      int64_t cap, uint64_t *info)
{
    int64_t n = 0, i = 0, writes = 0;
    uint64_t top = 0;
    if (len <= 0) return -1;
    while (i < len) {
        if (n >= cap || parse_line(text, len, &i, &addr[n], &wr[n])) return -1;
        top = addr[n] > top ? addr[n] : top;
        writes += wr[n++];
    }
    info[0] = top;
    info[1] = (uint64_t)writes;
    return n;
}

/* The copy of split_requests_c: a loop of loads and stores alone (the reductions run after it
 * on the contiguous copy, vectorized), inlined with read_trace's layout as constants. */
static inline void split_records(const uint8_t *rec, int64_t stride, int64_t addr_at,
                                 int64_t wr_at, int64_t n, uint64_t *restrict addr,
                                 uint8_t *restrict wr)
{
    for (int64_t i = 0; i < n; i++) {
        memcpy(&addr[i], rec + i * stride + addr_at, 8);
        wr[i] = rec[i * stride + wr_at] != 0;
    }
}

/* A request array's records (nmp/memory/trace.py's structured arrays: the address a uint64 at
 * byte addr_at of each record, the write flag a bool at wr_at, records `stride` bytes apart)
 * as the engine's inputs: the addresses into addr, the write flags (0 or 1) into wr; info[0] =
 * the largest address, info[1] = the writes, info[2] and info[3] = the addresses' OR and AND
 * (what check_lines and narrow_fields reduce them to). The replay of a request array reads it
 * with this instead of numpy's copy of each field and its reductions. */
void split_requests_c(const uint8_t *rec, int64_t stride, int64_t addr_at, int64_t wr_at,
                      int64_t n, uint64_t *restrict addr, uint8_t *restrict wr, uint64_t *info)
{
    if (stride == 9 && addr_at == 0 && wr_at == 8)
        split_records(rec, 9, 0, 8, n, addr, wr);
    else
        split_records(rec, stride, addr_at, wr_at, n, addr, wr);
    uint64_t top = 0, any = 0, all = ~(uint64_t)0, writes = 0;
    for (int64_t i = 0; i < n; i++) {
        top = addr[i] > top ? addr[i] : top;
        any |= addr[i];
        all &= addr[i];
    }
    for (int64_t i = 0; i < n; i++) writes += wr[i];
    info[0] = top;
    info[1] = writes;
    info[2] = any;
    info[3] = n ? all : 0;
}

/* A run's line addresses reduced as check_lines and narrow_fields read them: info[0] = the
 * largest, info[1] and info[2] = their OR and AND (0 for none). One pass where numpy's three
 * reductions took about 22 us on a design point's stream of 20,000 lines (issue 43). */
void line_bounds_c(const uint64_t *restrict addr, int64_t n, uint64_t *info)
{
    uint64_t top = 0, any = 0, all = ~(uint64_t)0;
    for (int64_t i = 0; i < n; i++) {
        top = addr[i] > top ? addr[i] : top;
        any |= addr[i];
        all &= addr[i];
    }
    info[0] = top;
    info[1] = any;
    info[2] = n ? all : 0;
}
