/* errors.c — rb_errf: the one-line error message helper shared by every module. */
#include "rb_kernels.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* rb_errf: format fmt into err (at most errlen bytes, always NUL-terminated, any
 * trailing newlines removed so the message stays one line) when err && errlen > 0,
 * and return code unchanged, so callers can write `return rb_errf(...)`. */
int rb_errf(char *err, size_t errlen, int code, const char *fmt, ...)
{
    if (err && errlen > 0) {
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(err, errlen, fmt, ap);
        va_end(ap);
        if (n < 0)
            err[0] = '\0';
        size_t len = strlen(err);
        while (len > 0 && (err[len - 1] == '\n' || err[len - 1] == '\r'))
            err[--len] = '\0';
    }
    return code;
}
