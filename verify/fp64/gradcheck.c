#include "gradcheck.h"

#include <math.h>
#include <stdlib.h>

#include "base/rng.h"

void gc_randn(gm_real *x, size_t n, double std, uint64_t seed, uint64_t stream) {
    for (size_t i = 0; i < n; i++) x[i] = (gm_real)(std * gm_rng_normal(seed, stream, i));
}

static double weighted(gc_fn fn, const gm_real *w, gm_real *out) {
    fn.fwd(fn.ctx, out);
    double L = 0;
    for (size_t i = 0; i < fn.nout; i++) L += (double)w[i] * out[i];
    return L;
}

double gc_check(gc_fn fn, gc_input *in, int nin, size_t max_elems, uint64_t seed, double *per_input_err) {
    gm_real *w = malloc(sizeof(gm_real) * fn.nout), *out = malloc(sizeof(gm_real) * fn.nout);
    gc_randn(w, fn.nout, 1.0, seed, 1000);
    gm_real **base = malloc(sizeof(gm_real *) * (size_t)nin);
    for (int k = 0; k < nin; k++) {
        base[k] = malloc(sizeof(gm_real) * in[k].n);
        gc_randn(base[k], in[k].n, 1.0, seed, 2000 + (uint64_t)k);
        for (size_t i = 0; i < in[k].n; i++) in[k].dx[i] = base[k][i];
    }
    fn.bwd(fn.ctx, w);
    double worst = 0;
    for (int k = 0; k < nin; k++) {
        size_t n = in[k].n, m = n < max_elems ? n : max_elems;
        double num = 0, den = 0;
        for (size_t e = 0; e < m; e++) {
            // all elements when they fit, else a fixed pseudo-random sample
            size_t i = m == n ? e : gm_rng_u32(seed, 3000 + (uint64_t)k, e) % n;
            gm_real x0 = in[k].x[i];
            double h = 1e-5 * (fabs((double)x0) > 1 ? fabs((double)x0) : 1);
            in[k].x[i] = x0 + h;
            double Lp = weighted(fn, w, out);
            in[k].x[i] = x0 - h;
            double Lm = weighted(fn, w, out);
            in[k].x[i] = x0;
            double fd = (Lp - Lm) / (2 * h), g = in[k].dx[i] - base[k][i];
            num += (g - fd) * (g - fd);
            den += fd * fd;
        }
        double err = den > 0 ? sqrt(num / den) : sqrt(num);
        if (per_input_err) per_input_err[k] = err;
        worst = err > worst ? err : worst;
        free(base[k]);
    }
    free(base);
    free(w);
    free(out);
    return worst;
}
