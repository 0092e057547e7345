#include "base/short_list.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

enum { COUNT_ROOM = 24 };  // ", and 2147483647 more" and its NUL

void gm_short_list_init(gm_short_list *l, char *buf, size_t len) {
    *l = (gm_short_list){buf, len, 0, 0};
    if (len) buf[0] = '\0';
}

void gm_short_list_add(gm_short_list *l, const char *fmt, ...) {
    if (l->left_out) {  // keep the shown items a prefix of the list: a later, shorter one is not slipped in
        l->left_out++;
        return;
    }
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    size_t used = strlen(l->buf), sep = l->shown ? 2 : 0;
    if (n < 0 || l->len < COUNT_ROOM || used + sep + (size_t)n + COUNT_ROOM > l->len) {
        l->left_out++;
        return;
    }
    memcpy(l->buf + used, ", ", sep);
    va_start(ap, fmt);
    vsnprintf(l->buf + used + sep, l->len - used - sep, fmt, ap);
    va_end(ap);
    l->shown++;
}

const char *gm_short_list_end(gm_short_list *l) {
    size_t used = strlen(l->buf);
    if (l->left_out) snprintf(l->buf + used, l->len - used, "%s%d more", l->shown ? ", and " : "", l->left_out);
    return l->buf;
}
