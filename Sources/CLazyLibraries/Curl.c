// libcurl (libcurl4): HTTP for the http and firebase sources and the operator tool's Google calls.
// Without this, curl.h's type-checking macros for GCC would stand in for the variadic functions.
#define CURL_DISABLE_TYPECHECK 1
#include <curl/curl.h>
#include <stdarg.h>

#include "LazyLibrary.h"

#define RC_LAZY_THIS RC_LAZY_CURL
#define CURL_FUNCTIONS(F, P, V)                                                                    \
    F(CURLcode, curl_global_init, (long flags), (flags))                                           \
    F(CURL *, curl_easy_init, (void), ())                                                          \
    F(CURLcode, curl_easy_perform, (CURL * curl), (curl))                                          \
    P(void, curl_easy_cleanup, (CURL * curl), (curl))                                              \
    F(const char *, curl_easy_strerror, (CURLcode code), (code))                                   \
    F(struct curl_slist *, curl_slist_append, (struct curl_slist * list, const char *text), (list, text)) \
    P(void, curl_slist_free_all, (struct curl_slist * list), (list))                               \
    V(CURLcode, curl_easy_setopt, (CURL * curl, CURLoption option, ...), ())                       \
    V(CURLcode, curl_easy_getinfo, (CURL * curl, CURLINFO info, ...), ())

// Debian 12's libcurl4 brings 30 libraries. Five of them, linked with -z now, make 7,100 of the
// 10,500 symbol lookups of its load, each faster loaded alone (load() in LazyLibraries.c): libcrypto
// and libssl (TLS), libgnutls (through librtmp), libgssapi_krb5 and libldap.
RC_LAZY_DEFINE(rc_lazy_curl, "libcurl.so.4", "libcurl4",
               "HTTP (the http and firebase sources, rcadmin's Google and FCM calls)",
               RC_LAZY_FIRST("libcrypto.so.3", "libssl.so.3", "libgnutls.so.30", "libgssapi_krb5.so.2",
                             "libldap-2.5.so.0"),
               CURL_FUNCTIONS)

typedef CURLcode (*variadic_curl_function)(CURL *, int, ...);

// The option's number says the type of its one argument, as curl itself reads it (curl.h:
// CURLOPTTYPE_*): long below 10000, then object and function pointers, curl_off_t from 30000, and
// blobs (pointers) from 40000.
CURLcode curl_easy_setopt(CURL *curl, CURLoption option, ...) {
    variadic_curl_function real = (variadic_curl_function)rc_lazy_function(RC_LAZY_THIS, RC_LAZY_INDEX_curl_easy_setopt);
    va_list arguments;
    va_start(arguments, option);
    CURLcode result;
    if (option < CURLOPTTYPE_OBJECTPOINT) {
        result = real(curl, option, va_arg(arguments, long));
    } else if (option < CURLOPTTYPE_OFF_T) {
        result = real(curl, option, va_arg(arguments, void *));
    } else if (option < CURLOPTTYPE_BLOB) {
        result = real(curl, option, va_arg(arguments, curl_off_t));
    } else {
        result = real(curl, option, va_arg(arguments, void *));
    }
    va_end(arguments);
    return result;
}

// Every CURLINFO_* takes a pointer to where the answer goes.
CURLcode curl_easy_getinfo(CURL *curl, CURLINFO info, ...) {
    variadic_curl_function real = (variadic_curl_function)rc_lazy_function(RC_LAZY_THIS, RC_LAZY_INDEX_curl_easy_getinfo);
    va_list arguments;
    va_start(arguments, info);
    CURLcode result = real(curl, info, va_arg(arguments, void *));
    va_end(arguments);
    return result;
}
