/* RFC 6455 WebSocket framing, the server's side, pure: no I/O, no clock,
 * no allocation.  The terminal relay (terminal.c) feeds it the bytes a
 * client sent and writes the frames it makes; tests/fuzz/fuzz_ws.c drives
 * every parser here with a stranger's bytes.
 *
 * Rules kept (a violation is a close code for the caller to send, then
 * hang up): a client frame must be masked (1002); reserved bits must be
 * zero, no extension being agreed (1002); opcodes other than 0, 1, 2, 8,
 * 9, 10 are refused (1002); a control frame is final and carries at most
 * 125 bytes (1002); a continuation comes only inside a fragmented message
 * and a new data frame never does (1002); a frame's payload, and a text
 * message in total, are at most the caller's max (1009); a text message
 * must be UTF-8 (1007, checked by the caller on the whole message, since
 * a fragment may end inside a character); a close frame's payload is
 * empty or a valid code and UTF-8 reason (1002). */
#ifndef NSBOX_MCP_PREVIEW_WS_H
#define NSBOX_MCP_PREVIEW_WS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum ws_opcode {
    WS_CONT = 0x0,
    WS_TEXT = 0x1,
    WS_BINARY = 0x2,
    WS_CLOSE = 0x8,
    WS_PING = 0x9,
    WS_PONG = 0xA,
};

enum {
    WS_CLOSE_NORMAL = 1000,
    WS_CLOSE_GOING_AWAY = 1001,
    WS_CLOSE_PROTOCOL = 1002,
    WS_CLOSE_BAD_DATA = 1007,
    WS_CLOSE_TOO_BIG = 1009,
};

#define WS_HEADER_MAX 14   /* 2 + 8 (length) + 4 (mask) */
#define WS_CONTROL_MAX 125 /* a control frame's payload */

/* One frame as parsed: its payload unmasked in place in the caller's
 * buffer. */
struct ws_frame {
    bool fin;
    uint8_t opcode; /* as sent (WS_CONT for a continuation) */
    uint8_t *payload;
    size_t len;
    /* Set by ws_sequence: the message this frame belongs to (WS_TEXT or
     * WS_BINARY; the opcode itself for a control frame) and whether it
     * ends that message. */
    uint8_t message;
    bool last;
};

/* Where a connection is between frames: inside a fragmented message or
 * not, and how many bytes that message has so far.  Zero it to start. */
struct ws_seq {
    bool in_message;
    uint8_t message;
    uint64_t so_far;
};

/* Parses the frame at buf[0..len) (from a client: masked), with a payload
 * of at most max bytes, and unmasks its payload in place.  Returns the
 * frame's size in bytes (> 0) with *f set, 0 when buf holds only part of
 * it, or -1 with *code set to the close code to send. */
long ws_frame_parse(uint8_t *buf, size_t len, size_t max, struct ws_frame *f, uint16_t *code);

/* Checks f against the sequence so far (fragmentation, the message's
 * total against max) and moves it on; sets f->message and f->last.
 * Returns 0, or -1 with *code set. */
int ws_sequence(struct ws_seq *s, struct ws_frame *f, size_t max, uint16_t *code);

/* A close frame's payload (f->payload, f->len) read: *code is its status
 * (1005, "no status", when empty).  Returns 0, or -1 when the payload is
 * malformed (one byte, a code no endpoint may send, a reason that is not
 * UTF-8). */
int ws_close_payload(const uint8_t *p, size_t len, uint16_t *code);

/* The header of an unmasked server frame (FIN set) of opcode carrying len
 * bytes into out; returns its size (2, 4 or 10). */
size_t ws_header(uint8_t out[WS_HEADER_MAX], uint8_t opcode, uint64_t len);

/* A close frame with code and no reason into out (4 bytes); returns 4. */
size_t ws_close_frame(uint8_t out[4], uint16_t code);

/* True when the text message s[0..n) is exactly a resize: a JSON object
 * whose only members are "type": "resize", "cols": N and "rows": M
 * (integers 1..65535), in any order; *cols and *rows set.  Anything else
 * (other members, other types, invalid JSON) is false: the caller sends
 * it to the terminal as input. */
bool ws_resize_parse(const char *s, size_t n, unsigned *cols, unsigned *rows);

/* The Sec-WebSocket-Accept of a client's Sec-WebSocket-Key (base64 of 16
 * bytes, checked) into out (28 characters and a NUL).  Returns 0, or -1
 * when key is not such a value. */
int ws_accept_key(const char *key, char out[29]);

#endif
