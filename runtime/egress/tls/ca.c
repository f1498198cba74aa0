/* The sandbox's CA and its leaves (tls.h), for nsbox-tls's side of the
 * sandbox's TLS connections.
 *
 * The CA: EC P-256, a random serial, CN "nsbox sandbox CA <16 hex>",
 * basicConstraints critical CA:TRUE pathlen:0, keyUsage critical
 * keyCertSign cRLSign, a subject key identifier; valid one year (from an
 * hour ago: a clock a little behind still accepts it).  Its key is made in
 * OpenSSL's secure heap when main.c could set one up (mlocked, not in a
 * core) and is never written anywhere; only its certificate is, to
 * STATE_DIR/egress-ca.pem (0644, by rename).
 *
 * A leaf per host: EC P-256, SAN DNS:host, EKU serverAuth, keyUsage
 * digitalSignature, the authority key identifier, valid as long as the CA.
 * Cached (TLS_LEAF_CACHE hosts; past it the oldest is dropped).
 *
 * Contract: thread-safe (one lock); errors say what failed, never a key. */
#include <errno.h>
#include <fcntl.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "tls.h"

#define CA_DAYS 365

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static EVP_PKEY *ca_key;
static X509 *ca_cert;
static time_t ca_from, ca_until;

struct leaf {
    char host[EGRESS_NAME_MAX + 1];
    X509 *cert;
    EVP_PKEY *key;
    uint64_t used; /* the cache's clock at its last use */
};
static struct leaf leaves[TLS_LEAF_CACHE];
static uint64_t leaf_clock;

static int fail(char *why, size_t size, const char *what)
{
    char ssl[256];
    tls_ssl_errors(ssl, sizeof(ssl));
    snprintf(why, size, "%s%s%s", what, ssl[0] ? ": " : "", ssl);
    return -1;
}

static EVP_PKEY *ec_key(void)
{
    return EVP_EC_gen("P-256");
}

static int random_serial(X509 *x)
{
    unsigned char b[16];
    if (getrandom(b, sizeof(b), 0) != (ssize_t)sizeof(b))
        return -1;
    b[0] &= 0x7f; /* positive */
    b[0] |= 0x40; /* 16 bytes, no leading zero */
    BIGNUM *bn = BN_bin2bn(b, sizeof(b), NULL);
    if (!bn)
        return -1;
    int rc = BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(x)) ? 0 : -1;
    BN_free(bn);
    return rc;
}

/* Adds extension nid with value (OpenSSL's config syntax), issuer and
 * subject set in ctx. */
static int add_ext(X509 *x, X509V3_CTX *ctx, int nid, const char *value)
{
    X509_EXTENSION *e = X509V3_EXT_conf_nid(NULL, ctx, nid, value);
    if (!e)
        return -1;
    int rc = X509_add_ext(x, e, -1) ? 0 : -1;
    X509_EXTENSION_free(e);
    return rc;
}

static int set_times(X509 *x)
{
    return X509_time_adj_ex(X509_getm_notBefore(x), 0, 0, &ca_from) &&
                   X509_time_adj_ex(X509_getm_notAfter(x), 0, 0, &ca_until)
               ? 0
               : -1;
}

static int make_ca(char *why, size_t size)
{
    unsigned char id[8];
    char cn[64];
    if (getrandom(id, sizeof(id), 0) != (ssize_t)sizeof(id))
        return snprintf(why, size, "getrandom: %s", strerror(errno)), -1;
    int k = snprintf(cn, sizeof(cn), "nsbox sandbox CA ");
    for (size_t i = 0; i < sizeof(id); i++)
        k += snprintf(cn + k, sizeof(cn) - (size_t)k, "%02x", id[i]);

    EVP_PKEY *key = ec_key();
    if (!key)
        return fail(why, size, "making the CA key");
    X509 *x = X509_new();
    X509_NAME *name = X509_NAME_new();
    X509V3_CTX ctx;
    ca_from = time(NULL) - 3600;
    ca_until = ca_from + 3600 + (time_t)CA_DAYS * 86400;
    if (!x || !name || !X509_set_version(x, 2) || random_serial(x) < 0 ||
        !X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_UTF8, (const unsigned char *)cn, -1, -1,
                                    0) ||
        !X509_set_subject_name(x, name) || !X509_set_issuer_name(x, name) || set_times(x) < 0 ||
        !X509_set_pubkey(x, key))
        goto bad;
    X509V3_set_ctx(&ctx, x, x, NULL, NULL, 0);
    if (add_ext(x, &ctx, NID_basic_constraints, "critical,CA:TRUE,pathlen:0") < 0 ||
        add_ext(x, &ctx, NID_key_usage, "critical,keyCertSign,cRLSign") < 0 ||
        add_ext(x, &ctx, NID_subject_key_identifier, "hash") < 0 ||
        add_ext(x, &ctx, NID_authority_key_identifier, "keyid:always") < 0 ||
        !X509_sign(x, key, EVP_sha256()))
        goto bad;
    X509_NAME_free(name);
    ca_key = key;
    ca_cert = x;
    return 0;
bad:
    X509_NAME_free(name);
    X509_free(x);
    EVP_PKEY_free(key);
    return fail(why, size, "making the CA certificate");
}

static int write_pem(const char *path, char *why, size_t size)
{
    char tmp[4200];
    snprintf(tmp, sizeof(tmp), "%s.tmp.%d", path, (int)getpid());
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
    if (fd < 0)
        return snprintf(why, size, "writing %s: %s", tmp, strerror(errno)), -1;
    FILE *f = fdopen(fd, "w");
    if (!f) {
        close(fd);
        unlink(tmp);
        return snprintf(why, size, "writing %s: %s", tmp, strerror(errno)), -1;
    }
    /* 0644 whatever the umask: the sandbox's trust store is made from it. */
    int ok = fchmod(fd, 0644) == 0 && PEM_write_X509(f, ca_cert) == 1;
    ok = fflush(f) == 0 && ok;
    ok = fsync(fd) == 0 && ok;
    if (fclose(f) != 0 || !ok) {
        unlink(tmp);
        return snprintf(why, size, "writing %s: %s", tmp, strerror(errno ? errno : EIO)), -1;
    }
    if (rename(tmp, path) < 0) {
        int e = errno;
        unlink(tmp);
        return snprintf(why, size, "renaming %s: %s", tmp, strerror(e)), -1;
    }
    return 0;
}

int tls_ca_init(const char *state_dir, char *path, size_t path_size, char *why, size_t why_size)
{
    int rc = 0;
    if (snprintf(path, path_size, "%s/egress-ca.pem", state_dir) >= (int)path_size)
        return snprintf(why, why_size, "state directory path too long"), -1;
    pthread_mutex_lock(&lock);
    if (!ca_cert) {
        rc = make_ca(why, why_size);
        /* Written once: a later config keeps the CA the sandbox trusts. */
        if (rc == 0 && (rc = write_pem(path, why, why_size)) < 0) {
            X509_free(ca_cert);
            EVP_PKEY_free(ca_key);
            ca_cert = NULL;
            ca_key = NULL;
        }
    }
    pthread_mutex_unlock(&lock);
    return rc;
}

static int make_leaf(const char *host, X509 **cert, EVP_PKEY **keyp, char *why, size_t size)
{
    char san[EGRESS_NAME_MAX + 8];
    snprintf(san, sizeof(san), "DNS:%s", host);
    EVP_PKEY *key = ec_key();
    if (!key)
        return fail(why, size, "making a leaf key");
    X509 *x = X509_new();
    X509_NAME *name = X509_NAME_new();
    X509V3_CTX ctx;
    if (!x || !name || !X509_set_version(x, 2) || random_serial(x) < 0)
        goto bad;
    /* A CN holds at most 64 characters; the SAN is what clients check. */
    if (strlen(host) <= 64 && !X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_UTF8,
                                                          (const unsigned char *)host, -1, -1, 0))
        goto bad;
    if (!X509_set_subject_name(x, name) ||
        !X509_set_issuer_name(x, X509_get_subject_name(ca_cert)) || set_times(x) < 0 ||
        !X509_set_pubkey(x, key))
        goto bad;
    X509V3_set_ctx(&ctx, ca_cert, x, NULL, NULL, 0);
    if (add_ext(x, &ctx, NID_basic_constraints, "critical,CA:FALSE") < 0 ||
        add_ext(x, &ctx, NID_key_usage, "critical,digitalSignature") < 0 ||
        add_ext(x, &ctx, NID_ext_key_usage, "serverAuth") < 0 ||
        add_ext(x, &ctx, NID_subject_alt_name, san) < 0 ||
        add_ext(x, &ctx, NID_subject_key_identifier, "hash") < 0 ||
        add_ext(x, &ctx, NID_authority_key_identifier, "keyid:always") < 0 ||
        !X509_sign(x, ca_key, EVP_sha256()))
        goto bad;
    X509_NAME_free(name);
    *cert = x;
    *keyp = key;
    return 0;
bad:
    X509_NAME_free(name);
    X509_free(x);
    EVP_PKEY_free(key);
    return fail(why, size, "making the leaf certificate");
}

int tls_leaf_get(const char *host, X509 **cert, EVP_PKEY **key, char *why, size_t why_size)
{
    int rc = 0;
    pthread_mutex_lock(&lock);
    if (!ca_cert) {
        pthread_mutex_unlock(&lock);
        return snprintf(why, why_size, "no CA yet (no config from the broker)"), -1;
    }
    struct leaf *hit = NULL, *oldest = &leaves[0];
    for (size_t i = 0; i < TLS_LEAF_CACHE; i++) {
        if (leaves[i].cert && strcmp(leaves[i].host, host) == 0) {
            hit = &leaves[i];
            break;
        }
        if (!leaves[i].cert || (oldest->cert && leaves[i].used < oldest->used))
            oldest = &leaves[i];
    }
    if (!hit) {
        X509 *c;
        EVP_PKEY *k;
        rc = make_leaf(host, &c, &k, why, why_size);
        if (rc == 0) {
            X509_free(oldest->cert);
            EVP_PKEY_free(oldest->key);
            snprintf(oldest->host, sizeof(oldest->host), "%s", host);
            oldest->cert = c;
            oldest->key = k;
            hit = oldest;
        }
    }
    if (hit) {
        hit->used = ++leaf_clock;
        X509_up_ref(hit->cert);
        EVP_PKEY_up_ref(hit->key);
        *cert = hit->cert;
        *key = hit->key;
    }
    pthread_mutex_unlock(&lock);
    return rc;
}
