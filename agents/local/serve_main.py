"""Child-process entry: serve one GGUF model with llama.cpp (the ``xllamacpp`` wheel) on a loopback port.

Run by :mod:`agents.local.server`, never by hand. It prints ``READY <url>`` once
the model is loaded and the port is bound, and exits when its parent does, so
a server never outlives the integritylab process that started it.
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
import time

READY = "READY"


def _exit_with_parent(parent: int) -> None:
    while True:
        if os.getppid() != parent:
            os._exit(0)
        time.sleep(1.0)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m agents.local.serve_main")
    parser.add_argument("model")
    parser.add_argument("--template", required=True, help="Jinja chat template file")
    parser.add_argument("--ctx", type=int, default=8192)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--parent", type=int, default=os.getppid())
    args = parser.parse_args(argv)
    threading.Thread(target=_exit_with_parent, args=(args.parent,), daemon=True).start()
    try:
        import xllamacpp  # type: ignore[import-untyped]
    except ImportError:
        print("the llama.cpp server package is missing: pip install 'integritylab[local]' (xllamacpp)",
              file=sys.stderr, flush=True)
        return 3
    params = xllamacpp.CommonParams()
    params.model.path = args.model
    params.n_ctx = args.ctx
    params.cpuparams.n_threads = args.threads
    params.cpuparams_batch.n_threads = args.threads
    params.hostnames = ["127.0.0.1"]
    params.port = 0  # the kernel picks a free port; the server reports it
    params.use_jinja = True
    with open(args.template, encoding="utf-8") as fh:
        params.chat_template = fh.read()
    server = xllamacpp.Server(params)
    print(f"{READY} {server.listening_address}", flush=True)
    while True:
        time.sleep(3600)


if __name__ == "__main__":
    sys.exit(main())
