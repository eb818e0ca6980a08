#ifndef RCAGENT_CCRYPTO_SHIM_H
#define RCAGENT_CCRYPTO_SHIM_H
// libcrypto's one-shot digest API (EVP_Digest, EVP_sha256), the PEM key reader, memory BIOs and
// EVP_DigestSign import as they are: no wrappers needed.
#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#endif
