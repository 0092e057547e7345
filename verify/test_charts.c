// The gnuplot charts of make bench and make repro say what they show: the kernel chart has a
// legend for its three colours and one number format; the repro chart draws every preset in a
// colour that stands out on white (value-embed was pale yellow over softcap) and states the spread
// between seeds (its +-1 std band was invisible); the NS map writes its log-axis ticks as powers of
// ten and marks bf16 and fp32 points with different symbols. Each script renders small fixture
// data as SVG (its pngcairo terminal swapped for svg), whose text and attributes the tests read.
// Every chart is also checked as a reader sees it: each piece of text inside the canvas and clear
// of every other (tick labels that ran together, a last tick cut at the edge), panels side by side
// rather than one over another's curves, one colour per preset whatever subset is drawn, and the
// spread between seeds drawn tall enough to see.
#include <criterion/criterion.h>
#include <ctype.h>
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

// A text's box on the PNG, estimated from the SVG's anchor point, font size and rotation. Widths
// are the PNG's (pngcairo draws a size-F font's digits about 0.8 F pixels wide; a few narrow
// characters half that), so the estimate errs on the wide side.
typedef struct {
    double x0, y0, x1, y1;
    char *text;
} box;

static int narrow(unsigned char c) { return c == '.' || c == ',' || c == ':' || c == ' ' || c == 'i' || c == 'l' || c == '|' || c == '\''; }

// Every text of the SVG with its box (malloc'd array, *n entries).
static box *text_boxes(const char *svg, int *n) {
    box *b = NULL;
    *n = 0;
    for (const char *p = svg; (p = strstr(p, "<g transform=\"translate(")); p++) {
        double x, y, rot = 0, f;
        const char *end = strchr(p, '>'), *fs = strstr(p, "font-size=\""), *anchor = strstr(p, "text-anchor=\"");
        if (sscanf(p, "<g transform=\"translate(%lf,%lf) rotate(%lf", &x, &y, &rot) < 2 || !fs || fs > end) continue;
        f = atof(fs + 11);
        const char *q = end;
        char *t = next_text(&q);
        if (!t) break;
        double w = 0;
        for (const unsigned char *c = (const unsigned char *)t; *c; c++)
            if ((*c & 0xc0) != 0x80) w += (narrow(*c) ? 0.4 : 0.8) * f;  // one UTF-8 character
        double left = anchor && anchor < end && !strncmp(anchor + 13, "end", 3)      ? -w
                      : anchor && anchor < end && !strncmp(anchor + 13, "middle", 6) ? -w / 2
                                                                                     : 0;
        // The corners relative to the anchor (baseline at y), turned by rot degrees as SVG does.
        double cx[4] = {left, left + w, left + w, left}, cy[4] = {-0.75 * f, -0.75 * f, 0.25 * f, 0.25 * f};
        double c = cos(rot * M_PI / 180), s = sin(rot * M_PI / 180);
        box k = {1e9, 1e9, -1e9, -1e9, t};
        for (int i = 0; i < 4; i++) {
            double X = x + c * cx[i] - s * cy[i], Y = y + s * cx[i] + c * cy[i];
            k.x0 = fmin(k.x0, X), k.x1 = fmax(k.x1, X), k.y0 = fmin(k.y0, Y), k.y1 = fmax(k.y1, Y);
        }
        b = realloc(b, (size_t)(*n + 1) * sizeof *b);
        b[(*n)++] = k;
        p = q;
    }
    return b;
}

// What a reader needs of every chart: each text inside the canvas, no two texts on each other.
static void texts_fit_and_stay_apart(const char *svg, const char *what) {
    double width, height;
    const char *d = strstr(svg, "<svg");
    cr_assert(d && sscanf(strstr(d, "width=\""), "width=\"%lf\"", &width) == 1 && sscanf(strstr(d, "height=\""), "height=\"%lf\"", &height) == 1);
    int n;
    box *b = text_boxes(svg, &n);
    cr_assert_gt(n, 10, "%s: only %d texts found", what, n);
    for (int i = 0; i < n; i++) {
        cr_expect(b[i].x0 >= 0 && b[i].y0 >= 0 && b[i].x1 <= width && b[i].y1 <= height,
                  "%s: '%s' reaches out of the %gx%g canvas (%.0f..%.0f, %.0f..%.0f)", what, b[i].text, width, height, b[i].x0, b[i].x1,
                  b[i].y0, b[i].y1);
        for (int j = 0; j < i; j++)  // one pixel of slack: texts that merely touch are apart
            cr_expect(b[i].x0 + 1 >= b[j].x1 || b[j].x0 + 1 >= b[i].x1 || b[i].y0 + 1 >= b[j].y1 || b[j].y0 + 1 >= b[i].y1,
                      "%s: '%s' and '%s' overlap", what, b[i].text, b[j].text);
    }
    for (int i = 0; i < n; i++) free(b[i].text);
    free(b);
}

// The plot areas of a chart (a panel's border: a closed rectangle path) never overlap: no panel
// lies over another's curves. Returns the number of panels.
static int panels_apart(const char *svg, const char *what, double area[][4], int max) {
    int n = 0;
    for (const char *p = svg; (p = strstr(p, "d='M")); p++) {
        double x[5], y[5];
        char z;
        if (sscanf(p, "d='M%lf,%lf L%lf,%lf L%lf,%lf L%lf,%lf L%lf,%lf %c", &x[0], &y[0], &x[1], &y[1], &x[2], &y[2], &x[3], &y[3], &x[4],
                   &y[4], &z) != 11 || z != 'Z' || x[0] != x[1] || y[1] != y[2] || x[2] != x[3] || x[4] != x[0] || y[4] != y[0])
            continue;
        double a[4] = {fmin(x[0], x[2]), fmin(y[0], y[1]), fmax(x[0], x[2]), fmax(y[0], y[1])};
        int seen = 0;  // a border drawn twice, or a panel's background, is one panel
        for (int j = 0; j < n; j++)
            seen |= fabs(a[0] - area[j][0]) < 2 && fabs(a[1] - area[j][1]) < 2 && fabs(a[2] - area[j][2]) < 2 && fabs(a[3] - area[j][3]) < 2;
        if (seen) continue;
        cr_assert_lt(n, max);
        memcpy(area[n], a, sizeof a);
        for (int j = 0; j < n; j++)
            cr_expect(area[n][0] >= area[j][2] || area[j][0] >= area[n][2] || area[n][1] >= area[j][3] || area[j][1] >= area[n][3],
                      "%s: panel %d (%.0f,%.0f)-(%.0f,%.0f) lies over panel %d", what, n + 1, area[n][0], area[n][1], area[n][2], area[n][3],
                      j + 1);
        n++;
    }
    return n;
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

Test(charts, kernel_chart_has_a_legend_one_number_format_and_texts_apart) {
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
    texts_fit_and_stay_apart(svg, "kernels.gp on the fixture");
    free(svg);
    // The committed full-scale chart's data: its x tick labels ran together ("9000.0010000.00").
    snprintf(vars, sizeof vars, "csv='%s'; png='%s'; title='fixture'", th_root_path("reports/bench/amd-epyc-2t-softcap-full.csv"), out);
    svg = render(dir, "bench/kernels.gp", vars, out);
    texts_fit_and_stay_apart(svg, "kernels.gp on reports/bench/amd-epyc-2t-softcap-full.csv");
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

static const char *const all_presets[] = {"adamw", "muon-v1", "muon-v2", "untied", "value-embed", "softcap", "normuon"};
enum { NPRESETS = sizeof all_presets / sizeof all_presets[0] };
#define ALL_PRESETS "adamw muon-v1 muon-v2 untied value-embed softcap normuon"

// Whether the space-separated `list` holds `word`.
static int in_list(const char *list, const char *word) {
    char padded[256], key[64];
    snprintf(padded, sizeof padded, " %s ", list);
    snprintf(key, sizeof key, " %s ", word);
    return strstr(padded, key) != NULL;
}

// Render bench/repro_curves.gp on made-up curves of the presets named in `subset` (space-separated,
// in that order; a name that is not a preset is a variant, number 7, 8, ... in its order), shaped
// like a tiny-scale repro (7 validations to 102400 tokens; curve k, k the preset's place among the
// seven or the variant's number, ends at 5.5 - 0.1 k with sd 0.001 (4 + k)); with `overlay`, two
// PyTorch-like logs to 2e9 tokens.
static char *render_curves(const char *dir, const char *subset, int overlay) {
    char vars[4400], out[4300], dat[8192], line[256], words[256];
    size_t n = 0;
    snprintf(line, sizeof line, "%s\n", subset);
    put(dir, "curves.presets", line);
    snprintf(words, sizeof words, "%s", subset);
    int variants = 0;
    for (char *save = NULL, *w = strtok_r(words, " ", &save); w; w = strtok_r(NULL, " ", &save)) {
        int k = 0;
        while (k < NPRESETS && strcmp(all_presets[k], w)) k++;
        if (k == NPRESETS) k += variants++;
        n += (size_t)snprintf(dat + n, sizeof dat - n, "%s# %s: tokens mean std\n", n ? "\n\n" : "", w);
        for (int v = 0; v <= 6; v++) {
            double t = v == 6 ? 102400 : 17408.0 * v, loss = 5.5 - 0.1 * k + 3.0 * (exp(-t / 20000) - exp(-102400.0 / 20000));
            n += (size_t)snprintf(dat + n, sizeof dat - n, "%.0f %.6f %.6f\n", t, loss, v == 6 ? 0.001 * (4 + k) : 0.02);
        }
    }
    put(dir, "curves.dat", dat);
    if (overlay) {
        put(dir, "overlay.labels", "speedrun-#18 llm.c\n");
        put(dir, "overlay.dat", "# speedrun-#18\n0 10.8\n65536000 4.1\n524288000 3.4\n1500000000 3.28\n\n\n"
                                "# llm.c\n0 11.0\n131072000 4.5\n2000000000 3.3\n\n\n");
    }
    snprintf(out, sizeof out, "%s/curves.png", dir);
    snprintf(vars, sizeof vars, "dir='%s'", dir);
    return render(dir, "bench/repro_curves.gp", vars, out);
}

// The seven presets and four variants (LABEL=PRESET:FLAGS in bench/repro.sh) drawn together: eleven
// colours, all different. A preset missing from the script's table would take the first variant
// colour, which the fourth variant then shares, so the difference test also finds a forgotten preset.
#define VARIANTS "softcap+a softcap+b softcap+c softcap+d"
enum { NCURVES = NPRESETS + 4 };
Test(charts, repro_chart_colours_stand_out_and_the_spread_is_stated) {
    static const char *const name[NCURVES] = {"adamw", "muon-v1", "muon-v2", "untied", "value-embed", "softcap", "normuon",
                                              "softcap+a", "softcap+b", "softcap+c", "softcap+d"};
    char *dir = th_tmpdir();
    char *svg = render_curves(dir, ALL_PRESETS " " VARIANTS, 0);
    int rgb[NCURVES][3];
    for (int i = 0; i < NCURVES; i++) {
        const char *c = in_group(svg, name[i], "stroke='rgb(");
        cr_assert_eq(sscanf(c, "%d, %d, %d", &rgb[i][0], &rgb[i][1], &rgb[i][2]), 3);
        double k = contrast_on_white(rgb[i][0], rgb[i][1], rgb[i][2]);
        cr_assert_geq(k, 3.0, "%s: rgb(%d, %d, %d) has contrast %.2f:1 on white, below 3:1", name[i], rgb[i][0], rgb[i][1],
                      rgb[i][2], k);
        for (int j = 0; j < i; j++)
            cr_assert(memcmp(rgb[i], rgb[j], sizeof rgb[i]), "%s and %s share a colour (a preset missing from "
                      "bench/repro_curves.gp's PRESETS takes a variant's)", name[i], name[j]);
    }
    // The final point of each curve with its standard deviation written out (0.004 .. 0.014).
    for (int i = 0; i < NCURVES; i++) {
        char key[64];
        snprintf(key, sizeof key, " ± %.3f<", 0.001 * (4 + i));
        cr_assert(strstr(svg, key), "the spread of %s (%.3f) is not written", name[i], 0.001 * (4 + i));
    }
    free(svg);
    th_rmtree(dir);
    free(dir);
}

// Each preset keeps its colour whichever presets are drawn with it (softcap was blue among six and
// grey alone): the colour comes from the preset's name, not its place in the list.
Test(charts, repro_chart_gives_each_preset_one_colour_in_any_subset) {
    char *dir = th_tmpdir();
    char *svg = render_curves(dir, ALL_PRESETS, 0);
    char want[NPRESETS][32];
    for (int i = 0; i < NPRESETS; i++) snprintf(want[i], sizeof want[i], "%.14s", in_group(svg, all_presets[i], "stroke='rgb("));
    free(svg);
    const char *subsets[] = {"softcap", "adamw softcap", "softcap value-embed untied", "muon-v2 adamw", "softcap normuon"};
    for (int s = 0; s < 5; s++) {
        svg = render_curves(dir, subsets[s], 0);
        for (int i = 0; i < NPRESETS; i++) {
            if (!in_list(subsets[s], all_presets[i])) continue;
            char got[32];
            snprintf(got, sizeof got, "%.14s", in_group(svg, all_presets[i], "stroke='rgb("));
            cr_expect_str_eq(got, want[i], "%s is rgb(%s among '%s' but rgb(%s among all seven", all_presets[i], got, subsets[s],
                             want[i]);
        }
        free(svg);
    }
    th_rmtree(dir);
    free(dir);
}

// The spread between seeds is drawn where it can be seen: each preset's sd over tokens in a panel
// of its own with a zero-based axis, the final sd (0.004 .. 0.010 in the fixture) at least 10 px
// tall and in proportion (the +-1 sd bars on the loss axis were under 2 px).
Test(charts, repro_chart_draws_the_spread_between_seeds_tall_enough_to_see) {
    char *dir = th_tmpdir();
    char *svg = render_curves(dir, ALL_PRESETS, 0);
    double area[8][4], h[NPRESETS];
    int panels = panels_apart(svg, "curves.png", area, 8);
    for (int i = 0; i < NPRESETS; i++) {
        char title[64];
        snprintf(title, sizeof title, "sd of %s", all_presets[i]);
        const char *p = in_group(svg, title, "d='M"), *end = strchr(p, '\'');
        double x = 0, y = 0;  // the path's last point
        while (p && p < end && sscanf(p, "%lf,%lf", &x, &y) == 2)
            if ((p = strpbrk(p, "LM'")) && *p++ == '\'') break;
        int in = -1;
        for (int a = 0; a < panels; a++)
            if (x >= area[a][0] && x <= area[a][2] && y >= area[a][1] && y <= area[a][3]) in = a;
        cr_assert_geq(in, 0, "%s: its last point (%.1f, %.1f) lies in no panel", title, x, y);
        h[i] = area[in][3] - y;
        cr_expect_geq(h[i], 10.0, "%s: the final sd %.3f is drawn %.1f px tall", title, 0.001 * (4 + i), h[i]);
    }
    for (int i = 1; i < NPRESETS; i++)
        cr_expect_float_eq(h[i] / h[0], (4.0 + i) / 4.0, 0.05, "%s: drawn %.1f px against adamw's %.1f px, not in proportion", all_presets[i],
                           h[i], h[0]);
    free(svg);
    th_rmtree(dir);
    free(dir);
}

// The chart as a reader sees it, with 1, 2 and 7 presets, the frontier repro's five curves (three
// variants), and with overlaid logs (a logarithmic token axis): no panel over another, every text
// inside the canvas (the last x tick was cut at the right edge) and clear of the others.
Test(charts, repro_chart_panels_and_texts_stay_apart) {
    char *dir = th_tmpdir();
    const char *subsets[] = {"softcap", "adamw softcap", ALL_PRESETS,
                             "softcap normuon softcap+polar-express softcap+normuon softcap+cautious-wd"};
    for (int overlay = 0; overlay < 2; overlay++)
        for (int s = 0; s < 4; s++) {
            char *svg = render_curves(dir, subsets[s], overlay), what[128];
            snprintf(what, sizeof what, "curves.png of %s%s", subsets[s], overlay ? " with overlays" : "");
            double area[8][4];
            cr_expect_geq(panels_apart(svg, what, area, 8), 2, "%s: fewer panels than expected", what);
            texts_fit_and_stay_apart(svg, what);
            if (overlay) cr_expect(strstr(svg, "<title>llm.c</title>"), "%s: the overlay llm.c is not drawn", what);
            free(svg);
        }
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
    double area[8][4];
    cr_expect_eq(panels_apart(svg, "ns_map.png", area, 8), 4);
    texts_fit_and_stay_apart(svg, "ns_map.png");
    // The sigma_in axis names no symbol that the chart leaves undefined (it divided by "s ||G||_F"
    // with s, a set's scale, never said): no one-letter word in it but X, the normalized input.
    p = svg;
    int labels = 0;
    for (char *t; (t = next_text(&p)); free(t)) {
        if (strncmp(t, "sigma_in", 8)) continue;  // the axis labels begin with it
        labels++;
        for (char *w = strtok(t, " /()+=<>|,:;*"); w; w = strtok(NULL, " /()+=<>|,:;*"))
            cr_expect(strlen(w) != 1 || !isalpha((unsigned char)w[0]) || !strcmp(w, "X"), "the axis label names '%s', which the chart never defines", w);
    }
    cr_expect_eq(labels, 4, "%d sigma_in axis labels (one per panel)", labels);
    free(svg);
    th_rmtree(dir);
    free(dir);
}
