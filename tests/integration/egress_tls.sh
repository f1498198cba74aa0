#!/usr/bin/env bash
# nsbox-tls, the egress broker's TLS terminator (runtime/egress/tls/),
# driven directly as the broker drives it: tests/egress/tls_helper.py (a
# SOCK_SEQPACKET socketpair for fd 3, real TCP connections handed over by
# SCM_RIGHTS, a real TLS upstream with a CA made by openssl, Python's ssl
# as the sandbox's client), as root and as the rootless user nsboxtest.
# No sandbox is started.
SUITE=egress_tls
. "$(dirname "$0")/../lib.sh"

TLS=${NSBOX_TLS:-$(dirname "$NSBOX")/nsbox-tls}
N=26 # the driver's tests, each mode
if [ ! -x "$TLS" ]; then
	for m in root rootless; do
		for i in $(seq $N); do fail "$m/setup_$i" "no $TLS (make builds it)"; done
	done
	finish
fi

# run_mode MODE CMD...: the driver's lines; a driver that died early fails
# the tests it never reached.
run_mode() {
	local mode=$1 out n
	shift
	out=$("$@" --bin "$TLS" --suite "$SUITE" --mode "$mode" 2>&1)
	printf '%s\n' "$out" | grep -E "^(PASS|FAIL): $SUITE/$mode/"
	_failures=$((_failures + $(printf '%s\n' "$out" | grep -c "^FAIL: ")))
	n=$(printf '%s\n' "$out" | grep -cE "^(PASS|FAIL): $SUITE/$mode/")
	if [ "$n" != "$N" ]; then
		fail "$mode/driver" "$n of $N tests ran: $(printf '%s' "$out" | grep -vE '^(PASS|FAIL)' | tail -5 | tr '\n' ' ')"
	else
		pass "$mode/driver"
	fi
}

run_mode root timeout 120 python3 "$ROOT/tests/egress/tls_helper.py"

# Rootless: the binary and the driver copied where nsboxtest reads them.
cp "$TLS" "$T/nsbox-tls"
cp "$ROOT/tests/egress/tls_helper.py" "$T/tls_helper.py"
chmod 755 "$T/nsbox-tls" "$T/tls_helper.py"
TLS=$T/nsbox-tls
run_mode rootless timeout 120 runuser -u nsboxtest -- env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin \
	HOME=/home/nsboxtest python3 "$T/tls_helper.py"

finish
