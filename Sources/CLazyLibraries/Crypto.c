// libcrypto (libssl3): SHA-256 for templates' percent conditions; RS256 signing for rcadmin's
// service-account tokens; Ed25519 keys, signing and verifying for signed documents (the daemon's
// TrustedKeys=, rcadmin key/sign/verify).
#include <openssl/bio.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>

#include "LazyLibrary.h"

#define RC_LAZY_THIS RC_LAZY_CRYPTO
#define CRYPTO_FUNCTIONS(F, P, V)                                                                                  \
    F(int, EVP_Digest,                                                                                             \
      (const void *data, size_t count, unsigned char *digest, unsigned int *size, const EVP_MD *type, ENGINE *engine), \
      (data, count, digest, size, type, engine))                                                                   \
    F(const EVP_MD *, EVP_sha256, (void), ())                                                                      \
    F(EVP_MD_CTX *, EVP_MD_CTX_new, (void), ())                                                                    \
    P(void, EVP_MD_CTX_free, (EVP_MD_CTX * context), (context))                                                    \
    F(int, EVP_DigestSignInit,                                                                                     \
      (EVP_MD_CTX * context, EVP_PKEY_CTX * *keyContext, const EVP_MD *type, ENGINE *engine, EVP_PKEY *key),       \
      (context, keyContext, type, engine, key))                                                                    \
    F(int, EVP_DigestSign,                                                                                         \
      (EVP_MD_CTX * context, unsigned char *signature, size_t *length, const unsigned char *data, size_t count),    \
      (context, signature, length, data, count))                                                                   \
    P(void, EVP_PKEY_free, (EVP_PKEY * key), (key))                                                                \
    F(int, EVP_PKEY_get_base_id, (const EVP_PKEY *key), (key))                                                     \
    F(BIO *, BIO_new_mem_buf, (const void *buffer, int length), (buffer, length))                                  \
    F(int, BIO_free, (BIO * bio), (bio))                                                                           \
    F(EVP_PKEY *, PEM_read_bio_PrivateKey, (BIO * bio, EVP_PKEY * *key, pem_password_cb * callback, void *context), \
      (bio, key, callback, context))                                                                               \
    P(void, ERR_clear_error, (void), ())                                                                           \
    F(unsigned long, ERR_peek_last_error, (void), ())                                                              \
    F(const char *, ERR_reason_error_string, (unsigned long code), (code))                                         \
    P(void, OPENSSL_cleanse, (void *pointer, size_t length), (pointer, length))                                  \
    F(int, EVP_DigestVerifyInit,                                                                                   \
      (EVP_MD_CTX * context, EVP_PKEY_CTX * *keyContext, const EVP_MD *type, ENGINE *engine, EVP_PKEY *key),       \
      (context, keyContext, type, engine, key))                                                                    \
    F(int, EVP_DigestVerify,                                                                                       \
      (EVP_MD_CTX * context, const unsigned char *signature, size_t length, const unsigned char *data,             \
       size_t count),                                                                                              \
      (context, signature, length, data, count))                                                                   \
    F(EVP_PKEY *, PEM_read_bio_PUBKEY, (BIO * bio, EVP_PKEY * *key, pem_password_cb * callback, void *context),    \
      (bio, key, callback, context))                                                                               \
    F(int, PEM_write_bio_PUBKEY, (BIO * bio, const EVP_PKEY *key), (bio, key))                                     \
    F(int, PEM_write_bio_PrivateKey,                                                                               \
      (BIO * bio, const EVP_PKEY *key, const EVP_CIPHER *cipher, const unsigned char *passphrase, int length,      \
       pem_password_cb *callback, void *context),                                                                  \
      (bio, key, cipher, passphrase, length, callback, context))                                                   \
    F(BIO *, BIO_new, (const BIO_METHOD *method), (method))                                                        \
    F(const BIO_METHOD *, BIO_s_mem, (void), ())                                                                   \
    F(long, BIO_ctrl, (BIO * bio, int command, long number, void *argument), (bio, command, number, argument))     \
    F(EVP_PKEY_CTX *, EVP_PKEY_CTX_new_id, (int type, ENGINE *engine), (type, engine))                             \
    P(void, EVP_PKEY_CTX_free, (EVP_PKEY_CTX * context), (context))                                                \
    F(int, EVP_PKEY_keygen_init, (EVP_PKEY_CTX * context), (context))                                              \
    F(int, EVP_PKEY_keygen, (EVP_PKEY_CTX * context, EVP_PKEY * *key), (context, key))                             \
    F(int, EVP_PKEY_get_raw_public_key, (const EVP_PKEY *key, unsigned char *bytes, size_t *length),              \
      (key, bytes, length))

RC_LAZY_DEFINE(rc_lazy_crypto, "libcrypto.so.3", "libssl3",
               "SHA-256, RSA and Ed25519 (templates' percent conditions, rcadmin's service-account tokens, signed documents)", NULL,
               CRYPTO_FUNCTIONS)
