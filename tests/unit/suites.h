#ifndef NSBOX_SUITES_H
#define NSBOX_SUITES_H
#define SUITE(name) void suite_##name(void);
#include "suites.def"
#undef SUITE
#endif
