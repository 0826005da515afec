# Included by _rowcore.pyx: CRC-32 of event bytes (ISO-HDLC, as zlib and the binlog use it) for the
# event runs (``_eventrun.pxi``); ``crc32`` is held to ``zlib.crc32`` by the tests. ``_u32`` reads a
# little-endian 32-bit word (the framing's too).

cdef uint32_t _CRC[8][256]


cdef void _crc_init() noexcept:
    cdef uint32_t c, i, k, t
    for i in range(256):
        c = i
        for k in range(8):
            if c & 1:
                c = (c >> 1) ^ <uint32_t>0xEDB88320U
            else:
                c = c >> 1
        _CRC[0][i] = c
    for i in range(256):
        for t in range(1, 8):
            _CRC[t][i] = (_CRC[t - 1][i] >> 8) ^ _CRC[0][_CRC[t - 1][i] & 0xFF]


_crc_init()


cdef inline uint32_t _u32(const uint8_t *p) noexcept nogil:
    return p[0] | (<uint32_t>p[1] << 8) | (<uint32_t>p[2] << 16) | (<uint32_t>p[3] << 24)


cdef extern from *:
    """
    /* CRC-32 folded 64 bytes at a time with carry-less multiplication (PCLMULQDQ), the method of
       Intel's "Fast CRC Computation for Generic Polynomials Using PCLMULQDQ Instruction"; the
       constants are x^(k*32) mod P for the bit-reflected polynomial, and mu for the final Barrett
       reduction. Used where the CPU has it (checked once), for the whole 16-byte blocks of at
       least 64 bytes; the table loop takes the rest. */
    #include <stddef.h>
    #include <stdint.h>
    #if defined(__x86_64__) && defined(__GNUC__)
    #include <immintrin.h>
    static int sluice_clmul_ok = -1;
    static int sluice_has_clmul(void) {
        if (sluice_clmul_ok < 0) {
            __builtin_cpu_init();
            sluice_clmul_ok = __builtin_cpu_supports("pclmul") && __builtin_cpu_supports("sse4.1");
        }
        return sluice_clmul_ok;
    }
    #define SLUICE_FOLD(x, k, data) \
        _mm_xor_si128(_mm_xor_si128(_mm_clmulepi64_si128((x), (k), 0x00), \
                                    _mm_clmulepi64_si128((x), (k), 0x11)), (data))
    __attribute__((target("pclmul,sse4.1")))
    static uint32_t sluice_crc32_clmul(uint32_t crc, const uint8_t *p, size_t len) {
        /* len >= 64 and a multiple of 16; crc is the running (reflected, not inverted) value */
        __m128i x1 = _mm_loadu_si128((const __m128i *)p);
        __m128i x2 = _mm_loadu_si128((const __m128i *)(p + 16));
        __m128i x3 = _mm_loadu_si128((const __m128i *)(p + 32));
        __m128i x4 = _mm_loadu_si128((const __m128i *)(p + 48));
        __m128i k = _mm_set_epi64x(0x1c6e41596LL, 0x154442bd4LL);
        __m128i mask = _mm_setr_epi32(-1, 0, 0, 0);
        __m128i t;
        x1 = _mm_xor_si128(x1, _mm_cvtsi32_si128((int)crc));
        p += 64;
        len -= 64;
        while (len >= 64) {
            x1 = SLUICE_FOLD(x1, k, _mm_loadu_si128((const __m128i *)p));
            x2 = SLUICE_FOLD(x2, k, _mm_loadu_si128((const __m128i *)(p + 16)));
            x3 = SLUICE_FOLD(x3, k, _mm_loadu_si128((const __m128i *)(p + 32)));
            x4 = SLUICE_FOLD(x4, k, _mm_loadu_si128((const __m128i *)(p + 48)));
            p += 64;
            len -= 64;
        }
        k = _mm_set_epi64x(0x0ccaa009eLL, 0x1751997d0LL);
        x1 = SLUICE_FOLD(x1, k, x2);
        x1 = SLUICE_FOLD(x1, k, x3);
        x1 = SLUICE_FOLD(x1, k, x4);
        while (len >= 16) {
            x1 = SLUICE_FOLD(x1, k, _mm_loadu_si128((const __m128i *)p));
            p += 16;
            len -= 16;
        }
        /* 128 bits to 64 (also appending 32 zero bits), then to 32 */
        t = _mm_clmulepi64_si128(k, x1, 0x01);
        x1 = _mm_xor_si128(_mm_srli_si128(x1, 8), t);
        t = _mm_srli_si128(x1, 4);
        x1 = _mm_clmulepi64_si128(_mm_and_si128(x1, mask), _mm_set_epi64x(0, 0x163cd6124LL), 0x00);
        x1 = _mm_xor_si128(x1, t);
        /* Barrett reduction, bit-reflected: mu = 0x1f7011641, P = 0x1db710641 */
        k = _mm_set_epi64x(0x1f7011641LL, 0x1db710641LL);
        t = x1;
        x1 = _mm_clmulepi64_si128(_mm_and_si128(x1, mask), k, 0x10);
        x1 = _mm_clmulepi64_si128(_mm_and_si128(x1, mask), k, 0x00);
        x1 = _mm_xor_si128(x1, t);
        return (uint32_t)_mm_extract_epi32(x1, 1);
    }
    #else
    static int sluice_has_clmul(void) { return 0; }
    static uint32_t sluice_crc32_clmul(uint32_t crc, const uint8_t *p, size_t len) { (void)p; (void)len; return crc; }
    #endif
    """
    bint _has_clmul "sluice_has_clmul" () noexcept nogil
    uint32_t _crc32_clmul "sluice_crc32_clmul" (uint32_t crc, const uint8_t *p, size_t n) noexcept nogil


cdef bint _CLMUL = _has_clmul()


cdef uint32_t _crc32(const uint8_t *p, Py_ssize_t n) noexcept nogil:
    """CRC-32 (ISO-HDLC, as zlib and the binlog use it): whole 16-byte blocks of 64 bytes or more
    folded by carry-less multiplication where the CPU has it, the rest eight bytes per step."""
    cdef uint32_t crc = ~(<uint32_t>0), one, two
    cdef Py_ssize_t bulk
    if _CLMUL and n >= 64:
        bulk = n & ~(<Py_ssize_t>15)
        crc = _crc32_clmul(crc, p, bulk)
        p += bulk
        n -= bulk
    while n >= 8:
        one = _u32(p) ^ crc
        two = _u32(p + 4)
        crc = (_CRC[7][one & 0xFF] ^ _CRC[6][(one >> 8) & 0xFF] ^ _CRC[5][(one >> 16) & 0xFF]
               ^ _CRC[4][one >> 24] ^ _CRC[3][two & 0xFF] ^ _CRC[2][(two >> 8) & 0xFF]
               ^ _CRC[1][(two >> 16) & 0xFF] ^ _CRC[0][two >> 24])
        p += 8
        n -= 8
    while n > 0:
        crc = (crc >> 8) ^ _CRC[0][(crc ^ p[0]) & 0xFF]
        p += 1
        n -= 1
    return ~crc


def crc32(bytes data):
    """CRC-32 of ``data``, equal to ``zlib.crc32(data)``."""
    return _crc32(<const uint8_t *>PyBytes_AS_STRING(data), PyBytes_GET_SIZE(data))
