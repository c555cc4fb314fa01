"""A loopback stand-in for the three GitHub REST endpoints ``conformance comment`` uses: list, create and update
an issue's comments (docs.github.com, REST API, "Issue comments"). It binds 127.0.0.1, answers at most
``max_requests`` requests, and stops by itself after ``max_seconds``."""

from __future__ import annotations

import json
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class FakeGitHub:
    """``comments``: pull-request number → list of {id, body}; ``calls``: (method, path) in order; ``deny``: answer
    every write with 403 (a fork's read-only token)."""

    def __init__(self, max_requests: int = 200, max_seconds: float = 600.0, deny: bool = False) -> None:
        self.comments: dict[int, list[dict[str, Any]]] = {}
        self.calls: list[tuple[str, str]] = []
        self.tokens: list[str] = []
        self.deny = deny
        self._left = max_requests
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def _answer(self, status: int, payload: Any) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _handle(self) -> None:
                fake._left -= 1
                if fake._left < 0:
                    self._answer(503, {"message": "request bound reached"})
                    return
                path = self.path.split("?", 1)[0]
                fake.calls.append((self.command, path))
                fake.tokens.append(self.headers.get("Authorization", ""))
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length) or b"null") if length else None
                listing = re.fullmatch(r"/repos/[^/]+/[^/]+/issues/(\d+)/comments", path)
                single = re.fullmatch(r"/repos/[^/]+/[^/]+/issues/comments/(\d+)", path)
                if self.command != "GET" and fake.deny:
                    self._answer(403, {"message": "Resource not accessible by integration"})
                elif listing and self.command == "GET":
                    page = int(dict(part.split("=") for part in self.path.split("?", 1)[1].split("&")).get("page", 1)) \
                        if "?" in self.path else 1
                    self._answer(200, fake.comments.get(int(listing[1]), [])[(page - 1) * 100:page * 100])
                elif listing and self.command == "POST":
                    comment = {"id": 1000 + sum(map(len, fake.comments.values())), "body": body["body"],
                               "user": {"login": "github-actions[bot]", "type": "Bot"}}
                    fake.comments.setdefault(int(listing[1]), []).append(comment)
                    self._answer(201, comment)
                elif single and self.command == "PATCH":
                    for comments in fake.comments.values():
                        for comment in comments:
                            if comment["id"] == int(single[1]):
                                comment["body"] = body["body"]
                                self._answer(200, comment)
                                return
                    self._answer(404, {"message": "Not Found"})
                else:
                    self._answer(404, {"message": "Not Found"})

            do_GET = do_POST = do_PATCH = _handle

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self._timer = threading.Timer(max_seconds, self.stop)
        self._timer.daemon = True

    def __enter__(self) -> FakeGitHub:
        self._thread.start()
        self._timer.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def stop(self) -> None:
        self._timer.cancel()
        self.server.shutdown()
        self.server.server_close()
