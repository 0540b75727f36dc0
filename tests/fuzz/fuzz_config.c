/* fuzz_config.c — libFuzzer harness (tests/fuzz/run.sh): the study-file parser and its validation, rb_config_load, on arbitrary bytes written to a file; no input may crash it or trip ASan/UBSan. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "rb_bench.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static char path[64];
    if (!path[0]) snprintf(path, sizeof path, "/dev/shm/fz-%d.ini", (int)getpid());
    FILE *f = fopen(path, "wb");
    if (!f) return 0;
    fwrite(data, 1, size, f);
    fclose(f);
    rb_config c;
    char err[1024];
    if (rb_config_load(&c, path, NULL, 0, err, sizeof err) == 0) rb_config_free(&c);
    return 0;
}
