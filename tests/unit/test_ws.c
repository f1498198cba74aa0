/* Unit tests: the WebSocket codec of terminals (mcp/preview/ws.c): the
 * RFC 6455 handshake example, a masked frame, fragmentation, the close
 * and refusal codes, the resize message. */
#include <string.h>

#include "../../mcp/preview/ws.h"
#include "check.h"
#include "suites.h"

static void handshake_key(void)
{
    char out[29];
    /* RFC 6455 1.3's example. */
    CHECK(ws_accept_key("dGhlIHNhbXBsZSBub25jZQ==", out) == 0);
    CHECK(strcmp(out, "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=") == 0);
    CHECK(ws_accept_key("dGhlIHNhbXBsZSBub25jZQ=", out) == -1);
    CHECK(ws_accept_key("not base64 at all!!!!!!=", out) == -1);
    CHECK(ws_accept_key(NULL, out) == -1);
}

static void frames(void)
{
    /* RFC 6455 5.7: a masked "Hello". */
    uint8_t hello[] = {0x81, 0x85, 0x37, 0xfa, 0x21, 0x3d, 0x7f, 0x9f, 0x4d, 0x51, 0x58};
    struct ws_frame f;
    uint16_t code;
    struct ws_seq seq = {0};
    CHECK(ws_frame_parse(hello, 5, 1024, &f, &code) == 0); /* partial */
    CHECK(ws_frame_parse(hello, sizeof(hello), 1024, &f, &code) == (long)sizeof(hello));
    CHECK(f.opcode == WS_TEXT && f.fin && f.len == 5 && memcmp(f.payload, "Hello", 5) == 0);
    CHECK(ws_sequence(&seq, &f, 1024, &code) == 0 && f.last && f.message == WS_TEXT);
    /* Unmasked: 1002.  Too big: 1009. */
    uint8_t unmasked[] = {0x82, 0x01, 'x'};
    CHECK(ws_frame_parse(unmasked, sizeof(unmasked), 1024, &f, &code) == -1 &&
          code == WS_CLOSE_PROTOCOL);
    uint8_t big[] = {0x82, 0xFE, 0x08, 0x00, 0, 0, 0, 0};
    CHECK(ws_frame_parse(big, sizeof(big), 1024, &f, &code) == -1 && code == WS_CLOSE_TOO_BIG);
    /* Reserved bits, unknown opcode, a fragmented ping: 1002. */
    uint8_t rsv[] = {0xC1, 0x80, 0, 0, 0, 0};
    CHECK(ws_frame_parse(rsv, sizeof(rsv), 1024, &f, &code) == -1 && code == WS_CLOSE_PROTOCOL);
    uint8_t op3[] = {0x83, 0x80, 0, 0, 0, 0};
    CHECK(ws_frame_parse(op3, sizeof(op3), 1024, &f, &code) == -1);
    uint8_t ping[] = {0x09, 0x80, 0, 0, 0, 0};
    CHECK(ws_frame_parse(ping, sizeof(ping), 1024, &f, &code) == -1);
    /* Fragments: text (no FIN), a ping between, the continuation. */
    uint8_t a[] = {0x01, 0x81, 0, 0, 0, 0, 'a'}, p[] = {0x89, 0x80, 0, 0, 0, 0},
            b[] = {0x80, 0x81, 0, 0, 0, 0, 'b'};
    seq = (struct ws_seq){0};
    CHECK(ws_frame_parse(a, sizeof(a), 1024, &f, &code) > 0 &&
          ws_sequence(&seq, &f, 1024, &code) == 0);
    CHECK(!f.last && f.message == WS_TEXT);
    CHECK(ws_frame_parse(p, sizeof(p), 1024, &f, &code) > 0 &&
          ws_sequence(&seq, &f, 1024, &code) == 0);
    CHECK(f.message == WS_PING);
    CHECK(ws_frame_parse(b, sizeof(b), 1024, &f, &code) > 0 &&
          ws_sequence(&seq, &f, 1024, &code) == 0);
    CHECK(f.last && f.message == WS_TEXT && f.len == 1 && f.payload[0] == 'b');
    /* A continuation with no message, a new message inside one. */
    uint8_t b2[] = {0x80, 0x81, 0, 0, 0, 0, 'b'};
    CHECK(ws_frame_parse(b2, sizeof(b2), 1024, &f, &code) > 0);
    CHECK(ws_sequence(&seq, &f, 1024, &code) == -1 && code == WS_CLOSE_PROTOCOL);
    /* The message's total over the limit: 1009. */
    uint8_t c1[] = {0x02, 0x82, 0, 0, 0, 0, 'x', 'y'}, c2[] = {0x80, 0x82, 0, 0, 0, 0, 'x', 'y'};
    seq = (struct ws_seq){0};
    CHECK(ws_frame_parse(c1, sizeof(c1), 3, &f, &code) > 0 && ws_sequence(&seq, &f, 3, &code) == 0);
    CHECK(ws_frame_parse(c2, sizeof(c2), 3, &f, &code) > 0);
    CHECK(ws_sequence(&seq, &f, 3, &code) == -1 && code == WS_CLOSE_TOO_BIG);
    /* Our own headers: the shortest length form. */
    uint8_t h[WS_HEADER_MAX];
    CHECK(ws_header(h, WS_BINARY, 125) == 2 && h[0] == 0x82 && h[1] == 125);
    CHECK(ws_header(h, WS_BINARY, 126) == 4 && h[1] == 126 && h[2] == 0 && h[3] == 126);
    CHECK(ws_header(h, WS_BINARY, 70000) == 10 && h[1] == 127);
}

static void close_payloads(void)
{
    uint16_t c;
    CHECK(ws_close_payload((const uint8_t *)"", 0, &c) == 0 && c == 1005);
    CHECK(ws_close_payload((const uint8_t *)"\x03\xe8", 2, &c) == 0 && c == 1000);
    CHECK(ws_close_payload((const uint8_t *)"\x03", 1, &c) == -1);
    CHECK(ws_close_payload((const uint8_t *)"\x03\xed", 2, &c) == -1);     /* 1005 */
    CHECK(ws_close_payload((const uint8_t *)"\x03\xe8\xff", 3, &c) == -1); /* not UTF-8 */
}

static void resize(void)
{
    unsigned c = 0, r = 0;
    const char *ok = "{\"type\":\"resize\",\"cols\":120,\"rows\":40}";
    CHECK(ws_resize_parse(ok, strlen(ok), &c, &r) && c == 120 && r == 40);
    const char *order = " {\"rows\":2,\"type\":\"resize\",\"cols\":3}";
    CHECK(ws_resize_parse(order, strlen(order), &c, &r) && c == 3 && r == 2);
    const char *no[] = {"ls\r",
                        "{\"type\":\"resize\",\"cols\":120}",
                        "{\"type\":\"resize\",\"cols\":120,\"rows\":40,\"x\":1}",
                        "{\"type\":\"resize\",\"cols\":0,\"rows\":40}",
                        "{\"type\":\"resize\",\"cols\":70000,\"rows\":40}",
                        "{\"type\":\"resize\",\"cols\":1.5,\"rows\":40}",
                        "{\"type\":\"Resize\",\"cols\":1,\"rows\":40}",
                        "{\"type\":\"resize\",\"cols\":1,\"rows\":40} x",
                        "{\"type\":\"resize\",\"type\":\"resize\",\"cols\":1,\"rows\":4}"};
    for (size_t i = 0; i < sizeof(no) / sizeof(no[0]); i++)
        CHECK(!ws_resize_parse(no[i], strlen(no[i]), &c, &r));
}

void suite_ws(void)
{
    RUN_TEST(handshake_key);
    RUN_TEST(frames);
    RUN_TEST(close_payloads);
    RUN_TEST(resize);
}
