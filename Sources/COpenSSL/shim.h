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
#include <openssl/aes.h>
#include <string.h>

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

/* HMAC (RFC 2104) over the SHA functions above, for the same reason: OpenSSL 3's HMAC() and EVP_KDF look up
   their algorithms first. `algorithm` is 1, 256 or 512; `out` has room for the digest. Everything derived from
   the key is wiped before returning. Returns 1 on success. */
typedef union { SHA_CTX sha1; SHA256_CTX sha256; SHA512_CTX sha512; } ykterm_sha_ctx;
static inline int ykterm_sha_init(int algorithm, ykterm_sha_ctx *c) {
    return algorithm == 1 ? SHA1_Init(&c->sha1) : algorithm == 256 ? SHA256_Init(&c->sha256) : SHA512_Init(&c->sha512);
}
static inline int ykterm_sha_update(int algorithm, ykterm_sha_ctx *c, const unsigned char *data, size_t length) {
    return algorithm == 1 ? SHA1_Update(&c->sha1, data, length)
         : algorithm == 256 ? SHA256_Update(&c->sha256, data, length) : SHA512_Update(&c->sha512, data, length);
}
static inline int ykterm_sha_final(int algorithm, ykterm_sha_ctx *c, unsigned char *digest) {
    return algorithm == 1 ? SHA1_Final(digest, &c->sha1)
         : algorithm == 256 ? SHA256_Final(digest, &c->sha256) : SHA512_Final(digest, &c->sha512);
}
static inline int ykterm_hmac(int algorithm, const unsigned char *key, size_t keyLength, const unsigned char *data,
                              size_t length, unsigned char *out) {
    if (algorithm != 1 && algorithm != 256 && algorithm != 512) return 0;
    size_t block = algorithm == 512 ? 128 : 64;
    unsigned char k0[128] = {0}, pad[128], inner[64];
    ykterm_sha_ctx c;
    int ok = 1;
    if (keyLength > block) {
        ok = ykterm_sha_init(algorithm, &c) && ykterm_sha_update(algorithm, &c, key, keyLength)
             && ykterm_sha_final(algorithm, &c, k0);
    } else if (keyLength > 0) {
        memcpy(k0, key, keyLength);
    }
    for (size_t i = 0; i < block; i++) pad[i] = k0[i] ^ 0x36;
    ok = ok && ykterm_sha_init(algorithm, &c) && ykterm_sha_update(algorithm, &c, pad, block)
         && ykterm_sha_update(algorithm, &c, data, length) && ykterm_sha_final(algorithm, &c, inner);
    for (size_t i = 0; i < block; i++) pad[i] = k0[i] ^ 0x5c;
    size_t digestLength = algorithm == 1 ? 20 : algorithm == 256 ? 32 : 64;
    ok = ok && ykterm_sha_init(algorithm, &c) && ykterm_sha_update(algorithm, &c, pad, block)
         && ykterm_sha_update(algorithm, &c, inner, digestLength) && ykterm_sha_final(algorithm, &c, out);
    OPENSSL_cleanse(k0, sizeof k0);
    OPENSSL_cleanse(pad, sizeof pad);
    OPENSSL_cleanse(inner, sizeof inner);
    OPENSSL_cleanse(&c, sizeof c);
    return ok;
}

/* AES-CBC and AES-ECB through the block functions, for the same reason: EVP_CipherInit_ex's first lookup of a
   cipher costs 3 million instructions, more than a PIN protocol's whole exchange. `length` is a multiple of 16;
   the key schedule and the running IV are wiped before returning. Each returns 1 on success. */
static inline int ykterm_aes_cbc(const unsigned char *key, int bits, const unsigned char *iv, const unsigned char *in,
                                 unsigned char *out, size_t length, int encrypt) {
    AES_KEY schedule;
    unsigned char chain[AES_BLOCK_SIZE];
    if ((encrypt ? AES_set_encrypt_key(key, bits, &schedule) : AES_set_decrypt_key(key, bits, &schedule)) != 0) return 0;
    memcpy(chain, iv, sizeof chain);
    AES_cbc_encrypt(in, out, length, &schedule, chain, encrypt ? AES_ENCRYPT : AES_DECRYPT);
    OPENSSL_cleanse(&schedule, sizeof schedule);
    OPENSSL_cleanse(chain, sizeof chain);
    return 1;
}
static inline int ykterm_aes_ecb(const unsigned char *key, int bits, const unsigned char *in, unsigned char *out,
                                 size_t length, int encrypt) {
    AES_KEY schedule;
    if ((encrypt ? AES_set_encrypt_key(key, bits, &schedule) : AES_set_decrypt_key(key, bits, &schedule)) != 0) return 0;
    for (size_t at = 0; at + AES_BLOCK_SIZE <= length; at += AES_BLOCK_SIZE)
        AES_ecb_encrypt(in + at, out + at, &schedule, encrypt ? AES_ENCRYPT : AES_DECRYPT);
    OPENSSL_cleanse(&schedule, sizeof schedule);
    return 1;
}
#pragma clang diagnostic pop
