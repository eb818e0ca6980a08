#ifndef RCAGENT_CLAZYLIBRARIES_H
#define RCAGENT_CLAZYLIBRARIES_H
// The C libraries only some features need, loaded on first use (dlopen) instead of at start-up.
//
// rcagent and rcagentd are one executable (the name it is called by chooses the program), and the
// CLI's start-up is the budget `rcagent get` is measured by: every library in the executable's
// NEEDED list is mapped and relocated before main, libcurl and libcrypto with a dozen libraries of
// their own. So no executable links these libraries: this target defines the functions the Swift
// code calls (curl_*, mosquitto_*, EVP_* and the like, pcre2_*_8, MHD_*) as thin wrappers that open the
// library and resolve every function used from it the first time any of them is called. A device
// without an optional library (libmosquitto on one without MQTT) runs every feature that does not
// need it. The two sd_* functions are not loaded at all but written out (Systemd.c).
//
// The Swift owner of each C resource calls rc_lazy_require() before its first call into the library
// and throws its own typed error with the text, naming its feature: "MQTT needs libmosquitto.so.1,
// which cannot be loaded (apt install libmosquitto1): ...". A wrapper called without that check
// on a device without the library cannot return a meaningful value: it prints the same text with
// the library's features to stderr and aborts (an invariant broken, as with a precondition).

/// The libraries loaded on first use. Values index the table in LazyLibraries.c.
typedef enum {
    RC_LAZY_CURL = 0,
    RC_LAZY_MOSQUITTO = 1,
    RC_LAZY_CRYPTO = 2,
    RC_LAZY_PCRE2 = 3,
    RC_LAZY_MICROHTTPD = 4,
} rc_lazy_library;

/// Loads `library` and resolves every function used from it, once per process (thread-safe).
/// NULL when it is ready; otherwise why not, for an error message after "<feature> needs ":
/// "libcurl.so.4, which cannot be loaded (apt install libcurl4): <the loader's reason>". The text
/// is static: it stays valid, and is the same, for the life of the process.
const char *rc_lazy_require(rc_lazy_library library);

/// The library's file name (its SONAME, "libmosquitto.so.1") and Debian package ("libmosquitto1").
const char *rc_lazy_soname(rc_lazy_library library);
const char *rc_lazy_package(rc_lazy_library library);

/// The libraries loaded alone before `library` (NULL-terminated; NULL when none): its own
/// dependencies, which a test checks against the system's libraries.
const char *const *rc_lazy_loaded_first(rc_lazy_library library);

#endif
