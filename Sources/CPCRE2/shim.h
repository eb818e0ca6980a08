#ifndef RCAGENT_CPCRE2_SHIM_H
#define RCAGENT_CPCRE2_SHIM_H
// libpcre2-8: the 8-bit (UTF-8) library. Its generic names (pcre2_compile) are token-pasting macros
// Swift cannot import; the _8 functions they stand for import as they are.
#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#endif
