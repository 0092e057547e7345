// A comma-separated list of items for a one-line message of bounded length (an error line holds
// GM_ERROR_LEN characters): items go in whole while they fit, and the list then ends with
// "and N more", so that no value is ever cut in the middle and the count of what is left out is
// still said.
#ifndef GM_BASE_SHORT_LIST_H
#define GM_BASE_SHORT_LIST_H

#include <stddef.h>

typedef struct {
    char *buf;
    size_t len;    // buf's size
    int shown;     // items written
    int left_out;  // items that did not fit (every item after the first of them)
} gm_short_list;

// An empty list in buf (len >= 32, the room of "and <count> more").
void gm_short_list_init(gm_short_list *l, char *buf, size_t len);
// One item, printf-style: written if it fits with room left for the closing count, else counted.
void gm_short_list_add(gm_short_list *l, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
// Close the list (", and N more" when items were left out); returns buf.
const char *gm_short_list_end(gm_short_list *l);

#endif
