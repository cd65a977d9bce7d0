#ifndef MANAGEDSTORE_CCRYPTO_SHIM_H
#define MANAGEDSTORE_CCRYPTO_SHIM_H
// OpenSSL's libcrypto (3.x), for SHA-256 through its EVP interface and CRYPTO_memcmp.
#include <openssl/crypto.h>
#include <openssl/evp.h>
#endif
