// libpcre2-8 (libpcre2-8-0): templates' STRING_CONTAINS_REGEX conditions, matched with bounded cost.
#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include "LazyLibrary.h"

#define RC_LAZY_THIS RC_LAZY_PCRE2
#define PCRE2_FUNCTIONS(F, P, V)                                                                                 \
    F(pcre2_code_8 *, pcre2_compile_8,                                                                           \
      (PCRE2_SPTR8 pattern, PCRE2_SIZE length, uint32_t options, int *error, PCRE2_SIZE *offset,                 \
       pcre2_compile_context_8 *context),                                                                        \
      (pattern, length, options, error, offset, context))                                                        \
    P(void, pcre2_code_free_8, (pcre2_code_8 * code), (code))                                                    \
    F(int, pcre2_match_8,                                                                                        \
      (const pcre2_code_8 *code, PCRE2_SPTR8 subject, PCRE2_SIZE length, PCRE2_SIZE start, uint32_t options,     \
       pcre2_match_data_8 *data, pcre2_match_context_8 *context),                                                \
      (code, subject, length, start, options, data, context))                                                    \
    F(pcre2_match_context_8 *, pcre2_match_context_create_8, (pcre2_general_context_8 * context), (context))     \
    P(void, pcre2_match_context_free_8, (pcre2_match_context_8 * context), (context))                            \
    F(pcre2_match_data_8 *, pcre2_match_data_create_from_pattern_8,                                              \
      (const pcre2_code_8 *code, pcre2_general_context_8 *context), (code, context))                             \
    P(void, pcre2_match_data_free_8, (pcre2_match_data_8 * data), (data))                                        \
    F(int, pcre2_set_heap_limit_8, (pcre2_match_context_8 * context, uint32_t limit), (context, limit))          \
    F(int, pcre2_set_match_limit_8, (pcre2_match_context_8 * context, uint32_t limit), (context, limit))

RC_LAZY_DEFINE(rc_lazy_pcre2, "libpcre2-8.so.0", "libpcre2-8-0", "regular expressions (templates' regex conditions)", NULL,
               PCRE2_FUNCTIONS)
