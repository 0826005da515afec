/* The physical floor of binlog decoding: frame every event of binlog files by its 19-byte common
 * header and verify its CRC32, in C, nothing else (no body is decoded; the file is mapped). bench/floor.py compiles it
 * (cc -O2 bench/frame_crc.c -lz) and times it beside sluice and the server's binlog tool, so that
 * the report shows how close each figure is to what reading and checking the bytes costs.
 *
 *   frame_crc FILE...   prints "N events" */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

static uint32_t le32(const unsigned char *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

int main(int argc, char **argv) {
    unsigned long events = 0;
    for (int i = 1; i < argc; i++) {
        int fd = open(argv[i], O_RDONLY);
        struct stat st;
        if (fd < 0 || fstat(fd, &st) != 0) { perror(argv[i]); return 1; }
        long size = (long)st.st_size;
        /* mapped, not copied: the floor pays for the page cache, not for a copy of it */
        unsigned char *data = size > 0 ? mmap(NULL, (size_t)size, PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd, 0) : NULL;
        if (size > 0 && data == MAP_FAILED) { perror(argv[i]); return 1; }
        close(fd);
        if (size < 4 || memcmp(data, "\xfe" "bin", 4) != 0) { fprintf(stderr, "%s: not a binlog\n", argv[i]); return 1; }
        long off = 4;
        while (off < size) {
            if (size - off < 23) { fprintf(stderr, "%s: cut at %ld\n", argv[i], off); return 1; }
            uint32_t length = le32(data + off + 9);
            if (length < 23 || (long)length > size - off) { fprintf(stderr, "%s: bad event at %ld\n", argv[i], off); return 1; }
            uint32_t want = le32(data + off + length - 4);
            uint32_t got = (uint32_t)crc32(0L, data + off, length - 4);
            if (got != want) { fprintf(stderr, "%s: checksum mismatch at %ld\n", argv[i], off); return 1; }
            events++;
            off += length;
        }
        if (size > 0) munmap(data, (size_t)size);
    }
    printf("%lu events\n", events);
    return 0;
}
