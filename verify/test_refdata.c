// The fp32 model of every preset (test scale) against our independent PyTorch float64 reference
// (refdata/gen/ref_model.py, files in refdata/model/<preset>/): loss, logits and every parameter
// gradient within relative error 1e-4 per tensor. The weights are rebuilt from the recorded seed;
// a changed configuration or init makes the test say the refdata is stale (`make refdata`).
#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <stdio.h>

#include "helpers.h"
#include "refdata_fixture.h"
#include "train/run_config.h"

#define BAR 1e-4

static void check_preset(const char *preset) {
    th_refcase rc;
    th_ref_open(&rc, preset, NULL, NULL);
    th_referr e = th_ref_compare(&rc, rc.window, rc.ref, 1);
    cr_expect(e.loss < BAR, "%s: loss relative error %.3g", preset, e.loss);
    cr_expect(e.logits < BAR, "%s: logits relative error %.3g", preset, e.logits);
    cr_expect(e.grad < BAR, "%s: d%s relative error %.3g (the worst gradient)", preset, e.worst, e.grad);
    cr_log_info("refdata %s: loss %.2e logits %.2e worst gradient %.2e (d%s)", preset, e.loss, e.logits, e.grad,
                e.worst);
    th_ref_close(&rc);
}

Test(refdata, adamw) { check_preset("adamw"); }
Test(refdata, muon_v1) { check_preset("muon-v1"); }
Test(refdata, muon_v2) { check_preset("muon-v2"); }
Test(refdata, untied) { check_preset("untied"); }
Test(refdata, value_embed) { check_preset("value-embed"); }
Test(refdata, softcap) { check_preset("softcap"); }
// softcap's model with record #43's optimizer: the same model, so the same reference (meta.txt differs in the name).
Test(refdata, normuon) { check_preset("normuon"); }

// Every preset has its committed reference (a preset added without `make refdata` fails here;
// each one's check is its own test above).
Test(refdata, every_preset_has_its_reference) {
    for (const char *const *p = gm_preset_names; *p; p++) {
        char rel[256];
        snprintf(rel, sizeof rel, "refdata/model/%s/ref.bin", *p);
        cr_expect(th_file_exists(th_root_path(rel)), "%s: no %s (make refdata)", *p, rel);
    }
}
