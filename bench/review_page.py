"""Opening the review page of a long run (not a test): paged against every event rendered at once.

Issue #15 asks that a 5,000-event run opens in well under a second. This seeds such a run (model call,
tool call, output, repeated) in a fresh embedded database, signs an annotator in, and times, in one
process: the review page as served (the first page of events, the rest loaded on scroll), one further
page fragment, a search of the whole run, and — for comparison — one fragment holding every event, which
is what the page cost before paging. Median of ``--repeat`` requests each.

    python bench/review_page.py [--events 5000] [--repeat 7]
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--events", type=int, default=5000)
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    folder = tempfile.mkdtemp(prefix="review-bench-")
    os.environ["INTEGRITYLAB_DATA_DIR"] = folder
    os.environ.pop("INTEGRITYLAB_DATABASE_URL", None)

    from fastapi.testclient import TestClient

    from orchestrator import annotation_store as queue
    from orchestrator.api.app import create_app
    from orchestrator.artifacts import ArtifactStore
    from orchestrator.cli.service_cmd import migrate_database
    from orchestrator.db.session import session_factory
    from orchestrator.settings import Settings
    from tests.annotation_support import PASSWORD, make_users, seed_long_run

    settings = Settings.from_env()
    migrate_database(settings.effective_database_url)
    sessions = session_factory(settings.effective_database_url)
    run_id = seed_long_run(sessions, ArtifactStore(settings.artifact_dir), n_events=args.events,
                           needle_at=args.events - 200)
    with sessions() as session:
        queue.route_for_review(session, run_id)
        session.commit()
    make_users(sessions, ["bench"])
    client = TestClient(create_app(settings), base_url="http://127.0.0.1")
    found = re.search(r'name="csrf_token" value="([^"]+)"', client.get("/login").text)
    assert found is not None, "the login page carries no CSRF token"
    token = found.group(1)
    client.post("/login", data={"name": "bench", "password": PASSWORD, "csrf_token": token})
    url = client.get("/annotate", follow_redirects=False).headers["location"]

    def timed(path: str, **params: object) -> tuple[float, int]:
        times, size = [], 0
        for _ in range(args.repeat):
            start = time.perf_counter()
            answer = client.get(path, params=params)
            times.append(time.perf_counter() - start)
            assert answer.status_code == 200, (path, answer.status_code)
            size = len(answer.content)
        return statistics.median(times), size

    rows = [("review page (first page of events)", *timed(url)),
            ("next page fragment", *timed(f"{url}/events", after=199)),
            ("search of the whole run", *timed(f"{url}/events", find="zebra-marker")),
            (f"all {args.events} events at once (before paging)", *timed(f"{url}/events", after=-1,
                                                                         until=args.events))]
    print(f"{'request':<44} {'median ms':>10} {'KB':>8}")
    for name, seconds, size in rows:
        print(f"{name:<44} {seconds * 1000:>10.1f} {size / 1024:>8.0f}")
    page, everything = rows[0][1], rows[3][1]
    print(f"summary: a {args.events}-event run opens in {page * 1000:.0f} ms paged against "
          f"{everything * 1000:.0f} ms rendered whole ({everything / page:.1f}x)")


if __name__ == "__main__":
    main()
