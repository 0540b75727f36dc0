/* dump_sha256.c — rp_sha256_file on files of the lengths around SHA-256's padding edges (and one of several read buffers), one "length hex" line each, for tests/sha256_oracle.py to check against hashlib. */
#include <stdio.h>
#include <stdlib.h>

#include "report_int.h"

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: dump_sha256 SCRATCH_FILE\n");
        return 2;
    }
    /* 0, the edges of one and two blocks (55/56: the length still fits or not), and
     * more than the 64 KiB read buffer, not a multiple of 64 */
    static const long lens[] = {0, 1, 55, 56, 57, 63, 64, 65, 119, 120, 128, 200000};
    for (size_t i = 0; i < sizeof lens / sizeof *lens; i++) {
        FILE *f = fopen(argv[1], "wb");
        if (!f)
            return 1;
        for (long j = 0; j < lens[i]; j++)
            fputc((int)((j * 31 + 7) & 0xff), f);
        fclose(f);
        char hex[65];
        int64_t size = -1;
        if (rp_sha256_file(argv[1], hex, &size) != 0 || size != lens[i]) {
            printf("FAIL length %ld: rp_sha256_file failed or size %lld\n", lens[i],
                   (long long)size);
            return 1;
        }
        printf("%ld %s\n", lens[i], hex);
    }
    char hex[65] = "x";
    if (rp_sha256_file("/nonexistent/file", hex, NULL) == 0 || hex[0]) {
        printf("FAIL a missing file: no error, or hex '%s'\n", hex);
        return 1;
    }
    return 0;
}
