// What built this binary: the git commit (with "-dirty" when the tree had changes) and a
// snapshot of every source file of impl/ and the Makefile, so that every log carries the code
// that produced it, as the speedrun's logs do. Generated into build/gen/build_info.c by
// ci/build_info.py at build time.
#ifndef GM_BASE_BUILD_INFO_H
#define GM_BASE_BUILD_INFO_H

extern const char gm_build_commit[];
extern const char gm_build_source[];

#endif
