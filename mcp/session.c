/* A session's records made ready and waited on (session.h). */
#include "session.h"

#include <string.h>
#include <time.h>

void mcp_session_init(struct mcp_session *s, struct mcp_server *cfg)
{
    memset(s, 0, sizeof(*s));
    s->cfg = cfg;
    s->log_level = 3; /* warning */
    for (size_t i = 0; i < MCP_MAX_CALLS; i++)
        s->calls[i].cancel.fd = -1;
    pthread_mutex_init(&s->lock, NULL);
    pthread_cond_init(&s->idle, NULL);
    pthread_cond_init(&s->released, NULL);
    pthread_cond_init(&s->answered, NULL);
}

void mcp_session_drain(struct mcp_session *s, unsigned grace_ms)
{
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += grace_ms / 1000;
    until.tv_nsec += (long)(grace_ms % 1000) * 1000000;
    if (until.tv_nsec >= 1000000000) {
        until.tv_sec++;
        until.tv_nsec -= 1000000000;
    }
    pthread_mutex_lock(&s->lock);
    while (s->n_running > 0 && pthread_cond_timedwait(&s->idle, &s->lock, &until) == 0)
        ;
    pthread_mutex_unlock(&s->lock);
}
