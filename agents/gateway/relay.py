"""A tiny TCP→Unix-socket relay that runs INSIDE a sandbox (stdlib only, Python 3.8+).

The sandbox has no IP network, only its own loopback. The run's gateway socket is
bind-mounted at ``/run/integritylab/gateway.sock``; this relay listens on
``127.0.0.1:PORT`` and pipes bytes both ways to that socket, so a CLI agent's
base URL can be ``http://127.0.0.1:PORT/v1``::

    python3 relay.py --listen 127.0.0.1:8765 --socket /run/integritylab/gateway.sock [--background]

``--background`` binds and listens first, then detaches (fork, setsid, stdio to
/dev/null) and the parent exits 0: when the command returns, the port accepts
connections. If the port is already taken by a working relay (e.g. one started by
an earlier ``exec`` of a long-lived docker container), ``--background`` exits 0 too.

The orchestrator does not need a file in the sandbox: :func:`relay_source` is this
module's text, for ``python3 -c SOURCE --listen ...``, and :func:`with_relay` wraps
an argv so one ``exec`` starts the relay and then runs the command (the bwrap
backend builds fresh namespaces per exec, so relay and client must share one).
"""

import argparse
import os
import socket
import sys
import threading

SANDBOX_GATEWAY_SOCKET = "/run/integritylab/gateway.sock"
DEFAULT_PORT = 8765
_CHUNK = 65536


def _pipe(src, dst):
    """Copy src → dst until EOF, then half-close dst so the other direction can finish."""
    try:
        while True:
            data = src.recv(_CHUNK)
            if not data:
                break
            dst.sendall(data)
    except OSError:
        pass
    finally:
        try:
            dst.shutdown(socket.SHUT_WR)
        except OSError:
            pass


def _refuse(client, message):
    """Answer 502 without a gateway: read the request first so the client is not reset mid-send."""
    try:
        client.settimeout(5)
        seen = b""
        while b"\r\n\r\n" not in seen and len(seen) < _CHUNK:
            data = client.recv(_CHUNK)
            if not data:
                break
            seen += data
        body = message.encode()
        client.sendall(b"HTTP/1.1 502 Bad Gateway\r\nContent-Type: text/plain\r\nConnection: close\r\n"
                       b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body)
        client.shutdown(socket.SHUT_WR)
        while client.recv(_CHUNK):  # drain the rest of the request until the client closes
            pass
    except OSError:
        pass
    finally:
        client.close()


def _serve_one(client, socket_path):
    upstream = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        upstream.connect(socket_path)
    except OSError as exc:
        upstream.close()
        _refuse(client, f"gateway socket unavailable: {exc}\n")
        return
    back = threading.Thread(target=_pipe, args=(upstream, client), daemon=True)
    back.start()
    _pipe(client, upstream)
    back.join()
    client.close()
    upstream.close()


def serve(listener, socket_path):
    while True:
        try:
            client, _addr = listener.accept()
        except InterruptedError:
            continue
        threading.Thread(target=_serve_one, args=(client, socket_path), daemon=True).start()


def _parse_listen(value):
    host, _, port = value.rpartition(":")
    return (host or "127.0.0.1"), int(port)


def _already_served(addr):
    try:
        with socket.create_connection(addr, timeout=2):
            return True
    except OSError:
        return False


def _detach():
    if os.fork() > 0:
        os._exit(0)
    os.setsid()
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(devnull, fd)
    if devnull > 2:
        os.close(devnull)


def main(argv=None):
    parser = argparse.ArgumentParser(description="relay TCP on loopback to the run's gateway Unix socket")
    parser.add_argument("--listen", default=f"127.0.0.1:{DEFAULT_PORT}", help="host:port (default %(default)s)")
    parser.add_argument("--socket", default=SANDBOX_GATEWAY_SOCKET, help="gateway socket (default %(default)s)")
    parser.add_argument("--background", action="store_true", help="detach once listening")
    args = parser.parse_args(argv)
    addr = _parse_listen(args.listen)
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        listener.bind(addr)
    except OSError as exc:
        listener.close()
        if args.background and _already_served(addr):
            return 0
        sys.stderr.write(f"relay: cannot listen on {addr[0]}:{addr[1]}: {exc}\n")
        return 2
    listener.listen(64)
    if args.background:
        sys.stdout.flush()
        sys.stderr.flush()
        _detach()
    try:
        serve(listener, args.socket)
    except KeyboardInterrupt:
        pass
    return 0


def relay_source():
    """This module's source, to run in a sandbox with ``python3 -c`` or to write to a file there."""
    with open(os.path.abspath(__file__), encoding="utf-8") as fh:
        return fh.read()


def relay_argv(port=DEFAULT_PORT, socket_path=SANDBOX_GATEWAY_SOCKET, python="python3", background=True):
    """argv that starts the relay in a sandbox from its source (no file needed)."""
    argv = [python, "-c", relay_source(), "--listen", f"127.0.0.1:{port}", "--socket", socket_path]
    return argv + (["--background"] if background else [])


def with_relay(cmd, port=DEFAULT_PORT, socket_path=SANDBOX_GATEWAY_SOCKET, python="python3"):
    """Wrap ``cmd`` so one exec starts the relay in the background, then runs ``cmd`` (exit 125 if it cannot)."""
    script = (f'src=$1; shift; {python} -c "$src" --listen 127.0.0.1:{int(port)} --socket "$1" --background'
              ' || exit 125; shift; exec "$@"')
    return ["/bin/sh", "-c", script, "il-relay", relay_source(), socket_path] + list(cmd)


if __name__ == "__main__":
    sys.exit(main())
