#ifndef RCAGENT_CCRYPTO_SHIM_H
#define RCAGENT_CCRYPTO_SHIM_H
// libcrypto's one-shot digest API (EVP_Digest, EVP_sha256) imports as is: no wrappers needed.
#include <openssl/evp.h>
#endif
