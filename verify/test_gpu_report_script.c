// ci/bundle/run_gpu_report.sh, the whole GPU report in one command, on a machine without a GPU: an
// nvidia-smi that finds no driver stands first on PATH, so the test means the same on a GPU node.
// Every stage line is in summary.txt in order and says "skipped: no GPU" (info runs anywhere),
// OUTDIR.tar.gz holds summary.txt, exit 0; --stages leaves the others out, saying so; the profile
// stage runs ncu (a stand-in) on each attention kernel; bad arguments give one line, a non-zero exit and nothing
// written. And the shapes bench/peers_gpu.py times PyTorch at are the calls the model makes: its
// --list-shapes against bench/kernels' rows of the real step (on the CPU, at test scale, with a
// sequence longer than one head chunk, and with a fused QKV matrix Muon takes whole or split); and
// its GPU parts run through on a stand-in torch (verify/fake_torch.py).
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "base/io.h"
#include "helpers.h"

// The script's stages, in its order.
static const char *const STAGES[] = {"wgmma-check",      "pingpong-check", "gpu-suite",      "kernels-softcap",
                                     "kernels-normuon",  "step-compare",   "peers",          "backend-compare",
                                     "attention-window", "attention-docs", "attention-ab",   "kernels-ab",
                                     "kernels-wgmma1",   "predict",        "attention-causal", "profile",
                                     "racecheck",        "memcheck",       "synccheck"};
#define NSTAGES (sizeof STAGES / sizeof STAGES[0])

// The script as this run has it: the bundle's copy when the suite runs from a bundle (env.sh set
// GM_BUNDLE), else the checkout's.
static const char *script(void) {
    static char path[4200];
    const char *bundle = getenv("GM_BUNDLE");
    if (bundle) snprintf(path, sizeof path, "%s/run_gpu_report.sh", bundle);
    else snprintf(path, sizeof path, "%s", th_root_path("ci/bundle/run_gpu_report.sh"));
    return path;
}

// Runs the script with `args` and dir/nogpu (a failing nvidia-smi) first on PATH.
static int report(const char *dir, const char *args, char **out, char **err) {
    char cmd[9000];
    snprintf(cmd, sizeof cmd,
             "mkdir -p '%s/nogpu' && printf '#!/bin/sh\\necho \"NVIDIA-SMI has failed because it couldn'\\''t "
             "communicate with the NVIDIA driver.\"\\nexit 9\\n' > '%s/nogpu/nvidia-smi' && chmod +x '%s/nogpu/nvidia-smi' "
             "&& PATH='%s/nogpu':\"$PATH\" bash '%s' %s",
             dir, dir, dir, dir, script(), args);
    return th_run(cmd, out, err);
}

static char *read_file(const char *path) {
    char *text;
    size_t len;
    cr_assert_eq(gm_read_all(path, &text, &len), 0, "%s", gm_error());
    return text;
}

// The line of `text` that starts at p, and where the next starts.
static const char *next_line(const char *p, char *line, size_t n) {
    const char *eol = strchr(p, '\n');
    size_t len = eol ? (size_t)(eol - p) : strlen(p);
    snprintf(line, n, "%.*s", (int)len, p);
    return eol ? eol + 1 : p + len;
}

Test(gpu_report_script, without_a_gpu_every_stage_is_skipped_and_the_archive_is_written, .timeout = 120) {
    char *dir = th_tmpdir(), args[4200], path[4300], line[512], *out, *err;
    snprintf(args, sizeof args, "'%s/rep'", dir);
    cr_assert_eq(report(dir, args, &out, &err), 0, "%s%s", out, err);
    snprintf(path, sizeof path, "%s/rep/summary.txt", dir);
    char *summary = read_file(path);
    cr_expect_str_eq(out, summary, "stdout should be the summary as it grows");
    const char *p = next_line(summary, line, sizeof line);
    cr_expect(!strncmp(line, "info: exit 0, ", 14), "first line: '%s'\n%s", line, summary);
    for (size_t i = 0; i < NSTAGES; i++) {
        char want[128];
        snprintf(want, sizeof want, "%s: skipped: no GPU", STAGES[i]);
        p = next_line(p, line, sizeof line);
        cr_expect_str_eq(line, want, "line %zu of:\n%s", i + 2, summary);
    }
    p = next_line(p, line, sizeof line);
    cr_expect(strstr(line, "total: ") == line && strstr(line, "of the 480 s budget; 0 stage(s) failed"), "'%s'", line);
    cr_expect_eq(*p, '\0', "lines after the total:\n%s", summary);
    snprintf(path, sizeof path, "%s/rep/info.log", dir);
    char *info = read_file(path);
    cr_expect(strstr(info, "NVIDIA-SMI has failed"), "info.log should say why there is no GPU:\n%s", info);

    char cmd[4400], *list;
    snprintf(cmd, sizeof cmd, "tar -tzf '%s/rep.tar.gz'", dir);
    cr_assert_eq(th_run(cmd, &list, NULL), 0, "no readable %s/rep.tar.gz", dir);
    cr_expect(strstr(list, "rep/summary.txt\n") && strstr(list, "rep/info.log\n"), "archive holds:\n%s", list);
    snprintf(path, sizeof path, "%s/rep.tar.gz.tmp", dir);
    cr_expect(!th_file_exists(path), "the archive's temporary was left behind");
    free(out), free(err), free(summary), free(info), free(list);
    th_rmtree(dir);
}

// --stages: the stages it names run (here: skip for want of a GPU), every other one says it was left
// out, in the script's order; info runs whatever the list.
Test(gpu_report_script, stages_runs_only_the_stages_named, .timeout = 120) {
    char *dir = th_tmpdir(), args[4200], path[4300], line[512], *out, *err;
    snprintf(args, sizeof args, "'%s/rep' --stages=peers,gpu-suite", dir);
    cr_assert_eq(report(dir, args, &out, &err), 0, "%s%s", out, err);
    snprintf(path, sizeof path, "%s/rep/summary.txt", dir);
    char *summary = read_file(path);
    const char *p = next_line(summary, line, sizeof line);
    cr_expect(!strncmp(line, "info: exit 0, ", 14), "first line: '%s'\n%s", line, summary);
    for (size_t i = 0; i < NSTAGES; i++) {
        char want[128];
        const int named = !strcmp(STAGES[i], "peers") || !strcmp(STAGES[i], "gpu-suite");
        snprintf(want, sizeof want, "%s: skipped: %s", STAGES[i], named ? "no GPU" : "not in --stages");
        p = next_line(p, line, sizeof line);
        cr_expect_str_eq(line, want, "line %zu of:\n%s", i + 2, summary);
    }
    free(out), free(err), free(summary);
    th_rmtree(dir);
}

// The kernels of the attention bench as ncu lists them (--kernel-name-base demangled), copied from
// its "Available Kernels" on the H200 at e4790d9 (reports/gpu-h200/run-e4790d9/profile-attention.txt)
// but for their parameter lists, the dk/dv kernel's second template argument (DQ: the one-pass
// backward) and the backward's pre-pass's name (attn_D_kernel then), changed since: the names the
// profile stage's selectors are matched against.
static const char *const NCU_KERNELS[] = {
    "attn_qvec_kernel(float *, float *, const float *, const __nv_bfloat16 *, const __nv_bfloat16 *, int, int, int, "
    "int, unsigned long)",
    "attn_bwd_dkdv_kernel(__nv_bfloat16 *, __nv_bfloat16 *, gm_grad_write, ...)",
    "attn_bwd_dq_kernel(__nv_bfloat16 *, gm_grad_write, ...)",
    "attn_fwd_kernel(__nv_bfloat16 *, float *, ...)",
    "rng_normal_kernel(unsigned long, unsigned long, unsigned long, float *, unsigned long)",
    "void attn_dkdv_128<(bool)0, (bool)0>(__nv_bfloat16 *, __nv_bfloat16 *, ...)",
    "void attn_dkdv_128<(bool)1, (bool)0>(__nv_bfloat16 *, __nv_bfloat16 *, ...)",
    "void attn_dkdv_128<(bool)1, (bool)1>(__nv_bfloat16 *, __nv_bfloat16 *, ...)",
    "void attn_dq_128<(bool)0>(__nv_bfloat16 *, ...)",
    "void attn_dq_128<(bool)1>(__nv_bfloat16 *, ...)",
    "void attn_fwd_128<(int)1, (bool)0>(__nv_bfloat16 *, float *, ...)",
    "void attn_fwd_128<(int)1, (bool)1>(__nv_bfloat16 *, float *, ...)",
    "void attn_fwd_128<(int)2, (bool)0>(__nv_bfloat16 *, float *, ...)",
    "wgmma_probe()"};
#define NCU_KERNELS_N (sizeof NCU_KERNELS / sizeof NCU_KERNELS[0])

// Runs the profile stage with stand-ins into dir/rep: an nvidia-smi that lists a GPU and an ncu that
// writes down its arguments and matches its -k regex (grep -E, which reads these selectors as ncu's
// regex does) against NCU_KERNELS but the one starting with `left_out` (NULL: none), printing each
// match or, like ncu, "No kernels were profiled" (and exit 0), and printing a report's source page
// unless `source_fails` (then one error line, exit 1). Returns the summary, *rc the script's exit
// status, *prof the stage's profile-attention.txt.
static char *profile_stage(const char *dir, const char *left_out, bool source_fails, int *rc, char **prof) {
    char path[4300], cmd[9000], *out, *err;
    snprintf(path, sizeof path, "%s/kernels.txt", dir);
    FILE *f = fopen(path, "w");
    cr_assert(f, "%s", path);
    for (size_t i = 0; i < NCU_KERNELS_N; i++)
        if (!left_out || strncmp(NCU_KERNELS[i], left_out, strlen(left_out))) fprintf(f, "%s\n", NCU_KERNELS[i]);
    fclose(f);
    snprintf(cmd, sizeof cmd, "mkdir -p '%s/fake'", dir);
    cr_assert_eq(system(cmd), 0);
    snprintf(path, sizeof path, "%s/fake/ncu", dir);
    f = fopen(path, "w");
    cr_assert(f, "%s", path);
    // -o REP: the matches into REP.ncu-rep; -i REP: the report printed, or with --page source a
    // CSV of its kernel's "instructions" (the source page's header and one row naming the kernel).
    fprintf(f,
            "#!/bin/sh\n[ \"$1\" = --help ] && { echo '  --print-details arg'; echo '  --print-source arg'; exit 0; }\n"
            "args=\"$*\" re= rep= imp= page=\n"
            "while [ $# -gt 0 ]; do case $1 in -k) re=${2#regex:};; -o) rep=$2;; -i) imp=$2;; --page) page=$2;; esac; "
            "shift; done\n"
            "[ \"$page\" = source ] || echo \"ncu $args\"\n"
            "if [ -n \"$imp\" ]; then\n"
            "  [ \"$page\" = source ] || { cat \"$imp\"; exit 0; }\n"
            "  %s\n"
            "  echo '\"Address\",\"Source\",\"Warp Stall Sampling (All Samples)\"'\n"
            "  sed 's/^profiled: \\(.*\\)/\"0\",\"\\1\",\"1\"/' \"$imp\"; exit 0\n"
            "fi\n"
            "grep -E \"$re\" '%s/kernels.txt' | sed 's/^/profiled: /' > \"$rep.ncu-rep\"\n"
            "[ -s \"$rep.ncu-rep\" ] || { rm -f \"$rep.ncu-rep\"; echo '==WARNING== No kernels were profiled.'; }\n",
            source_fails ? "echo '==ERROR== stand-in: no source page' >&2; exit 1" : ":", dir);
    fclose(f);
    snprintf(cmd, sizeof cmd,
             "printf '#!/bin/sh\\necho \"GPU 0: stand-in (UUID: GPU-0)\"\\n' > '%s/fake/nvidia-smi' "
             "&& chmod +x '%s/fake/nvidia-smi' '%s/fake/ncu' && rm -rf '%s/rep' '%s/rep.tar.gz' "
             "&& PATH='%s/fake':\"$PATH\" bash '%s' '%s/rep' --stages profile",
             dir, dir, dir, dir, dir, dir, script(), dir);
    *rc = th_run(cmd, &out, &err);
    free(err);
    snprintf(path, sizeof path, "%s/rep/profile-attention.txt", dir);
    *prof = read_file(path);
    return out;
}

// Runs `stages` of the script into dir/rep under a stand-in nvidia-smi that lists an sm_90 GPU (no
// driver here: a GPU test then fails under GM_REQUIRE_GPU=1). Returns the summary, *rc the exit.
static char *run_on_sm90(const char *dir, const char *stages, int *rc) {
    char cmd[9000], path[4300], *out, *err;
    snprintf(cmd, sizeof cmd,
             "mkdir -p '%s/fake' && printf '#!/bin/sh\\nif [ \"$1\" = -L ]; then echo \"GPU 0: stand-in (UUID: "
             "GPU-0)\"; else echo 9.0; fi\\n' > '%s/fake/nvidia-smi' && chmod +x '%s/fake/nvidia-smi' "
             "&& PATH='%s/fake':\"$PATH\" bash '%s' '%s/rep' --stages %s",
             dir, dir, dir, dir, script(), dir, stages);
    *rc = th_run(cmd, &out, &err);
    free(out), free(err);
    snprintf(path, sizeof path, "%s/rep/summary.txt", dir);
    return read_file(path);
}

// Where wgmma-check fails (its tests find no driver), the summary says so after its line and every
// later stage runs with GM_CUDA_WGMMA=off: a stage that needs the wgmma forms says so and skips.
Test(gpu_report_script, a_failed_wgmma_check_turns_wgmma_off, .timeout = 120) {
    char *dir = th_tmpdir(), line[512];
    int rc;
    char *summary = run_on_sm90(dir, "wgmma-check,kernels-wgmma1", &rc);
    cr_expect_eq(rc, 1, "exit %d (one stage failed)\n%s", rc, summary);
    const char *p = next_line(summary, line, sizeof line);  // info
    p = next_line(p, line, sizeof line);
    cr_expect(!strncmp(line, "wgmma-check: exit ", 18) && strncmp(line, "wgmma-check: exit 0,", 20),
              "'%s'\n%s", line, summary);
    p = next_line(p, line, sizeof line);
    cr_expect_str_eq(line, "wgmma-check: failed, so every later stage runs with GM_CUDA_WGMMA=off (the mma.sync kernels)",
                     "%s", summary);
    cr_expect(strstr(p, "\nkernels-wgmma1: skipped: GM_CUDA_WGMMA=off\n"), "%s", summary);
    free(summary);
    th_rmtree(dir);
}

// Where pingpong-check fails (its test finds no driver), the summary says so after its line and the
// later stages leave wgmma-pingpong out: attention_gpu runs with --skip=wgmma-pingpong (its log's
// first line; the bench itself then finds no GPU, or under the sanitizers' build is not there).
// wgmma stays on.
Test(gpu_report_script, a_failed_pingpong_check_leaves_pingpong_out, .timeout = 120) {
    char *dir = th_tmpdir(), path[4300], line[512];
    int rc;
    char *summary = run_on_sm90(dir, "pingpong-check,attention-window", &rc);
    cr_expect_eq(rc, 1, "exit %d (one stage failed)\n%s", rc, summary);
    const char *p = next_line(summary, line, sizeof line);  // info
    p = next_line(p, line, sizeof line);
    cr_expect_str_eq(line, "wgmma-check: skipped: not in --stages", "%s", summary);
    p = next_line(p, line, sizeof line);
    cr_expect(!strncmp(line, "pingpong-check: exit ", 21) && strncmp(line, "pingpong-check: exit 0,", 23), "'%s'\n%s",
              line, summary);
    p = next_line(p, line, sizeof line);
    cr_expect_str_eq(line, "pingpong-check: failed, so every later stage leaves wgmma-pingpong out", "%s", summary);
    cr_expect(strstr(p, "\nattention-window: exit "), "%s", summary);
    snprintf(path, sizeof path, "%s/rep/attention-window.log", dir);
    char *log = read_file(path);
    cr_expect(!strncmp(log, "attention_gpu --preset=softcap ", 31) && strstr(log, " --skip=wgmma-pingpong\n"), "%s",
              log);
    free(summary), free(log);
    th_rmtree(dir);
}

// The profile stage as a GPU node runs it: one ncu run per attention kernel the automatic choice
// runs at the record's mask (the 32-rows-a-warp forward, the wgmma dq and dk/dv kernels), the
// one-pass backward and the wgmma forward there, the wgmma forward again inside attention_gpu's
// NVTX ranges of the persistent and the pingpong forms (their launches of the same kernel), and at
// plain causal T 16384 the wgmma forward, each selector matching exactly its kernel's name as ncu
// spells it; the stage's line says exit 0; each section's body printed, as the stand-in's help
// offers --print-details (the node's ncu does), and each report's source page (SASS with sampled
// stalls, --print-source) beside the text as profile-sass-NAME.csv.gz. A selector that matches
// nothing fails the stage, naming it (at e4790d9 the selectors missed every kernel and the stage
// said exit 0).
Test(gpu_report_script, profile_runs_ncu_on_the_attention_kernels, .timeout = 120) {
    char *dir = th_tmpdir(), *prof;
    int rc;
    char *out = profile_stage(dir, NULL, false, &rc, &prof);
    cr_expect(rc == 0 && strstr(out, "\nprofile: exit 0, "), "exit %d, summary:\n%s", rc, out);
    const char *want[] = {"--clock-control none", "--print-details all", "--kernel-name-base demangled -c 1", " -f -o ",
                          "--tmin=65536 --tmax=65536 --doc_len=700", "--tmin=16384 --tmax=16384 --window=0",
                          "profiled: void attn_fwd_128<(int)2, (bool)0>(", "profiled: void attn_dq_128<(bool)1>(",
                          "profiled: void attn_dkdv_128<(bool)1, (bool)0>(",
                          "profiled: void attn_dkdv_128<(bool)1, (bool)1>(",
                          "profiled: void attn_fwd_128<(int)1, (bool)1>(",
                          "--nvtx --nvtx-include wgmma-persist-forward/ -k regex:attn_fwd_128<",
                          "--nvtx --nvtx-include wgmma-pingpong-forward/ -k regex:attn_fwd_128<"};
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
        cr_expect(strstr(prof, want[i]), "no '%s' in profile-attention.txt:\n%s", want[i], prof);
    int profiled = 0, in_range = 0;
    for (const char *p = prof; (p = strstr(p, "\nprofiled: ")); p++) profiled++;
    for (const char *p = prof; (p = strstr(p, "--nvtx-include")); p++) in_range++;
    cr_expect_eq(profiled, 8, "8 kernels profiled, one a selector:\n%s", prof);
    cr_expect_eq(in_range, 2, "two ncu runs inside an NVTX range:\n%s", prof);
    cr_expect_eq(th_count_lines(prof), 41,
                 "8 headings, 8 ncu runs, 8 reports printed (the command and its kernel), 8 source pages, their "
                 "summary:\n%s",
                 prof);
    // the pages summed (the stand-in's one instruction a page, named after its kernel)
    cr_expect(strstr(prof, "\nper instruction, summed: profile-sass-summary.txt\n"), "%s", prof);
    char path[4300];
    snprintf(path, sizeof path, "%s/rep/profile-sass-summary.txt", dir);
    char *sum = read_file(path);
    cr_expect(strstr(sum, "profile-sass-dq-wgmma.csv.gz: 1 instructions, 1 samples\n") &&
                  strstr(sum, "  100.0%  0  void attn_dq_128<(bool)1>("),
              "%s", sum);
    free(sum);
    // each kernel's source page beside it, named in the text, holding that kernel's rows
    const struct {
        const char *name, *kernel;
    } pages[] = {{"fwd-mma32", "attn_fwd_128<(int)2, (bool)0>"},
                 {"dq-wgmma", "attn_dq_128<(bool)1>"},
                 {"dkdv-wgmma", "attn_dkdv_128<(bool)1, (bool)0>"},
                 {"bwd-onepass", "attn_dkdv_128<(bool)1, (bool)1>"},
                 {"fwd-wgmma", "attn_fwd_128<(int)1, (bool)1>"},
                 {"fwd-wgmma-persist", "attn_fwd_128<(int)1, (bool)1>"},
                 {"fwd-wgmma-pingpong", "attn_fwd_128<(int)1, (bool)1>"},
                 {"fwd-wgmma-causal", "attn_fwd_128<(int)1, (bool)1>"}};
    for (size_t i = 0; i < sizeof pages / sizeof pages[0]; i++) {
        char cmd[4600], line[200], *csv, *err;
        snprintf(line, sizeof line, "\nper instruction: profile-sass-%s.csv.gz (2 lines)\n", pages[i].name);
        cr_expect(strstr(prof, line), "no '%s' in profile-attention.txt:\n%s", line + 1, prof);
        snprintf(cmd, sizeof cmd, "gzip -dc '%s/rep/profile-sass-%s.csv.gz'", dir, pages[i].name);
        cr_expect_eq(th_run(cmd, &csv, &err), 0, "%s: %s", cmd, err);
        cr_expect(!strncmp(csv, "\"Address\",\"Source\",", 19) && strstr(csv, pages[i].kernel), "%s:\n%s", cmd, csv);
        free(csv), free(err);
    }
    free(out), free(prof);

    // without the wgmma dq kernel: its selector fails the stage
    out = profile_stage(dir, "void attn_dq_128<(bool)1>", false, &rc, &prof);
    cr_expect(rc != 0 && strstr(out, "\nprofile: exit 1, "), "exit %d, summary:\n%s", rc, out);
    cr_expect(strstr(prof, "profile: no kernel matched 'attn_dq_128<\\(bool\\)1>'"), "%s", prof);
    free(out), free(prof);

    // source pages that cannot be printed: every kernel still has its run and its text, each says
    // why its page is missing, and the stage fails at the end
    out = profile_stage(dir, NULL, true, &rc, &prof);
    cr_expect(rc != 0 && strstr(out, "\nprofile: exit 1, "), "exit %d, summary:\n%s", rc, out);
    int missing = 0;
    for (const char *p = prof; (p = strstr(p, "\nprofile: no per-instruction samples for ")); p++) missing++;
    cr_expect_eq(missing, 8, "%s", prof);
    cr_expect(strstr(prof, "fwd-wgmma-causal: ==ERROR== stand-in: no source page\n"), "%s", prof);
    cr_expect(strstr(prof, "profiled: void attn_fwd_128<(int)1, (bool)1>(") && !strstr(prof, "\nper instruction"),
              "%s", prof);
    free(out), free(prof);
    th_rmtree(dir);
}

Test(gpu_report_script, bad_arguments_get_one_line_and_write_nothing, .timeout = 120) {
    const struct {
        const char *args, *want;
    } cases[] = {
        {"REP --budget-s abc", "--budget-s 'abc': not a whole number of seconds"},
        {"REP --budget-s 0", "--budget-s '0'"},
        {"REP --budget-s=-5", "--budget-s '-5'"},
        {"REP --budget-s 12x", "--budget-s '12x'"},
        {"REP --budget-s 1234567", "--budget-s '1234567'"},
        {"REP --budget-s", "--budget-s needs a value"},
        {"REP --stages gpu-suite,bogus", "--stages: no stage 'bogus'"},
        {"REP --stages=", "--stages '': not a comma-separated list"},
        {"REP --stages gpu-suite,,peers", "--stages 'gpu-suite,,peers': not a comma-separated list"},
        {"REP --stages", "--stages needs a value"},
        {"REP --bogus", "unknown option '--bogus'"},
        {"", "no OUTDIR"},
        {"REP REP2", "one OUTDIR only"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *dir = th_tmpdir(), args[4400] = "", *out, *err;
        // REP: a folder in the scratch one, which must stay empty.
        for (const char *a = cases[i].args; *a;) {
            if (!strncmp(a, "REP", 3)) {
                snprintf(args + strlen(args), sizeof args - strlen(args), "'%s/r'", dir);
                a += 3;
            } else {
                snprintf(args + strlen(args), sizeof args - strlen(args), "%c", *a++);
            }
        }
        cr_expect_neq(report(dir, args, &out, &err), 0, "%s: accepted", cases[i].args);
        cr_expect_eq(th_count_lines(err), 1, "%s: want one line:\n%s", cases[i].args, err);
        cr_expect(strstr(err, "run_gpu_report.sh: error: ") && strstr(err, cases[i].want), "%s: %s", cases[i].args, err);
        cr_expect_str_empty(out, "%s", cases[i].args);
        cr_expect_eq(th_dir_entries(dir), 1, "%s: wrote into the scratch folder (it holds only nogpu/)", cases[i].args);
        free(out), free(err);
        th_rmtree(dir);
    }
    // An OUTDIR that holds files is refused and left as it was.
    char *dir = th_tmpdir(), args[4200], cmd[4300], *out, *err;
    snprintf(cmd, sizeof cmd, "mkdir '%s/rep' && echo x > '%s/rep/keep'", dir, dir);
    cr_assert_eq(th_run(cmd, NULL, NULL), 0);
    snprintf(args, sizeof args, "'%s/rep'", dir);
    cr_expect_neq(report(dir, args, &out, &err), 0, "a folder with files in it was accepted");
    cr_expect(th_count_lines(err) == 1 && strstr(err, "exists and is not an empty folder"), "%s", err);
    snprintf(cmd, sizeof cmd, "%s/rep", dir);
    cr_expect_eq(th_dir_entries(cmd), 1, "the folder was written into");
    snprintf(cmd, sizeof cmd, "%s/rep.tar.gz", dir);
    cr_expect(!th_file_exists(cmd), "an archive was written");
    free(out), free(err);
    th_rmtree(dir);
}

// bench/kernels' rows of one step as peers_gpu.py --list-shapes prints them: "matmul_fwd,SHAPE,CALLS"
// (and matmul_bwd) and "orthogonalize,M matrices E elements", one a line. The step is counted, not
// timed (--count=1: the very calls the timed step makes, test_bench_kernels.c), so nothing computes.
static char *kernels_shapes(const char *dir, const char *flags, int *nlines) {
    char cmd[14000], path[4300], rates[4300], measured[4300], *out, *err;
    snprintf(rates, sizeof rates, "%s", th_root_path("reports/gpu-h100/h100_rates.csv"));  // one static buffer
    snprintf(measured, sizeof measured, "%s", th_root_path("reports/gpu-h100/h100-softcap-full-T65536.csv"));
    snprintf(cmd, sizeof cmd,
             "OMP_NUM_THREADS=1 '%s' --count=1 --scale=test --backend=cpu %s --out='%s' --name=k --rates='%s' "
             "--measured='%s'",
             th_bin_path("bench/kernels"), flags, dir, rates, measured);
    cr_assert_eq(th_run(cmd, &out, &err), 0, "%s", err);
    free(out), free(err);
    snprintf(path, sizeof path, "%s/k.md", dir);
    char *md = read_file(path), line[512];
    size_t cap = strlen(md) + 1, used = 0;
    char *shapes = malloc(cap);
    cr_assert(shapes);
    shapes[0] = '\0';
    *nlines = 0;
    for (const char *p = md; *p;) {  // table rows "| part:kernel | shape | calls | ..."
        p = next_line(p, line, sizeof line);
        char name[128], shape[256];
        long calls;
        if (sscanf(line, "| %127[^ |] | %255[^|]| %ld |", name, shape, &calls) != 3) continue;
        for (size_t k = strlen(shape); k > 0 && shape[k - 1] == ' ';) shape[--k] = '\0';
        if (!strncmp(name, "model:matmul_", 13)) {
            used += snprintf(shapes + used, cap - used, "%s,%s,%ld\n", name + strlen("model:"), shape, calls);
        } else if (!strcmp(name, "optimizer:orthogonalize") && strstr(shape, " elements")) {
            *(strstr(shape, " elements") + strlen(" elements")) = '\0';
            used += snprintf(shapes + used, cap - used, "orthogonalize,%s\n", shape);
        } else {
            continue;
        }
        (*nlines)++;
    }
    free(md);
    return shapes;
}

Test(gpu_report_script, peers_shapes_are_the_calls_of_the_model, .timeout = 600) {
    const struct {
        const char *preset, *flags;
    } cases[] = {
        // 8320 rows: the head in a chunk of 8192 (impl/model/model.h GM_HEAD_ROWS) and one of 128.
        {"softcap", "--batch=1 --seq_len=8320"},
        {"muon-v1", ""},  // a fused QKV matrix, orthogonalized whole
        {"muon-v2", ""},  // the same matrix, orthogonalized as three
    };
    char build[1024];
    snprintf(build, sizeof build, "%s", th_bin_path("train"));
    *strrchr(build, '/') = '\0';
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *dir = th_tmpdir(), flags[256], args[512], cmd[6000], *out, *err;
        snprintf(flags, sizeof flags, "--preset=%s %s", cases[i].preset, cases[i].flags);
        int n;
        char *want = kernels_shapes(dir, flags, &n);
        cr_expect_gt(n, 4, "%s: kernels timed few matmuls:\n%s", cases[i].preset, want);
        // --preset=softcap --batch=1 ... as peers_gpu.py's own flags.
        snprintf(args, sizeof args, "%s", flags);
        for (char *e; (e = strchr(args, '='));) *e = ' ';
        snprintf(cmd, sizeof cmd, "python3 '%s' --build '%s' --list-shapes --scale test %s",
                 th_root_path("bench/peers_gpu.py"), build, args);
        cr_assert_eq(th_run(cmd, &out, &err), 0, "%s", err);
        cr_expect_eq(th_count_lines(out), n, "%s: peers_gpu.py lists\n%s\nkernels timed\n%s", cases[i].preset, out, want);
        char line[512], padded[8192];
        snprintf(padded, sizeof padded, "\n%s", out);
        for (const char *p = want; *p;) {
            p = next_line(p, line, sizeof line);
            char key[600];
            snprintf(key, sizeof key, "\n%s\n", line);
            cr_expect(strstr(padded, key), "%s: kernels timed '%s', peers_gpu.py lists\n%s", cases[i].preset, line, out);
        }
        free(want), free(out), free(err);
        th_rmtree(dir);
    }
}

// peers_gpu.py's GPU parts on verify/fake_torch.py (tensors that are shapes, samples of 1 ms): every
// part files its section and rows, bench/kernels' figures (--ours) go beside torch's, the FlexAttention
// mask admits the pairs bench/attention_gpu counts for softcap's window (1.118e+08 per head at T 65536,
// ../shared/h100-2026-11-26/gpu-attention-softcap.md), and a case that raises is listed, the parts
// after it still run and the exit status says so.
static int peers_on_stand_in(const char *dir, const char *env, char **md, char **csv, char **err) {
    char build[1024], stand_in[1024], cmd[8000], path[4300], *out;
    snprintf(build, sizeof build, "%s", th_bin_path("train"));
    *strrchr(build, '/') = '\0';
    snprintf(stand_in, sizeof stand_in, "%s", th_root_path("verify/fake_torch.py"));  // one buffer per call
    snprintf(cmd, sizeof cmd, "%s python3 '%s' '%s' --build '%s' --out '%s' --ours '%s/ours.csv'", env, stand_in,
             th_root_path("bench/peers_gpu.py"), build, dir, dir);
    int rc = th_run(cmd, &out, err);
    free(out);
    cr_assert(rc == 0 || strstr(*err, "case(s) failed"), "peers_gpu.py stopped: %s", *err);
    snprintf(path, sizeof path, "%s/peers-gpu.md", dir);
    *md = read_file(path);
    snprintf(path, sizeof path, "%s/peers-gpu.csv", dir);
    *csv = read_file(path);
    return rc;
}

static int count_of(const char *text, const char *what) {
    int n = 0;
    for (const char *p = text; (p = strstr(p, what)); p += strlen(what)) n++;
    return n;
}

Test(gpu_report_script, peers_parts_run_on_a_stand_in_torch, .timeout = 300) {
    char *dir = th_tmpdir(), path[4300], *md, *csv, *err;
    snprintf(path, sizeof path, "%s/ours.csv", dir);
    const char *ours = "name,shape,calls,median_ms\n"
                       "model:matmul_fwd,65536x768 @ 2304x768^T,11,0.3138\n"
                       "optimizer:orthogonalize,68 matrices 82575360 elements NS5 bf16,1,5.18\n";
    cr_assert_eq(gm_write_file_atomic(path, ours, strlen(ours)), 0, "%s", gm_error());
    cr_expect_eq(peers_on_stand_in(dir, "", &md, &csv, &err), 0, "%s", err);
    const char *sections[] = {"## GEMMs", "## Attention: `scaled_dot_product_attention`", "## Newton-Schulz",
                              "## FlexAttention"};
    for (size_t i = 0; i < 4; i++) cr_expect(strstr(md, sections[i]), "no section '%s':\n%s", sections[i], md);
    // softcap at B 1, T 65536: 5 matmul shapes (q, k, v one call; c_proj; the MLP's two; the head), each
    // forward and backward, the two output projections' forward with the residual.
    cr_expect_eq(count_of(md, "\n| matmul_"), 10, "%s", md);
    cr_expect(strstr(md, "| matmul_fwd | 65536x768 @ 2304x768^T | 11 | 65536x768x2304 | ") &&
                  strstr(md, "| 0.3138 |"), "our matmul_fwd beside torch's:\n%s", md);
    cr_expect(strstr(md, "| matmul_fwd | 65536x768 @ 768x768^T +res | 11 | 65536x768x768 | "), "%s", md);
    cr_expect(strstr(md, "| **per step** |"), "%s", md);
    cr_expect(strstr(md, "68 matrices: 44 of 768x768, 12 of 3072x768, 12 of 768x3072"), "%s", md);
    cr_expect_eq(count_of(md, "| 5.18 |"), 2, "our orthogonalize beside eager and compiled NS:\n%s", md);
    cr_expect(strstr(md, "| none | 65536 | 1.118e+08 |"), "flex pairs per head:\n%s", md);
    cr_expect_null(strstr(md, "failed"), "%s", md);
    // CSV: 15 GEMMs x bf16/fp32 out, 2 backends x 5 lengths x fwd/bwd, 2 NS, 4 flex cases x fwd/bwd.
    cr_expect_eq(th_count_lines(csv), 1 + 30 + 20 + 2 + 8, "%s", csv);
    free(md), free(csv), free(err);

    cr_expect_neq(peers_on_stand_in(dir, "FAKE_TORCH_FAIL=cudnn", &md, &csv, &err), 0, "failed cases, exit 0");
    cr_expect(strstr(err, "peers_gpu: 5 case(s) failed"), "%s", err);
    cr_expect(strstr(md, "## Parts that failed") && strstr(md, "- sdpa cudnn T=65536: RuntimeError: "), "%s", md);
    cr_expect(strstr(md, "| flash | 65536 |") && strstr(md, "| none | 65536 | 1.118e+08 |"),
              "the other cases and parts should still run:\n%s", md);
    free(md), free(csv), free(err);
    th_rmtree(dir);
}

// bench/ncu_sass_summary.py, which the profile stage runs on its source pages, on pages written in
// the shape of ncu's CSV: verify/ncu_sass_summary_check.py.
// Runs `stages` of dir/run_gpu_report.sh (a copy) into dir/rep with dir/fake first on PATH and
// GM_BIN dir/bin. Returns the summary, *rc the exit.
static char *ab_run(const char *dir, const char *stages, int *rc) {
    char cmd[9000], path[4300], *out, *err;
    snprintf(cmd, sizeof cmd, "rm -rf '%s/rep' '%s/rep.tar.gz' && PATH='%s/fake':\"$PATH\" GM_BIN='%s/bin' bash "
             "'%s/run_gpu_report.sh' '%s/rep' --stages %s", dir, dir, dir, dir, dir, dir, stages);
    *rc = th_run(cmd, &out, &err);
    free(out), free(err);
    snprintf(path, sizeof path, "%s/rep/summary.txt", dir);
    return read_file(path);
}
// An executable stand-in at `path`: `text` as it is.
static void stand_in(const char *path, const char *text) {
    FILE *f = fopen(path, "w");
    cr_assert(f, "%s", path);
    fputs(text, f);
    fclose(f);
    char cmd[4400];
    snprintf(cmd, sizeof cmd, "chmod +x '%s'", path);
    cr_assert_eq(system(cmd), 0, "%s", cmd);
}
// The attention-ab and kernels-ab stages on stand-ins: an nvidia-smi that lists a GPU, and in a
// GM_BIN of its own this build's benches and a baseline's (scripts writing a bench's CSV and .md:
// the wgmma forward 1.5 ms here, 3 in the baseline, the naive one 10 in both; the kernels bench's
// --compare printing what it was given), the script run from a copy of its own (so that a
// bundle's env.sh does not set GM_BIN). After attention-docs, attention-ab runs the baseline with
// attention-docs' flags, then this build's again (attention-docs-again), and writes
// attention-docs-ab.md (base / ours 2.000; this build's two runs 1st / 2nd 1.000), and passes
// attention-window, which did not run; after kernels-softcap, kernels-ab runs the baseline's step,
// then this build's again, and this build's kernels --compare three times: the baseline's CSV as A
// against each of this build's, and this build's two (kernels --compare itself:
// test_bench_kernels.c). Without the baseline benches, or before the stages they follow ran, they
// are skipped, saying why.
Test(gpu_report_script, ab_stages_time_the_baseline_beside_this_build, .timeout = 120) {
    char *dir = th_tmpdir(), cmd[9000], path[4300];
    const char *bench = "#!/bin/sh\nfor a; do case $a in --out=*) o=${a#--out=};; --name=*) n=${a#--name=};; esac; "
                        "done\necho \"$0 $*\"\nprintf 'impl,pass,B,T,NH,HD,block,window,docs,pairs,flops,median_ms,"
                        "min_ms,max_ms,tflops,out_rel_diff\\nwgmma,fwd,1,1024,6,128,128,14,1,100,1e9,%s,0,0,1,0\\n"
                        "naive,fwd,1,1024,6,128,128,14,1,100,1e9,10,0,0,1,0\\n' > \"$o/$n.csv\"\nprintf -- "
                        "'- Commit: `%s`.\\n' > \"$o/$n.md\"\n";
    char text[1000];
    snprintf(cmd, sizeof cmd, "mkdir -p '%s/fake' '%s/bin/bench' && cp '%s' '%s/run_gpu_report.sh'", dir, dir, script(),
             dir);
    cr_assert_eq(system(cmd), 0, "%s", cmd);
    snprintf(path, sizeof path, "%s/fake/nvidia-smi", dir);
    stand_in(path, "#!/bin/sh\necho \"GPU 0: stand-in (UUID: GPU-0)\"\n");
    snprintf(path, sizeof path, "%s/bin/bench/attention_gpu", dir);
    snprintf(text, sizeof text, bench, "1.5", "ours");
    stand_in(path, text);
    snprintf(path, sizeof path, "%s/bin/bench/attention_gpu-baseline", dir);
    snprintf(text, sizeof text, bench, "3", "base");
    stand_in(path, text);
    const char *kernels = "#!/bin/sh\n[ \"$1\" = --compare ] && { echo \"compare A=$2 B=$3\"; exit 0; }\nfor a; do "
                          "case $a in --out=*) o=${a#--out=};; --name=*) n=${a#--name=};; esac; done\necho %s > "
                          "\"$o/$n.csv\"\n";
    snprintf(path, sizeof path, "%s/bin/bench/kernels", dir);
    snprintf(text, sizeof text, kernels, "ours");
    stand_in(path, text);
    snprintf(path, sizeof path, "%s/bin/bench/kernels-baseline", dir);
    snprintf(text, sizeof text, kernels, "base");
    stand_in(path, text);
    int rc;
    char *summary = ab_run(dir, "kernels-softcap,kernels-ab", &rc);
    cr_expect(rc == 0 && strstr(summary, "\nkernels-ab: exit 0, "), "exit %d:\n%s", rc, summary);
    snprintf(path, sizeof path, "%s/rep/kernels-softcap-ab.txt", dir);
    char *kab = read_file(path), want[9000];
    snprintf(want, sizeof want,
             "# The baseline (A) against this build, its run before the baseline's (B)\n"
             "compare A=%s/rep/kernels-softcap-baseline.csv B=%s/rep/kernels-softcap.csv\n\n"
             "# The baseline (A) against this build, its run after the baseline's (B)\n"
             "compare A=%s/rep/kernels-softcap-baseline.csv B=%s/rep/kernels-softcap-again.csv\n\n"
             "# This build before (A) and after (B) the baseline: the same code twice, the run's drift\n"
             "compare A=%s/rep/kernels-softcap.csv B=%s/rep/kernels-softcap-again.csv\n",
             dir, dir, dir, dir, dir, dir);
    cr_expect_str_eq(kab, want);
    free(summary), free(kab);
    summary = ab_run(dir, "attention-docs,attention-ab", &rc);
    cr_expect(rc == 0 && strstr(summary, "\nattention-docs: exit 0, ") && strstr(summary, "\nattention-ab: exit 0, "),
              "exit %d:\n%s", rc, summary);
    snprintf(path, sizeof path, "%s/rep/attention-docs-ab.md", dir);
    char *ab = read_file(path);
    cr_expect(strstr(ab, "- This build: `ours`.") && strstr(ab, "- Baseline: `base`.") &&
                  strstr(ab, "| 1024 | 3 | 1.5 | 2.000 | 1.000 |") &&
                  strstr(ab, "base / ours 1.000 to 1.000 over 1 rows.") &&
                  strstr(ab, "1st / 2nd 1.000 to 1.000 over 2 rows."),
              "%s", ab);
    snprintf(path, sizeof path, "%s/rep/attention-ab.log", dir);
    char *log = read_file(path);
    cr_expect(strstr(log, "attention_gpu-baseline --preset=softcap --out=") &&
                  strstr(log, " --name=attention-docs-baseline --doc_len=700 --reps=5\n") &&
                  strstr(log, "\nattention_gpu --preset=softcap --out=") &&
                  strstr(log, " --name=attention-docs-again --doc_len=700 --reps=5\n") &&
                  strstr(log, "attention-window: not compared (no attention-window.csv: its stage did not run here)"),
              "%s", log);
    free(summary), free(ab), free(log);

    summary = ab_run(dir, "attention-ab,kernels-ab", &rc);
    cr_expect(rc == 0 &&
                  strstr(summary, "\nattention-ab: skipped: no attention-docs.csv or attention-window.csv (the stage "
                                  "that writes it did not run here)\n") &&
                  strstr(summary, "\nkernels-ab: skipped: no kernels-softcap.csv (the stage that writes it did not "
                                  "run here)\n"),
              "exit %d:\n%s", rc, summary);
    free(summary);
    snprintf(cmd, sizeof cmd, "rm '%s/bin/bench/attention_gpu-baseline'", dir);
    cr_assert_eq(system(cmd), 0);
    summary = ab_run(dir, "attention-docs,attention-ab", &rc);
    cr_expect(rc == 0 && strstr(summary, "\nattention-ab: skipped: no baseline attention_gpu here (a bundle made by "
                                         "make bundle BASELINE=REV holds one)\n"),
              "exit %d:\n%s", rc, summary);
    free(summary);
    th_rmtree(dir);
}

Test(attention_ab, by_hand) { th_py_check("verify/attention_ab_check.py", "by_hand"); }
Test(attention_ab, other_masks_refused) { th_py_check("verify/attention_ab_check.py", "other_masks_refused"); }
Test(attention_ab, bad_input) { th_py_check("verify/attention_ab_check.py", "bad_input"); }
Test(attention_ab, again) { th_py_check("verify/attention_ab_check.py", "again"); }
Test(ncu_sass_summary, kinds_and_top) { th_py_check("verify/ncu_sass_summary_check.py", "kinds_and_top"); }
Test(ncu_sass_summary, bad_input) { th_py_check("verify/ncu_sass_summary_check.py", "bad_input"); }
