// The tensor-core attention's kernel bodies (impl/backend/cuda/attention_mma.cu: the mma.sync
// forward with 16 and 32 query rows per warp, its backward, the wgmma forward and backward, and the
// one-pass backward) run on the CPU under emu.h, against the CPU backend's dense reference
// (backend/cpu/cpu.h: gm_cpu_attn_fwd_dense / bwd_dense on gm_cpu_attn_dense_mask, the mask rule
// element by element), for verify/test_attn_emulated.c. Built with CUDA's headers (g++, not nvcc)
// and linked with the release library for that reference (Makefile).
//
//   attn_emu                                 the default cases
//   attn_emu parts                           the Hopper parts one at a time (parts_body: TMA,
//                                            the swizzle, each wgmma operand form), exact
//   attn_emu B T NH HD BLOCK WINDOW DOC_LEN [GROW]
//                                            one case (WINDOW 0: causal only; DOC_LEN 0: no
//                                            documents, else lengths uniform in 1 .. 2 DOC_LEN - 1;
//                                            GROW 1: key t scaled by 1 + t / 16, so that a row's
//                                            maximum grows tile after tile by more than the
//                                            forward's rescale slack)
//
// Per case one line per output and implementation: max |error| / max |reference|, bounded by 2e-2
// (bf16's unit roundoff is 3.9e-3: the inputs are bf16 values, the kernels round P and dS to bf16
// as MMA operands and every output at its store); the 32-row and the wgmma forward (each of its
// forms: a block an item, persistent, taking turns) must equal the 16-row one bit for bit, the
// wgmma backward the mma one and the one-pass backward's dk and dv the wgmma one's (the same
// operations in the same order); "PASS" or "FAIL" per case, then "<n> failed"; exit status 1 when
// any failed.
#include "emu.h"

// One block's shared memory (the kernels ask <= 196 KB: the wgmma dk/dv kernel).
alignas(1024) unsigned char smem[240 * 1024];

#include "backend/cuda/attention_mma.cu"

extern "C" {
#include "backend/cpu/cpu.h"  // the dense reference: gm_cpu_attn_{fwd,bwd}_dense, gm_cpu_attn_dense_mask
}

#include <stdio.h>
#include <stdlib.h>

#include <functional>
#include <random>
#include <thread>

thread_local uint3 emu_thread_idx, emu_block_idx;
thread_local dim3 emu_grid_dim, emu_block_dim;
thread_local int emu_phase;
thread_local std::vector<emu_copy> emu_copies;
thread_local std::vector<size_t> emu_copy_groups;
thread_local std::vector<emu_wgmma_op> emu_wgmma_ops;
thread_local std::vector<size_t> emu_wgmma_groups;
emu_warp *emu_warps;
emu_warpgroup *emu_warpgroups;
std::barrier<> *emu_block_bar;
emu_named_barrier *emu_named_barriers;

// Runs body as every thread of every block of grid, one block at a time, shared memory poisoned
// (NaN bytes) before each. A thread that ends with cp.async copies it never waited for aborts, and
// so does a block that ends with TMA copies no thread waited for, or with a named barrier that some
// threads arrived at and too few to complete it.
static void launch(dim3 grid, int nthreads, const std::function<void()> &body) {
    for (unsigned bz = 0; bz < grid.z; bz++)
        for (unsigned by = 0; by < grid.y; by++)
            for (unsigned bx = 0; bx < grid.x; bx++) {
                memset(smem, 0xff, sizeof smem);
                std::barrier<> block_bar(nthreads);
                std::vector<emu_warp> warps(nthreads / 32);
                std::vector<emu_warpgroup> groups((nthreads + 127) / 128);
                std::vector<emu_named_barrier> named(EMU_NAMED_BARRIERS);
                emu_named_barriers = named.data();
                for (emu_warp &w : warps) w.bar = new std::barrier<>(32);
                for (emu_warpgroup &g : groups) g.bar = new std::barrier<>(128);
                emu_block_bar = &block_bar, emu_warps = warps.data(), emu_warpgroups = groups.data();
                std::vector<std::thread> threads;
                for (int t = 0; t < nthreads; t++)
                    threads.emplace_back([&, t] {
                        emu_thread_idx = {(unsigned)t, 0, 0}, emu_block_idx = {bx, by, bz};
                        emu_grid_dim = grid, emu_block_dim = dim3(nthreads), emu_phase = 0;
                        body();
                        if (!emu_copies.empty()) {
                            fprintf(stderr, "attn_emu: a thread ended with cp.async copies never waited for\n");
                            abort();
                        }
                    });
                for (std::thread &x : threads) x.join();
                for (const auto &[bar, state] : emu_mbars)
                    if (!state.in_flight.empty()) {
                        fprintf(stderr, "attn_emu: block (%u, %u, %u) ended with TMA copies never waited for\n", bx,
                                by, bz);
                        abort();
                    }
                emu_mbars.clear();
                for (int id = 0; id < EMU_NAMED_BARRIERS; id++)
                    if (named[id].arrived) {
                        fprintf(stderr,
                                "attn_emu: block (%u, %u, %u) ended with %d threads arrived at named barrier %d\n", bx,
                                by, bz, named[id].arrived, id);
                        abort();
                    }
                for (emu_warp &w : warps) delete w.bar;
                for (emu_warpgroup &g : groups) delete g.bar;
            }
}

static std::vector<float> widen(const std::vector<gm_cuda_act> &x) {
    std::vector<float> r(x.size());
    for (size_t i = 0; i < x.size(); i++) r[i] = gm_act_widen(x[i]);
    return r;
}

// Prints and returns max |got - ref| / max |ref| (max |got - ref| where ref is all zeros; a NaN in
// got gives NaN, which no bound passes).
static double report(const char *impl, const char *what, const std::vector<float> &got, const std::vector<float> &ref) {
    double top = 0, err = 0;
    for (size_t i = 0; i < ref.size(); i++) {
        top = fmax(top, fabs(ref[i]));
        const double e = fabs(got[i] - ref[i]);
        if (err == err && !(e <= err)) err = e;  // a NaN stays
    }
    const double rel = top > 0 ? err / top : err;
    printf("  %-6s %-4s max |ref| %-8.3g max error %-9.3g relative %.3g\n", impl, what, top, err, rel);
    return rel;
}

struct attn_case {
    int B, T, NH, HD, block, window, doc_len, grow;
};

static int run_case(const attn_case &c, unsigned seed) {
    const int B = c.B, T = c.T, NH = c.NH, HD = c.HD;
    printf("case B %d T %d NH %d HD %d block %d window %d doc_len %d%s\n", B, T, NH, HD, c.block, c.window, c.doc_len,
           c.grow ? " keys growing along T" : "");
    std::mt19937 rng(seed);
    std::normal_distribution<float> normal(0, 1);
    const size_t n = (size_t)B * T * NH * HD, nl = (size_t)B * NH * T;
    std::vector<float> qf(n), kf(n), vf(n), df(n);
    std::vector<gm_cuda_act> q(n), k(n), v(n), dout(n);
    for (size_t i = 0; i < n; i++) {
        const float kscale = c.grow ? 1.0f + (float)(i / ((size_t)NH * HD) % T) / 16 : 1.0f;  // token i / (NH HD) % T
        qf[i] = gm_round_bf16(normal(rng)), kf[i] = gm_round_bf16(kscale * normal(rng));
        vf[i] = gm_round_bf16(normal(rng)), df[i] = gm_round_bf16(normal(rng));
        gm_act_round(&q[i], qf[i]), gm_act_round(&k[i], kf[i]), gm_act_round(&v[i], vf[i]), gm_act_round(&dout[i], df[i]);
    }
    std::vector<int32_t> doc((size_t)B * T);
    for (int b = 0; b < B; b++)
        for (int t = 0, d = 0, left = 0; t < T; t++) {
            if (c.doc_len > 0 && left-- == 0) d++, left = (int)(rng() % (2 * c.doc_len - 1));
            doc[(size_t)b * T + t] = d;
        }
    gm_attn_mask m;
    memset(&m, 0, sizeof m);
    m.doc = c.doc_len > 0 ? doc.data() : NULL, m.block = c.block, m.window_blocks = c.window;
    const double scale = 1 / sqrt((double)HD);
    auto at = [&](int b, int t, int h) { return (((size_t)b * T + t) * NH + h) * HD; };

    // The CPU backend's dense reference on the same bf16 values: out, lse, and the gradients (added
    // into zeros) with D from its own out.
    std::vector<float> rout(n), rlse(nl), rdq(n, 0), rdk(n, 0), rdv(n, 0);
    std::vector<uint8_t> dense((size_t)B * T * T);
    gm_cpu_attn_dense_mask(dense.data(), B, T, m);
    gm_cpu_attn_fwd_dense(rout.data(), rlse.data(), qf.data(), kf.data(), vf.data(), B, T, NH, HD, scale, dense.data());
    gm_cpu_attn_bwd_dense(rdq.data(), rdk.data(), rdv.data(), df.data(), qf.data(), kf.data(), vf.data(), B, T, NH, HD,
                          scale, dense.data());

    // With documents, every token's mask bounds first, as the launchers compute them.
    std::vector<int32_t> bounds_v(2 * (size_t)B * T);
    if (m.doc)
        launch(dim3((unsigned)((B * T + 255) / 256)), 256, [&] { mask_bounds_body(bounds_v.data(), m, B, T); });
    const int32_t *bounds = m.doc ? bounds_v.data() : nullptr;
    // The wgmma forms' tensor maps (the shim's records of q, k, v, dout; lse2 and D below), as the
    // launchers make them.
    attn_tmaps tm;
    tma_map_rows(&tm.q, q.data(), B, T, NH, HD), tma_map_rows(&tm.k, k.data(), B, T, NH, HD);
    tma_map_rows(&tm.v, v.data(), B, T, NH, HD), tma_map_rows(&tm.o, dout.data(), B, T, NH, HD);
    const dim3 grid((T + BLOCK_ROWS - 1) / BLOCK_ROWS, NH, B);
    const float sl2 = (float)(scale * LOG2E), sc = (float)scale;
    double worst = 0;  // the largest relative error; NaN once any is NaN
    auto note = [&worst](double rel) { worst = worst != worst ? worst : rel > worst || rel != rel ? rel : worst; };
    int failed = 0;
    // Forwards: mma with 16 rows a warp, 32 rows a warp (bitwise the same), wgmma (a block an item),
    // wgmma on persistent blocks (bitwise the same): one block walking every item (the query stages
    // given back and used again from the fourth), and two (their rounds taken in a snake); and
    // wgmma with its warpgroups taking turns (bitwise the same), a block an item and one block.
    std::vector<gm_cuda_act> out(n), out32(n), outw(n), outp(n), outp2(n), outt(n), outt1(n);
    std::vector<float> lse(nl), lse32(nl), lsew(nl), lsep(nl), lsep2(nl), lset(nl), lset1(nl);
    const unsigned items = (unsigned)(B * NH) * grid.x;
    launch(grid, NTHREADS(1), [&] {
        fwd_body<1, false>(out.data(), lse.data(), q.data(), k.data(), v.data(), B, T, NH, sl2, m, bounds, HD, &tm,
                           false);
    });
    launch(grid, NTHREADS(2), [&] {
        fwd_body<2, false>(out32.data(), lse32.data(), q.data(), k.data(), v.data(), B, T, NH, sl2, m, bounds, HD, &tm,
                           false);
    });
    const auto wgmma_forward = [&](unsigned blocks, std::vector<gm_cuda_act> &o, std::vector<float> &l, bool turns) {
        launch(dim3(blocks), FWD_THREADS(1, true, HD), [&] {
            fwd_body<1, true>(o.data(), l.data(), q.data(), k.data(), v.data(), B, T, NH, sl2, m, bounds, HD, &tm,
                              turns);
        });
    };
    wgmma_forward(items, outw, lsew, false), wgmma_forward(1, outp, lsep, false);
    if (items > 2) wgmma_forward(2, outp2, lsep2, false);
    wgmma_forward(items, outt, lset, true), wgmma_forward(1, outt1, lset1, true);
    note(report("mma", "out", widen(out), rout));
    note(report("mma", "lse", lse, rlse));
    note(report("wgmma", "out", widen(outw), rout));
    note(report("wgmma", "lse", lsew, rlse));
    // The same arithmetic in another order of instructions: bitwise equal. Here the wgmma forward too
    // (both emulations sum each 16-deep product in float64 and add it to the fp32 accumulator; on a
    // GPU the order inside a wgmma is its own): its overlapped pipeline must not change an operation.
    const auto same = [&](const std::vector<gm_cuda_act> &o2, const std::vector<float> &l2, const char *what) {
        const bool eq = !memcmp(o2.data(), out.data(), n * sizeof(gm_cuda_act)) && !memcmp(l2.data(), lse.data(), nl * 4);
        printf("  %s  out, lse %s the 16-row forward's\n", what, eq ? "bitwise" : "NOT bitwise");
        return eq;
    };
    failed += !same(out32, lse32, "mma32") + !same(outw, lsew, "wgmma") + !same(outp, lsep, "wgmma-persist 1");
    if (items > 2) failed += !same(outp2, lsep2, "wgmma-persist 2");
    failed += !same(outt, lset, "wgmma-pingpong") + !same(outt1, lset1, "wgmma-pingpong 1");
    // Backwards on the mma forward's out and lse: the per-query vectors as attention.cu's pass
    // computes them (attention.cuh: D = rowsum(dout out), lse2 = lse log2(e), padded to Tq).
    const int Tq = gm_cuda_attn_qvec_len(T, 1);
    std::vector<float> D((size_t)B * NH * Tq, 0.0f), lse2((size_t)B * NH * Tq, INFINITY);
    for (int b = 0; b < B; b++)
        for (int h = 0; h < NH; h++)
            for (int i = 0; i < T; i++) {
                float s = 0;
                for (int e = 0; e < HD; e++) s += gm_act_widen(dout[at(b, i, h) + e]) * gm_act_widen(out[at(b, i, h) + e]);
                D[((size_t)b * NH + h) * Tq + i] = s;
                lse2[((size_t)b * NH + h) * Tq + i] = lse[((size_t)b * NH + h) * T + i] * (float)GM_ATTN_LOG2E;
            }
    // and their tensor maps (a run a head, a box a query tile), as gm_cuda_attn_mma_bwd makes them
    tma_map_vec(&tm.lse2, lse2.data(), B * NH, Tq, QUERY_TILE(HD, true));
    tma_map_vec(&tm.D, D.data(), B * NH, Tq, QUERY_TILE(HD, true));
    std::vector<gm_cuda_act> grads[2];  // dq | dk | dv of mma, of wgmma
    std::vector<gm_cuda_act> dq1(n), dk1(n), dv1(n);  // the one-pass backward's
    for (int wg = 0; wg < 2; wg++) {
        std::vector<gm_cuda_act> dq(n), dk(n), dv(n);
        const gm_cuda_act *o = dout.data(), *qp = q.data(), *kp = k.data(), *vp = v.data();
        launch(grid, BWD_THREADS, [&] {
            if (wg) dq_body<true>(dq.data(), o, qp, kp, vp, lse2.data(), D.data(), T, NH, sl2, sc, m, bounds, GM_GRAD_SET, HD, &tm);
            else dq_body<false>(dq.data(), o, qp, kp, vp, lse2.data(), D.data(), T, NH, sl2, sc, m, bounds, GM_GRAD_SET, HD, &tm);
        });
        launch(grid, BWD_THREADS, [&] {
            if (wg) dkdv_body<true, false>(dk.data(), dv.data(), o, qp, kp, vp, lse2.data(), D.data(), T, NH, sl2, sc, m, bounds, GM_GRAD_SET, HD, &tm);
            else dkdv_body<false, false>(dk.data(), dv.data(), o, qp, kp, vp, lse2.data(), D.data(), T, NH, sl2, sc, m, bounds, GM_GRAD_SET, HD, &tm);
        });
        const char *impl = wg ? "wgmma" : "mma";
        note(report(impl, "dq", widen(dq), rdq));
        note(report(impl, "dk", widen(dk), rdk));
        note(report(impl, "dv", widen(dv), rdv));
        for (const std::vector<gm_cuda_act> *g : {&dq, &dk, &dv}) grads[wg].insert(grads[wg].end(), g->begin(), g->end());
    }
    // Likewise the wgmma backward, overlapped, against the mma backward.
    const bool same_bwd = !memcmp(grads[1].data(), grads[0].data(), 3 * n * sizeof(gm_cuda_act));
    printf("  wgmma  dq, dk, dv %s the mma backward's\n", same_bwd ? "bitwise" : "NOT bitwise");
    failed += !same_bwd;
    // The one-pass backward: one block a key block, highest first by the work counter (here, blocks
    // running one at a time, each tile's parts of dq must have been added when a block comes to it:
    // the shim stops the program otherwise). Its dk and dv are the wgmma dk/dv kernel's operations in
    // the same order; its dq sums the key blocks' parts, so it has only the bound.
    {
        const int nkb = (T + BLOCK_ROWS - 1) / BLOCK_ROWS;
        const size_t tiles = (size_t)B * NH * dq_sum_tiles(T);
        // NaN, as unset scratch may hold: a first part added to it rather than stored shows
        std::vector<float4> part(tiles * dq_sum_tile_float4s(HD), make_float4(NAN, NAN, NAN, NAN));
        std::vector<int32_t> order(1 + tiles, 0);
        const dq_sum ds = {dq1.data(), part.data(), order.data()};
        launch(dim3((unsigned)(nkb * NH * B)), BWD_THREADS, [&] {
            dkdv_body<true, true>(dk1.data(), dv1.data(), dout.data(), q.data(), k.data(), v.data(), lse2.data(), D.data(),
                                  T, NH, sl2, sc, m, bounds, GM_GRAD_SET, HD, &tm, ds);
        });
        note(report("1pass", "dq", widen(dq1), rdq));
        const bool same_kv = !memcmp(dk1.data(), grads[1].data() + n, n * sizeof(gm_cuda_act)) &&
                             !memcmp(dv1.data(), grads[1].data() + 2 * n, n * sizeof(gm_cuda_act));
        printf("  1pass  dk, dv %s the wgmma backward's\n", same_kv ? "bitwise" : "NOT bitwise");
        failed += !same_kv;
    }
    failed += !(worst <= 2e-2);
    printf("  %s (worst relative error %.3g)\n", failed ? "FAIL" : "PASS", worst);
    return failed != 0;
}

// The Hopper parts one at a time (attention_mma_parts.cuh's parts_body, which gm_cuda_attn_wgmma_parts
// runs on a GPU) at head_dim 64 and 128: one line a part; returns the parts that failed.
static int run_parts(void) {
    int failed = 0;
    for (int HD = 64; HD <= 128; HD += 64) {
        const size_t nx = (size_t)BLOCK_ROWS * 2 * HD, nt = (size_t)BLOCK_ROWS * HD;
        std::vector<gm_cuda_act> x(nx);
        std::vector<float> xv(nx), abt((size_t)BLOCK_ROWS * 64), xb(nt), dq((size_t)64 * HD);
        std::vector<uint16_t> raw_tma(nt), raw_copy(nt), raw_vec(2 * PARTS_VEC);
        parts_input(x.data(), xv.data(), HD);
        attn_tmaps tm;
        tma_map_rows(&tm.q, x.data(), 1, PARTS_T, 2, HD);
        tma_map_vec(&tm.lse2, (const float *)(x.data() + HD), 1, PARTS_VEC, PARTS_VEC);
        if (parts_smem(HD) > sizeof smem) {
            fprintf(stderr, "attn_emu: parts_body asks %zu bytes of shared memory, more than the %zu here\n",
                    parts_smem(HD), sizeof smem);
            return 1;
        }
        launch(dim3(1), BWD_THREADS, [&] {
            parts_body(x.data(), &tm, raw_tma.data(), raw_copy.data(), raw_vec.data(), abt.data(), xb.data(), dq.data(),
                       HD);
        });
        char report[2048] = "";
        failed += parts_compare(xv.data(), HD, raw_tma.data(), raw_copy.data(), raw_vec.data(), abt.data(), xb.data(),
                                dq.data(), report, sizeof report);
        fputs(report, stdout);
    }
    printf("%d failed\n", failed);
    return failed;
}

int main(int argc, char **argv) {
    if (argc == 2 && !strcmp(argv[1], "parts")) return run_parts() != 0;
    if (argc == 8 || argc == 9) {
        const attn_case c = {atoi(argv[1]), atoi(argv[2]), atoi(argv[3]), atoi(argv[4]), atoi(argv[5]), atoi(argv[6]),
                             atoi(argv[7]), argc == 9 ? atoi(argv[8]) : 0};
        if (c.B < 1 || c.T < 1 || c.NH < 1 || (c.HD != 64 && c.HD != 128) || c.block < 1 || c.window < 0 || c.doc_len < 0 ||
            c.grow < 0 || c.grow > 1) {
            fprintf(stderr, "attn_emu: B, T, NH, BLOCK >= 1, HD 64 or 128, WINDOW, DOC_LEN >= 0, GROW 0 or 1\n");
            return 2;
        }
        const int failed = run_case(c, 1);
        printf("%d failed\n", failed);
        return failed != 0;
    }
    if (argc != 1) {
        fprintf(stderr, "usage: attn_emu [B T NH HD BLOCK WINDOW DOC_LEN [GROW] | parts]\n");
        return 2;
    }
    // Head dims 64 and 128; a window of whole blocks that divide no tile, and documents; T past the
    // tiles; two batch rows and heads; keys growing along T (the forward's output rescaled after a
    // row's first tile).
    const attn_case cases[] = {{1, 130, 1, 64, 5, 7, 20, 0}, {2, 200, 1, 128, 64, 2, 50, 0}, {1, 260, 1, 128, 128, 0, 0, 1}};
    int failed = 0;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) failed += run_case(cases[i], 1 + (unsigned)i);
    printf("%d failed\n", failed);
    return failed != 0;
}
