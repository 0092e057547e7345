// House rules that merges can quietly break, checked on the source tree: one FNV-1a (base/hash.c),
// no arena allocator left behind, and every relative link of the README pointing at a file that
// exists. (Copies of helpers came back twice through merges; this is what catches the next one.)
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "base/io.h"
#include "helpers.h"

Test(repo_hygiene, one_fnv1a_implementation) {
    char cmd[4400], *out, *err;
    // The FNV-1a 64-bit prime, in decimal or hex, anywhere in the C sources but base/hash.c.
    snprintf(cmd, sizeof cmd,
             "cd '%s' && grep -rlE --include='*.c' --include='*.h' --include='*.cu' '1099511628211|0x100000001b3' "
             "impl bench verify | grep -v -e '^impl/base/hash.c$' -e '^verify/test_repo_hygiene.c$' || true",
             th_root_path(""));
    cr_assert_eq(th_run(cmd, &out, &err), 0, "%s", err);
    cr_expect_str_eq(out, "", "FNV-1a copies (use gm_hash_bytes): %s", out);
    free(out), free(err);
}

Test(repo_hygiene, no_arena_allocator) {
    char cmd[4400], *out, *err;
    snprintf(cmd, sizeof cmd, "cd '%s' && grep -rl 'gm_arena' impl bench verify | grep -v '^verify/test_repo_hygiene.c$' || true", th_root_path(""));
    cr_assert_eq(th_run(cmd, &out, &err), 0, "%s", err);
    cr_expect_str_eq(out, "", "base/arena was removed, yet: %s", out);
    free(out), free(err);
}

Test(repo_hygiene, readme_links_resolve) {
    char *text;
    size_t len;
    cr_assert_eq(gm_read_all(th_root_path("README.md"), &text, &len), 0, "%s", gm_error());
    int links = 0;
    for (const char *p = text; (p = strstr(p, "](")); p += 2) {
        const char *start = p + 2, *end = strchr(start, ')');
        if (!end || end - start > 512) continue;
        char target[520];
        snprintf(target, sizeof target, "%.*s", (int)(end - start), start);
        char *hash = strchr(target, '#');
        if (hash) *hash = '\0';
        if (!target[0] || strstr(target, "://") || !strncmp(target, "mailto:", 7)) continue;
        links++;
        cr_expect(th_file_exists(th_root_path(target)), "README links to %s, which does not exist", target);
    }
    cr_expect_gt(links, 0, "no relative link found: the parser is broken");
    free(text);
}
