#ifndef RCAGENT_LAZYLIBRARY_H
#define RCAGENT_LAZYLIBRARY_H
// What each wrapper file of this target shares: the table entry describing one library, and the
// macros that turn one list of the library's functions (return type, name, parameters, arguments)
// into the table's names and the wrappers, so adding a function is one line in one list.
#include <stddef.h>

#include "CLazyLibraries.h"

/// One library: where it comes from, what it is for, and the functions used from it.
typedef struct {
    const char *soname;
    const char *package;
    /// For the abort message of a wrapper called without rc_lazy_require (see CLazyLibraries.h).
    const char *features;
    /// Libraries it needs that are loaded alone, in this order, before it (NULL-terminated, or
    /// NULL): see load() in LazyLibraries.c.
    const char *const *first;
    const char *const *names;
    /// Filled once by the loader (under pthread_once, so every reader after it sees them).
    void **slots;
    size_t count;
} rc_lazy_definition;

extern const rc_lazy_definition rc_lazy_curl, rc_lazy_mosquitto, rc_lazy_crypto, rc_lazy_pcre2, rc_lazy_microhttpd;

/// The resolved function `index` of `library`, loading it first; aborts with the reason when the
/// library cannot be loaded (a caller that skipped rc_lazy_require).
void *rc_lazy_function(rc_lazy_library library, size_t index);

// A list is a macro taking three macros, each called as X(type, name, (parameters), (arguments)):
// F for functions returning a value, P for those returning void (C forbids `return f();` in a void
// function), and V for variadic ones, whose wrappers are written out by hand (the list gives them
// their slot; only the library knows how to read the arguments it forwards).
#define RC_LAZY_INDEX(type, name, parameters, arguments) RC_LAZY_INDEX_##name,
#define RC_LAZY_NAME(type, name, parameters, arguments) #name,
#define RC_LAZY_FUNCTION(type, name, parameters, arguments) \
    type name parameters { return ((type(*) parameters)rc_lazy_function(RC_LAZY_THIS, RC_LAZY_INDEX_##name)) arguments; }
#define RC_LAZY_PROCEDURE(type, name, parameters, arguments) \
    void name parameters { ((void(*) parameters)rc_lazy_function(RC_LAZY_THIS, RC_LAZY_INDEX_##name)) arguments; }
#define RC_LAZY_BY_HAND(type, name, parameters, arguments)

#define RC_LAZY_FIRST(...) ((const char *const[]){__VA_ARGS__, NULL})

/// The table entry `variable` for the list `LIST` and its wrappers (RC_LAZY_THIS names the library).
/// `first`: the libraries loaded before it (`RC_LAZY_FIRST(...)`), or NULL.
#define RC_LAZY_DEFINE(variable, soname, package, features, first, LIST)                           \
    enum { LIST(RC_LAZY_INDEX, RC_LAZY_INDEX, RC_LAZY_INDEX) RC_LAZY_COUNT };                      \
    static const char *const rc_lazy_names[] = {LIST(RC_LAZY_NAME, RC_LAZY_NAME, RC_LAZY_NAME)};   \
    static void *rc_lazy_slots[RC_LAZY_COUNT];                                                     \
    const rc_lazy_definition variable = {soname, package, features, first, rc_lazy_names,          \
                                         rc_lazy_slots, RC_LAZY_COUNT};                            \
    LIST(RC_LAZY_FUNCTION, RC_LAZY_PROCEDURE, RC_LAZY_BY_HAND)

#endif
