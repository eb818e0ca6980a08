// Loading on first use: one pthread_once per library opens it and resolves every function in its
// list, so a library that is missing, or too old to have one of them, is found at the first call,
// not half-way through a feature.
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "LazyLibrary.h"

static const rc_lazy_definition *const definitions[] = {
    [RC_LAZY_CURL] = &rc_lazy_curl,
    [RC_LAZY_MOSQUITTO] = &rc_lazy_mosquitto,
    [RC_LAZY_CRYPTO] = &rc_lazy_crypto,
    [RC_LAZY_PCRE2] = &rc_lazy_pcre2,
    [RC_LAZY_MICROHTTPD] = &rc_lazy_microhttpd,
};
#define LIBRARIES (sizeof definitions / sizeof definitions[0])

static pthread_once_t once[LIBRARIES] = {PTHREAD_ONCE_INIT, PTHREAD_ONCE_INIT, PTHREAD_ONCE_INIT, PTHREAD_ONCE_INIT,
                                         PTHREAD_ONCE_INIT};
static int ready[LIBRARIES];
static char errors[LIBRARIES][512];

static void load(rc_lazy_library library) {
    const rc_lazy_definition *definition = definitions[library];
    // By soname, from the system's directories only: a name without a slash is looked up in
    // LD_LIBRARY_PATH (the caller's own environment, ignored for setuid programs; systemd starts the
    // daemon without it), the executable's DT_RUNPATH, then ld.so.cache and /lib, /usr/lib, all
    // root's. The release programs carry no DT_RUNPATH (the Makefile's --disable-local-rpath,
    // checked by packaging/deb-check.sh), so a library placed beside the executable is never
    // loaded. Not an absolute path from a list of multiarch directories: the loader already knows
    // them for every architecture, and the soname keeps the library's ABI version.
    // RTLD_LOCAL: the library's symbols stay out of the global scope, where they would meet the
    // wrappers of the same names in this executable. RTLD_LAZY: the functions the library and its
    // dependencies call are looked up at their first call, not all at once here. libcurl brings 30
    // libraries (gnutls through librtmp, krb5, ldap), whose lookups at load were 2.7 M of the 15.7 M
    // instructions of loading libcurl, libmosquitto and libcrypto, paid by every new daemon (the
    // fleet start-up). A missing dependency still fails here, since every library is loaded now;
    // only one too old to have a function would fail at that function's call, which the package's
    // versioned dependencies rule out. Our own functions are all looked up below, by name.
    //
    // The libraries in `first` are loaded before it, each alone. Most of the symbols a library binds
    // at load are its own and libc's (one with -z now binds every function it calls), and the loader
    // looks each up in the executable's libraries, then in the group dlopen loaded with it, in
    // order: loaded alone, a library's group is itself and its few dependencies; loaded among
    // libcurl's 30, every lookup of its own symbols passes the libraries before it. Those in Curl.c
    // and Mosquitto.c cut a new daemon's loading of libmosquitto and then libcurl from 13.0 M
    // instructions to 11.0 M (BENCHMARKS.md, issue 30). One that cannot be loaded is skipped: the
    // library's own dlopen below loads what it needs, or says what is missing.
    for (const char *const *first = definition->first; first != NULL && *first != NULL; first++) {
        (void)dlopen(*first, RTLD_LAZY | RTLD_LOCAL);  // kept, as the library keeps its dependencies
    }
    void *handle = dlopen(definition->soname, RTLD_LAZY | RTLD_LOCAL);
    if (handle == NULL) {
        const char *reason = dlerror();
        snprintf(errors[library], sizeof errors[library], "%s, which cannot be loaded (apt install %s): %s",
                 definition->soname, definition->package, reason ? reason : "unknown error");
        return;
    }
    for (size_t index = 0; index < definition->count; index++) {
        // dlsym on the library's own handle finds its definition, never this executable's wrapper.
        void *function = dlsym(handle, definition->names[index]);
        if (function == NULL) {
            snprintf(errors[library], sizeof errors[library],
                     "%s, which has no %s (too old? apt install %s for this release's version)", definition->soname,
                     definition->names[index], definition->package);
            dlclose(handle);
            return;
        }
        definition->slots[index] = function;
    }
    ready[library] = 1;  // the handle stays open for the life of the process
}

static void load_curl(void) { load(RC_LAZY_CURL); }
static void load_mosquitto(void) { load(RC_LAZY_MOSQUITTO); }
static void load_crypto(void) { load(RC_LAZY_CRYPTO); }
static void load_pcre2(void) { load(RC_LAZY_PCRE2); }
static void load_microhttpd(void) { load(RC_LAZY_MICROHTTPD); }
static void (*const loaders[LIBRARIES])(void) = {
    [RC_LAZY_CURL] = load_curl,
    [RC_LAZY_MOSQUITTO] = load_mosquitto,
    [RC_LAZY_CRYPTO] = load_crypto,
    [RC_LAZY_PCRE2] = load_pcre2,
    [RC_LAZY_MICROHTTPD] = load_microhttpd,
};

const char *rc_lazy_require(rc_lazy_library library) {
    if ((size_t)library >= LIBRARIES) return "an unknown library";
    pthread_once(&once[library], loaders[library]);
    return ready[library] ? NULL : errors[library];
}

const char *rc_lazy_soname(rc_lazy_library library) {
    return (size_t)library < LIBRARIES ? definitions[library]->soname : "?";
}

const char *rc_lazy_package(rc_lazy_library library) {
    return (size_t)library < LIBRARIES ? definitions[library]->package : "?";
}

const char *const *rc_lazy_loaded_first(rc_lazy_library library) {
    return (size_t)library < LIBRARIES ? definitions[library]->first : NULL;
}

void *rc_lazy_function(rc_lazy_library library, size_t index) {
    const char *problem = rc_lazy_require(library);
    if (problem != NULL) {
        // Priority 2 (critical) for journald, as the Swift logger's lines carry theirs.
        dprintf(STDERR_FILENO, "<2>%s need %s\n", definitions[library]->features, problem);
        abort();
    }
    return definitions[library]->slots[index];
}
