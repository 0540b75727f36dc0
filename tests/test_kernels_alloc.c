/* test_kernels_alloc.c — rb_kernels_alloc's alignment at every size class, and that it asks for transparent huge pages exactly when rb_kernels_hugepages says so (the mapping's VmFlags "hg"). */
#include "rb_kernels.h"
#include "rb_test.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* vma_hg: 1 when the mapping holding p carries the huge-page advice ("hg" among its
 * VmFlags in /proc/self/smaps), 0 when not, -1 when smaps cannot tell. */
static int vma_hg(const void *p)
{
    FILE *f = fopen("/proc/self/smaps", "r");
    if (!f)
        return -1;
    char line[512];
    int in = 0, res = -1;
    const uintptr_t a = (uintptr_t)p;
    while (fgets(line, sizeof line, f)) {
        unsigned long lo, hi;
        if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2 && strchr(line, '-') < strchr(line, ' ')) {
            in = a >= lo && a < hi;
            continue;
        }
        if (in && !strncmp(line, "VmFlags:", 8)) {
            res = strstr(line, " hg") != NULL;
            break;
        }
    }
    fclose(f);
    return res;
}

/* The system's setting for rb_kernels_hugepages (kernels/ reads no files): the first
 * line of the sysfs file, or NULL. */
static const char *thp(void)
{
    static char line[128];
    FILE *f = fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r");
    const char *got = f ? fgets(line, sizeof line, f) : NULL;
    if (f)
        fclose(f);
    return got;
}

/* one_size: allocate `bytes`, check the alignment its size class promises, write every
 * byte; with huge, check the advice against `want_hg` (-1: do not check). */
static void one_size(size_t bytes, int want_hg)
{
    unsigned char *p = rb_kernels_alloc(bytes);
    check(p != NULL, "rb_kernels_alloc(%zu) returned NULL", bytes);
    if (!p)
        return;
    const size_t align = bytes >= RB_HUGE_MIN ? (size_t)2 << 20
                         : bytes >= ((size_t)64 << 10) ? 4096 : 64;
    check((uintptr_t)p % align == 0, "rb_kernels_alloc(%zu) = %p: not %zu-byte aligned", bytes,
          (void *)p, align);
    memset(p, 0x5a, bytes);
    if (bytes > 0)
        check(p[bytes - 1] == 0x5a, "rb_kernels_alloc(%zu): last byte not writable", bytes);
    if (bytes >= RB_HUGE_MIN && want_hg >= 0) {
        const int hg = vma_hg(p);
        if (hg >= 0)
            check(hg == want_hg, "rb_kernels_alloc(%zu) with huge pages '%s': VmFlags hg %d, want %d",
                  bytes, rb_kernels_hugepages(thp()), hg, want_hg);
    }
    free(p);
}

int main(void)
{
    static const char *const states[] = {"madvise", "always", "off (ROPEBENCH_HUGEPAGES=0)",
                                         "off (system: never)", "unsupported"};
    for (int pass = 0; pass < 2; pass++) {
        if (pass == 1)
            setenv("ROPEBENCH_HUGEPAGES", "0", 1);
        else
            unsetenv("ROPEBENCH_HUGEPAGES");
        const char *s = rb_kernels_hugepages(thp());
        int known = 0;
        for (size_t i = 0; i < sizeof states / sizeof states[0]; i++)
            known |= !strcmp(s, states[i]);
        check(known, "rb_kernels_hugepages() = '%s': not one of the documented states", s);
        check(pass == 0 || strcmp(s, "madvise") != 0,
              "ROPEBENCH_HUGEPAGES=0 but rb_kernels_hugepages() = 'madvise'");
        /* the advice is given exactly in state "madvise" (never with the variable at 0) */
        const int want_hg = !strcmp(s, "madvise") ? 1 : pass == 1 ? 0 : -1;
        printf("pass %d (ROPEBENCH_HUGEPAGES %s): %s\n", pass, pass ? "=0" : "unset", s);
        const size_t sizes[] = {0, 1, 63, 64, 4095, (size_t)64 << 10, RB_HUGE_MIN - 1,
                                RB_HUGE_MIN, RB_HUGE_MIN + 1, (size_t)33 << 20};
        for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
            one_size(sizes[i], want_hg);
    }
    printf("%d passed, %d failed\n", n_pass, n_fail);
    return n_fail ? 1 : 0;
}
