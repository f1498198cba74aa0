/* TLS sessions to the real hosts, kept for resumption (tls.h): a new
 * connection to a host nsbox-tls spoke to before resumes its session and
 * skips the full handshake (a new connection costs a handshake each side).
 *
 * Contract: keyed by "host:port", the name the session was verified for
 * (a resumed session keeps its verified certificate; a session is never
 * offered for another name); at most TLS_SESS_MAX, the least recently
 * stored dropped; thread-safe. */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "tls.h"

#define TLS_SESS_MAX 64

struct entry {
    char key[EGRESS_NAME_MAX + 8];
    SSL_SESSION *sess;
    uint64_t stored;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct entry cache[TLS_SESS_MAX];
static uint64_t clock_;

static void key_of(char *key, size_t size, const char *host, uint16_t port)
{
    snprintf(key, size, "%s:%u", host, port);
}

void tls_sess_store(const char *host, uint16_t port, SSL_SESSION *s)
{
    char key[EGRESS_NAME_MAX + 8];
    key_of(key, sizeof(key), host, port);
    pthread_mutex_lock(&lock);
    struct entry *e = NULL, *oldest = &cache[0];
    for (size_t i = 0; i < TLS_SESS_MAX && !e; i++) {
        if (cache[i].sess && strcmp(cache[i].key, key) == 0)
            e = &cache[i];
        else if (!cache[i].sess || (oldest->sess && cache[i].stored < oldest->stored))
            oldest = &cache[i];
    }
    if (!e)
        e = oldest;
    SSL_SESSION_free(e->sess);
    snprintf(e->key, sizeof(e->key), "%s", key);
    e->sess = s; /* the caller's reference, now ours */
    e->stored = ++clock_;
    pthread_mutex_unlock(&lock);
}

SSL_SESSION *tls_sess_get(const char *host, uint16_t port)
{
    char key[EGRESS_NAME_MAX + 8];
    SSL_SESSION *s = NULL;
    key_of(key, sizeof(key), host, port);
    pthread_mutex_lock(&lock);
    for (size_t i = 0; i < TLS_SESS_MAX; i++)
        if (cache[i].sess && strcmp(cache[i].key, key) == 0) {
            if (SSL_SESSION_is_resumable(cache[i].sess) && SSL_SESSION_up_ref(cache[i].sess))
                s = cache[i].sess;
            break;
        }
    pthread_mutex_unlock(&lock);
    return s;
}
