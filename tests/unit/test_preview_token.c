/* Unit tests for mcp/preview/token.c: the tokens of preview and terminal
 * URLs. */
#include "check.h"
#include "suites.h"

#include <string.h>

#include "../../mcp/preview/token.h"

static const uint8_t key[PREVIEW_KEY_LEN] = "0123456789abcdef0123456789abcdef";
static const uint8_t other[PREVIEW_KEY_LEN] = "0123456789abcdef0123456789abcdeF";

static void round_trip(void)
{
    char t[PREVIEW_TOKEN_LEN + 1];
    uint64_t id = 0;
    uint32_t exp = 0;
    const char *why = NULL;

    CHECK(preview_token_make(key, PREVIEW_PORT, 0x0123456789abcdefull, 2000000000u, t) == 0);
    CHECK(strlen(t) == PREVIEW_TOKEN_LEN);
    CHECK(strspn(t, "abcdefghijklmnopqrstuvwxyz234567") == PREVIEW_TOKEN_LEN);
    CHECK(preview_token_check(key, t, strlen(t), PREVIEW_PORT, 2000000000u, &id, &exp, &why) == 0);
    CHECK(id == 0x0123456789abcdefull && exp == 2000000000u);
    CHECK(preview_token_make(key, 7, 1, 1, t) == -1);
}

static void refusals(void)
{
    char t[PREVIEW_TOKEN_LEN + 1], u[PREVIEW_TOKEN_LEN + 2];
    const char *why = NULL;

    preview_token_make(key, PREVIEW_TERMINAL, 42, 1000, t);
    CHECK(preview_token_check(key, t, strlen(t), PREVIEW_TERMINAL, 1000, NULL, NULL, &why) == 0);
    CHECK(preview_token_check(key, t, strlen(t), PREVIEW_TERMINAL, 1001, NULL, NULL, &why) == -1);
    CHECK(strcmp(why, "expired") == 0);
    CHECK(preview_token_check(key, t, strlen(t), PREVIEW_PORT, 10, NULL, NULL, &why) == -1);
    CHECK(strcmp(why, "wrong kind") == 0);
    CHECK(preview_token_check(other, t, strlen(t), PREVIEW_TERMINAL, 10, NULL, NULL, &why) == -1);
    CHECK(strcmp(why, "bad signature") == 0);
    /* Every single-character change is refused, whichever character. */
    for (size_t i = 0; i < PREVIEW_TOKEN_LEN; i++) {
        static const char alt[] = "abcdefghijklmnopqrstuvwxyz234567A=0 ";
        for (const char *c = alt; *c; c++) {
            if (*c == t[i])
                continue;
            memcpy(u, t, sizeof(t));
            u[i] = *c;
            CHECK(preview_token_check(key, u, strlen(u), PREVIEW_TERMINAL, 10, NULL, NULL, NULL) ==
                  -1);
        }
    }
    /* Length: one more or one fewer digit. */
    memcpy(u, t, sizeof(t));
    strcat(u, "a");
    CHECK(preview_token_check(key, u, strlen(u), PREVIEW_TERMINAL, 10, NULL, NULL, &why) == -1);
    CHECK(strcmp(why, "malformed") == 0);
    CHECK(preview_token_check(key, t, PREVIEW_TOKEN_LEN - 1, PREVIEW_TERMINAL, 10, NULL, NULL,
                              &why) == -1);
    CHECK(preview_token_check(key, NULL, 0, PREVIEW_TERMINAL, 10, NULL, NULL, &why) == -1);
}

void suite_preview_token(void)
{
    RUN_TEST(round_trip);
    RUN_TEST(refusals);
}
