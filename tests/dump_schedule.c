/* dump_schedule.c — prints one RoPE schedule (inv_freq, attention factor, effective
 * base, YaRN range) for the options given, for the Python oracle to compare.
 *
 * Usage: dump_schedule [options]            one schedule from the command line
 *        dump_schedule --batch              one option set per stdin line
 * Options: --method M --rotary-dim D --base B --factor F --original-ctx N
 *          --seq-len L --beta-fast X --beta-slow Y --truncate 0|1 --mscale X
 *          --mscale-all-dim X --attention-factor X --low-freq-factor X
 *          --high-freq-factor X --short-factor a,b,... --long-factor a,b,...
 * Output per schedule: "attention_factor V", "base_used V", "corr_low V",
 * "corr_high V", then "inv_freq J V" per pair (all %.17g), then "end"; or
 * "error MESSAGE" then "end" when the schedule is rejected. */
#include "rb_kernels.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_PAIRS 4096
#define MAX_TOK 64

/* Parse a comma-separated list of doubles into out (capacity cap); returns count. */
static int parse_list(const char *s, double *out, int cap)
{
    int n = 0;
    while (*s && n < cap) {
        char *end;
        out[n++] = strtod(s, &end);
        if (end == s)
            return -1;
        s = *end == ',' ? end + 1 : end;
        if (*end && *end != ',')
            return -1;
    }
    return n;
}

/* Run one schedule for the options in argv[0..argc); prints the result block. */
static int run_one(int argc, char **argv)
{
    static double sf[MAX_PAIRS], lf[MAX_PAIRS], inv[MAX_PAIRS];
    rb_rope_params p;
    memset(&p, 0, sizeof p);
    p.method = RB_ROPE_NONE;
    p.rotary_dim = 128;
    p.base = 10000;
    p.factor = 1;
    p.original_ctx = 4096;
    p.truncate = 1;
    int rc = 0;
    for (int i = 0; i < argc; i++) {
        const char *o = argv[i];
        const char *val = i + 1 < argc ? argv[i + 1] : NULL;
        if (!val) {
            printf("error option %s needs a value\nend\n", o);
            return 2;
        }
        i++;
        if (!strcmp(o, "--method")) {
            int m = rb_rope_method_parse(val);
            if (m < 0) {
                printf("error unknown method %s\nend\n", val);
                return 2;
            }
            p.method = (rb_rope_method)m;
        } else if (!strcmp(o, "--rotary-dim"))
            p.rotary_dim = atoi(val);
        else if (!strcmp(o, "--base"))
            p.base = strtod(val, NULL);
        else if (!strcmp(o, "--factor"))
            p.factor = strtod(val, NULL);
        else if (!strcmp(o, "--original-ctx"))
            p.original_ctx = strtoll(val, NULL, 10);
        else if (!strcmp(o, "--seq-len"))
            p.seq_len = strtoll(val, NULL, 10);
        else if (!strcmp(o, "--beta-fast"))
            p.beta_fast = strtod(val, NULL);
        else if (!strcmp(o, "--beta-slow"))
            p.beta_slow = strtod(val, NULL);
        else if (!strcmp(o, "--truncate"))
            p.truncate = atoi(val);
        else if (!strcmp(o, "--mscale"))
            p.mscale = strtod(val, NULL);
        else if (!strcmp(o, "--mscale-all-dim"))
            p.mscale_all_dim = strtod(val, NULL);
        else if (!strcmp(o, "--attention-factor"))
            p.attention_factor = strtod(val, NULL);
        else if (!strcmp(o, "--low-freq-factor"))
            p.low_freq_factor = strtod(val, NULL);
        else if (!strcmp(o, "--high-freq-factor"))
            p.high_freq_factor = strtod(val, NULL);
        else if (!strcmp(o, "--short-factor") || !strcmp(o, "--long-factor")) {
            int isshort = !strcmp(o, "--short-factor");
            int n = parse_list(val, isshort ? sf : lf, MAX_PAIRS);
            if (n < 0) {
                printf("error bad list for %s\nend\n", o);
                return 2;
            }
            if (isshort)
                p.short_factor = sf;
            else
                p.long_factor = lf;
        } else {
            printf("error unknown option %s\nend\n", o);
            return 2;
        }
    }
    if (p.rotary_dim > 2 * MAX_PAIRS) {
        printf("error rotary_dim too large for this tool\nend\n");
        return 2;
    }
    char err[256] = "";
    rb_rope_info info;
    rc = rb_rope_schedule(&p, inv, &info, err, sizeof err);
    if (rc) {
        printf("error %s\nend\n", err);
        return 1;
    }
    printf("attention_factor %.17g\nbase_used %.17g\ncorr_low %.17g\ncorr_high %.17g\n",
           info.attention_factor, info.base_used, info.corr_low, info.corr_high);
    for (int j = 0; j < p.rotary_dim / 2; j++)
        printf("inv_freq %d %.17g\n", j, inv[j]);
    printf("end\n");
    return 0;
}

int main(int argc, char **argv)
{
    if (argc > 1 && !strcmp(argv[1], "--batch")) {
        static char line[1 << 16];
        int worst = 0;
        while (fgets(line, sizeof line, stdin)) {
            char *tok[MAX_TOK];
            int n = 0;
            for (char *t = strtok(line, " \t\r\n"); t && n < MAX_TOK;
                 t = strtok(NULL, " \t\r\n"))
                tok[n++] = t;
            int rc = run_one(n, tok);
            worst = rc > worst ? rc : worst;
        }
        return worst == 2 ? 2 : 0;
    }
    int rc = run_one(argc - 1, argv + 1);
    return rc;
}
