#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>
#include <openssl/err.h>
#include <openssl/crypto.h>
#include <openssl/kdf.h>
#include <openssl/core_names.h>
#include <openssl/params.h>
#include <openssl/ec.h>
#include <openssl/bn.h>
#include <openssl/x509.h>
#include <openssl/obj_mac.h>
#include <openssl/param_build.h>
#include <openssl/objects.h>
#include <openssl/x509v3.h>
#include <openssl/sha.h>

/* One-shot SHA digests through the SHA functions themselves. EVP_Digest first looks the algorithm up in the
   provider tables, and the first lookup in a process builds them (about 5 million instructions): a cost a
   command that hashes once (the OATH device ID at the TUI's start) need not pay. The functions are deprecated
   in OpenSSL 3 in favour of EVP, and present in every 3.x. Each returns 1 on success. */
#pragma clang diagnostic push
#pragma clang diagnostic ignored "-Wdeprecated-declarations"
static inline int ykterm_sha1(const unsigned char *data, size_t length, unsigned char *digest) {
    SHA_CTX c;
    return SHA1_Init(&c) && SHA1_Update(&c, data, length) && SHA1_Final(digest, &c);
}
static inline int ykterm_sha256(const unsigned char *data, size_t length, unsigned char *digest) {
    SHA256_CTX c;
    return SHA256_Init(&c) && SHA256_Update(&c, data, length) && SHA256_Final(digest, &c);
}
static inline int ykterm_sha512(const unsigned char *data, size_t length, unsigned char *digest) {
    SHA512_CTX c;
    return SHA512_Init(&c) && SHA512_Update(&c, data, length) && SHA512_Final(digest, &c);
}
#pragma clang diagnostic pop
