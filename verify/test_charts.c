// The gnuplot charts of make bench and make repro say what they show: the kernel chart has a
// legend for its three colours and one number format; the repro chart draws every preset in a
// colour that stands out on white (value-embed was pale yellow over softcap) and states the spread
// between seeds (its +-1 std band was invisible); the NS map writes its log-axis ticks as powers of
// ten and marks bf16 and fp32 points with different symbols. Each script renders small fixture
// data as SVG (its pngcairo terminal swapped for svg), whose text and attributes the tests read.
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "base/io.h"
#include "helpers.h"

// Render bench/<script> as SVG with the -e assignments `vars`, into `out` (the script's output).
static char *render(const char *dir, const char *script, const char *vars, const char *out) {
    // The GPU-node bundle (ci/bundle.sh) carries no gnuplot by design: charts are drawn where
    // make bench runs. Everywhere else gnuplot is a dependency (make deps) and these tests run.
    if (getenv("GM_BUNDLE")) cr_skip_test("charts: gnuplot is not part of the GPU-node bundle");
    char cmd[9000], *err, *svg;
    size_t len;
    snprintf(cmd, sizeof cmd, "sed 's/^set terminal pngcairo/set terminal svg/' '%s' > '%s/chart.gp' && gnuplot -e \"%s\" '%s/chart.gp'",
             th_root_path(script), dir, vars, dir);
    cr_assert_eq(th_run(cmd, NULL, &err), 0, "%s: %s", script, err);
    free(err);
    cr_assert_eq(gm_read_all(out, &svg, &len), 0, "%s", gm_error());
    return svg;
}

static void put(const char *dir, const char *name, const char *text) {
    char path[4400];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    cr_assert_eq(gm_write_file_atomic(path, text, strlen(text)), 0, "%s", gm_error());
}

// The text of the next <text> element from *p on (tags removed), or NULL.
static char *next_text(const char **p) {
    const char *a = strstr(*p, "<text>");
    if (!a) return NULL;
    const char *b = strstr(a, "</text>");
    char *t = calloc((size_t)(b - a) + 1, 1);
    size_t n = 0;
    for (const char *s = a + 6; s < b; s++) {
        if (*s == '<') s = strchr(s, '>');
        else t[n++] = *s;
    }
    *p = b;
    return t;
}

// The first `attr` value after the plot group titled `title` (e.g. its stroke colour).
static const char *in_group(const char *svg, const char *title, const char *attr) {
    char key[256];
    snprintf(key, sizeof key, "<title>%s</title>", title);
    const char *g = strstr(svg, key);
    cr_assert_not_null(g, "no plot titled %s", title);
    const char *a = strstr(g, attr);
    cr_assert_not_null(a, "plot %s has no %s", title, attr);
    return a + strlen(attr);
}

Test(charts, kernel_chart_has_a_legend_and_one_number_format) {
    char *dir = th_tmpdir(), vars[9000], out[4300];
    put(dir, "k.csv",
        "name,shape,calls,median_ms,min_ms,max_ms,flops,bytes,gflops,gbs,frac_sgemm,frac_memcpy,total_ms_per_step\n"
        "data:upload,8192 bytes,1,0.000795,0,0,0,0,0,0,0,0,0.000795\n"
        "model:matmul_fwd,1024x768 @ 768x768^T,12,1,1,1,0,0,0,0,0,0,12.5\n"
        "model:matmul_bwd,1024x768 @ 768x768^T,12,2,2,2,0,0,0,0,0,0,25.125\n"
        "optimizer:adam_update,40,1,0.007,0,0,0,0,0,0,0,0,0.007\n"
        "optimizer:orthogonalize,48 matrices 28311552 elements NS5 bf16,1,4682.04,0,0,0,0,0,0,0,0,4682.04\n"
        "step.data,,1,0.003,0,0,0,0,0,0,0,0,0.003\n"
        "ceiling.sgemm,,1,0,0,0,0,0,0,0,0,0,0\n");
    snprintf(out, sizeof out, "%s/k.svg", dir);
    snprintf(vars, sizeof vars, "csv='%s/k.csv'; png='%s'; title='fixture'", dir, out);
    char *svg = render(dir, "bench/kernels.gp", vars, out);
    const char *legend[] = {"forward", "backward (and the loss with its gradient)", "optimizer, data and other"};
    for (int i = 0; i < 3; i++) {
        char key[128];
        snprintf(key, sizeof key, "<text>%s</text>", legend[i]);
        cr_assert(strstr(svg, key), "no legend entry '%s'", legend[i]);
    }
    // The bar labels: ms with three decimals, whatever the magnitude (no 1e-03, no 4.68e+03).
    const char *want[] = {" 0.001", " 12.500", " 25.125", " 0.007", " 4682.040"};
    for (int i = 0; i < 5; i++) {
        char key[64];
        snprintf(key, sizeof key, "<text>%s</text>", want[i]);
        cr_assert(strstr(svg, key), "no bar label '%s'", want[i]);
    }
    const char *p = svg;
    for (char *t; (t = next_text(&p)); free(t))
        cr_assert(!strstr(t, "e+0") && !strstr(t, "e-0"), "a number in exponent notation: %s", t);
    free(svg);
    th_rmtree(dir);
    free(dir);
}

// WCAG's relative luminance of an sRGB colour, and its contrast ratio against white.
static double channel(int c) {
    double s = c / 255.0;
    return s <= 0.03928 ? s / 12.92 : pow((s + 0.055) / 1.055, 2.4);
}
static double contrast_on_white(int r, int g, int b) {
    double l = 0.2126 * channel(r) + 0.7152 * channel(g) + 0.0722 * channel(b);
    return 1.05 / (l + 0.05);
}

Test(charts, repro_chart_colours_stand_out_and_the_spread_is_stated) {
    char *dir = th_tmpdir(), vars[4400], out[4300], dat[4096];
    const char *presets[] = {"adamw", "muon-v1", "muon-v2", "untied", "value-embed", "softcap"};
    put(dir, "curves.presets", "adamw muon-v1 muon-v2 untied value-embed softcap\n");
    size_t n = 0;
    for (int i = 0; i < 6; i++)
        n += (size_t)snprintf(dat + n, sizeof dat - n, "%s# %s: tokens mean std\n0 8.5 0.03\n51200 %.3f 0.02\n102400 %.3f 0.00%d\n",
                              i ? "\n\n" : "", presets[i], 6.0 - 0.1 * i, 5.5 - 0.1 * i, 4 + i);
    put(dir, "curves.dat", dat);
    snprintf(out, sizeof out, "%s/curves.png", dir);
    snprintf(vars, sizeof vars, "dir='%s'", dir);
    char *svg = render(dir, "bench/repro_curves.gp", vars, out);
    int rgb[6][3];
    for (int i = 0; i < 6; i++) {
        const char *c = in_group(svg, presets[i], "stroke='rgb(");
        cr_assert_eq(sscanf(c, "%d, %d, %d", &rgb[i][0], &rgb[i][1], &rgb[i][2]), 3);
        double k = contrast_on_white(rgb[i][0], rgb[i][1], rgb[i][2]);
        cr_assert_geq(k, 3.0, "%s: rgb(%d, %d, %d) has contrast %.2f:1 on white, below 3:1", presets[i], rgb[i][0], rgb[i][1],
                      rgb[i][2], k);
        for (int j = 0; j < i; j++)
            cr_assert(memcmp(rgb[i], rgb[j], sizeof rgb[i]), "%s and %s share a colour", presets[i], presets[j]);
    }
    // The final point of each preset with its standard deviation written out (0.004 .. 0.009).
    for (int i = 0; i < 6; i++) {
        char key[64];
        snprintf(key, sizeof key, ">±0.00%d<", 4 + i);
        cr_assert(strstr(svg, key), "the spread of %s (0.00%d) is not written", presets[i], 4 + i);
    }
    free(svg);
    th_rmtree(dir);
    free(dir);
}

Test(charts, ns_map_ticks_are_powers_of_ten_and_precisions_differ) {
    char *dir = th_tmpdir(), vars[4400], out[4300];
    size_t cap = 1 << 16, n = 0;
    char *dat = malloc(cap);
    for (int b = 0; b < 20; b++) {  // 4 curves, then fp32 and bf16 points per set and input shape
        n += (size_t)snprintf(dat + n, cap - n, "%s# block %d\n", b ? "\n\n" : "", b);
        for (int k = 0; k < 24; k++) {
            double x = pow(10.0, -5.0 + 5.0 * k / 23);
            n += (size_t)snprintf(dat + n, cap - n, "%.6g %.6g\n", x, 1.0 - exp(-100 * x));
        }
    }
    put(dir, "ns_map.dat", dat);
    free(dat);
    snprintf(out, sizeof out, "%s/ns_map.png", dir);
    snprintf(vars, sizeof vars, "dir='%s'", dir);
    char *svg = render(dir, "bench/ns_map.gp", vars, out);
    // Tick labels 10^-5 ... 10^0: "10" with the exponent as a superscript, never 1e-05.
    int powers = 0;
    const char *p = svg;
    for (char *t; (t = next_text(&p)); free(t)) {
        cr_assert_null(strstr(t, "e-0"), "tick label in exponent notation: %s", t);
        for (int e = -5; e <= 0; e++) {
            char want[16];
            snprintf(want, sizeof want, "10%d", e);
            powers += !strcmp(t, want);
        }
    }
    cr_assert_eq(powers, 4 * 6, "%d of the 24 power-of-ten tick labels (6 per panel)", powers);
    // bf16 and fp32 points (and the two input shapes) are four different symbols.
    const char *series[] = {"bf16 768x768", "bf16 768x3072", "fp32 768x768", "fp32 768x3072"};
    int sym[4];
    for (int i = 0; i < 4; i++) {
        sym[i] = atoi(in_group(svg, series[i], "xlink:href='#gpPt"));
        for (int j = 0; j < i; j++) cr_assert_neq(sym[i], sym[j], "%s and %s share a symbol", series[i], series[j]);
    }
    free(svg);
    th_rmtree(dir);
    free(dir);
}
