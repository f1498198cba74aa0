# The app of the services benchmark (tests/bench/services_bench.py): the
# same program runs in a sandbox, behind its preview URL, and on the
# host's loopback as the baseline.  GET .../small answers 100 bytes, GET
# .../big 256 MiB (one 1 MiB buffer sent 256 times: no disk, no memory
# growth); any path prefix is ignored, so it answers the same under
# /p/TOKEN/.  One thread per connection, keep-alive as the client asks.
import socket
import sys
import threading

PORT = int(sys.argv[1]) if len(sys.argv) > 1 else 8000
SMALL = b"x" * 99 + b"\n"
CHUNK = bytes(range(256)) * 4096  # 1 MiB
BIG = 256 * len(CHUNK)


def serve(c):
    buf = b""
    try:
        while True:
            while b"\r\n\r\n" not in buf:
                d = c.recv(65536)
                if not d:
                    return
                buf += d
            head, _, buf = buf.partition(b"\r\n\r\n")
            line = head.split(b"\r\n", 1)[0].split()
            close = b"connection: close" in head.lower()
            conn = b"Connection: close\r\n" if close else b""
            if line[1].split(b"?")[0].endswith(b"/big"):
                c.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\n"
                          b"Content-Length: %d\r\n%s\r\n" % (BIG, conn))
                for _ in range(256):
                    c.sendall(CHUNK)
            else:
                c.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: %d\r\n%s\r\n%s"
                          % (len(SMALL), conn, SMALL))
            if close:
                return
    except OSError:
        pass
    finally:
        c.close()


ls = socket.socket()
ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
ls.bind(("127.0.0.1", PORT))
ls.listen(128)
print(f"listening on {ls.getsockname()[1]}", flush=True)
while True:
    conn, _ = ls.accept()
    conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    threading.Thread(target=serve, args=(conn,), daemon=True).start()
