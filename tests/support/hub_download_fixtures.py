"""A local fake of the Hugging Face Hub's *download* side (the upload side is in ``publish_fixtures``).

It serves read-only repositories (datasets and models), each at one commit, over the HTTP endpoints that
``huggingface_hub`` 2.x and ``datasets`` 5.x call when they load from the Hub:

- ``GET /api/{datasets|models}/{repo}/revision/{rev}`` and ``GET /api/{datasets|models}/{repo}``: repo info
  (``sha``, ``siblings``, ``cardData``);
- ``GET /api/{datasets|models}/{repo}/tree/{rev}[/{path}]`` (``recursive``): listings for ``HfFileSystem`` globs;
- ``POST /api/{datasets|models}/{repo}/paths-info/{rev}``: metadata of given paths;
- ``HEAD|GET /[datasets/]{repo}/resolve/{rev}/{path}``: file metadata (``X-Repo-Commit``, ``ETag``) and bytes,
  with ``Range`` support.

A revision is the repo's commit sha, or ``main`` (which resolves to it); any other revision is a 404 with the
Hub's ``RevisionNotFound`` error code, so a loader that ignores the pinned revision fails. The server listens on
127.0.0.1 only, answers at most ``max_requests`` requests and shuts itself down after ``lifetime_s`` seconds.
Every request is recorded (method, path) so tests can show which endpoints were used.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, unquote, urlparse

API = re.compile(r"/api/(?P<kind>datasets|models)/(?P<repo>[^/]+/[^/]+)(?:/(?P<op>revision|tree|paths-info)"
                 r"(?:/(?P<rest>.*))?)?")
RESOLVE = re.compile(r"/(?P<prefix>datasets/)?(?P<repo>[^/]+/[^/]+)/resolve/(?P<rev>[^/]+)/(?P<path>.+)")


@dataclass
class HubRepo:
    """One repository at one commit: ``files`` maps repo paths to bytes."""

    repo_id: str
    kind: str  # "dataset" | "model"
    sha: str
    files: dict[str, bytes]
    card_data: dict = field(default_factory=dict)

    def resolve(self, revision: str) -> bool:
        return unquote(revision) in {self.sha, "main"}

    def entry(self, path: str) -> dict:
        """The tree / paths-info entry of a file or folder."""
        if path in self.files:
            content = self.files[path]
            return {"type": "file", "path": path, "size": len(content),
                    "oid": hashlib.sha1(b"blob %d\0" % len(content) + content).hexdigest()}
        return {"type": "directory", "path": path, "oid": hashlib.sha1(path.encode()).hexdigest()}

    def folders(self) -> set[str]:
        return {"/".join(p.split("/")[:i]) for p in self.files for i in range(1, p.count("/") + 1)}

    def listing(self, folder: str, recursive: bool) -> list[dict] | None:
        folder = folder.strip("/")
        if folder and folder not in self.folders():
            return None
        prefix = f"{folder}/" if folder else ""
        paths = sorted(p for p in set(self.files) | self.folders() if p.startswith(prefix) and p != folder)
        if not recursive:
            paths = [p for p in paths if "/" not in p[len(prefix):]]
        return [self.entry(p) for p in paths]

    def info(self) -> dict:
        return {"id": self.repo_id, "_id": hashlib.sha1(self.repo_id.encode()).hexdigest()[:24], "sha": self.sha,
                "private": False, "gated": False, "disabled": False, "downloads": 0, "likes": 0, "tags": [],
                "cardData": self.card_data, "lastModified": "2024-01-01T00:00:00.000Z",
                "siblings": [{"rfilename": p} for p in sorted(self.files)]}


class FakeHubDownloads:
    """The server and its repositories (use as a context manager; ``url`` goes into ``HF_ENDPOINT``)."""

    def __init__(self, repos: list[HubRepo], max_requests: int = 5000, lifetime_s: float = 600.0) -> None:
        self.repos = {(r.kind, r.repo_id): r for r in repos}
        self.requests: list[tuple[str, str]] = []
        self.refused: list[tuple[str, str, int]] = []  # (method, path, status) of every non-2xx answer
        self.max_requests = max_requests
        self.lock = threading.Lock()
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler_class())
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05},
                                       daemon=True)
        self.timer = threading.Timer(lifetime_s, self.stop)
        self.timer.daemon = True
        self._stopped = False

    def __enter__(self) -> FakeHubDownloads:
        self.thread.start()
        self.timer.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def stop(self) -> None:
        with self.lock:
            if self._stopped:
                return
            self._stopped = True
        self.timer.cancel()
        self.server.shutdown()
        self.server.server_close()

    # --- request handling ---
    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        hub = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:  # quiet
                pass

            def _send(self, status: int, body: bytes, headers: dict[str, str], head: bool = False) -> None:
                self.send_response(status)
                for key, value in headers.items():
                    self.send_header(key, value)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                if not head:
                    self.wfile.write(body)

            def _handle(self, method: str) -> None:
                url = urlparse(self.path)
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                with hub.lock:
                    hub.requests.append((method, url.path))
                    over = len(hub.requests) > hub.max_requests
                if over:
                    status, payload, headers = 429, b'{"error": "fake Hub request budget spent"}', {}
                else:
                    status, payload, headers = hub.route(method, unquote(url.path), parse_qs(url.query), body,
                                                         self.headers.get("Range"))
                if status >= 300:
                    with hub.lock:
                        hub.refused.append((method, url.path, status))
                self._send(status, payload, headers, head=method == "HEAD")

            def do_GET(self) -> None:  # noqa: N802
                self._handle("GET")

            def do_HEAD(self) -> None:  # noqa: N802
                self._handle("HEAD")

            def do_POST(self) -> None:  # noqa: N802
                self._handle("POST")

        return Handler

    @staticmethod
    def _json(status: int, body: object, headers: dict[str, str] | None = None) -> tuple[int, bytes, dict]:
        return status, json.dumps(body).encode(), {"Content-Type": "application/json", **(headers or {})}

    def _error(self, status: int, code: str, message: str) -> tuple[int, bytes, dict]:
        return self._json(status, {"error": message}, {"X-Error-Code": code, "X-Error-Message": message})

    def route(self, method: str, path: str, query: dict, body: bytes, range_header: str | None
              ) -> tuple[int, bytes, dict]:
        match = API.fullmatch(path)
        if match:
            repo = self.repos.get((match["kind"][:-1], match["repo"]))
            if repo is None:
                return self._error(404, "RepoNotFound", f"Repository {match['repo']} not found")
            op, rest = match["op"], match["rest"] or ""
            if op is None or op == "revision":
                revision = rest or "main"
                if not repo.resolve(revision):
                    return self._error(404, "RevisionNotFound", f"Invalid rev id: {revision}")
                return self._json(200, repo.info())
            revision, _, folder = rest.partition("/")
            if not repo.resolve(revision):
                return self._error(404, "RevisionNotFound", f"Invalid rev id: {revision}")
            if op == "tree" and method == "GET":
                entries = repo.listing(folder, recursive=query.get("recursive", ["false"])[0].lower() == "true")
                if entries is None:
                    return self._error(404, "EntryNotFound", f"{folder} does not exist on {revision}")
                return self._json(200, entries)
            if op == "paths-info" and method == "POST":
                form = parse_qs(body.decode())
                paths = form.get("paths", [])
                if not paths and body.startswith(b"{"):
                    paths = json.loads(body).get("paths", [])
                known = set(repo.files) | repo.folders()
                return self._json(200, [repo.entry(p) for p in paths if p in known])
            return self._error(405, "MethodNotAllowed", f"{method} {path}")
        match = RESOLVE.fullmatch(path)
        if match and method in {"GET", "HEAD"}:
            kind = "dataset" if match["prefix"] else "model"
            repo = self.repos.get((kind, match["repo"]))
            if repo is None:
                return self._error(404, "RepoNotFound", f"Repository {match['repo']} not found")
            if not repo.resolve(match["rev"]):
                return self._error(404, "RevisionNotFound", f"Invalid rev id: {match['rev']}")
            content = repo.files.get(match["path"])
            if content is None:
                return self._error(404, "EntryNotFound", f"{match['path']} does not exist on {match['rev']}")
            etag = repo.entry(match["path"])["oid"]
            headers = {"X-Repo-Commit": repo.sha, "ETag": f'"{etag}"', "Accept-Ranges": "bytes",
                       "Content-Type": "application/octet-stream"}
            status = 200
            ranged = re.fullmatch(r"bytes=(\d*)-(\d*)", range_header or "")
            if ranged and content:
                start = int(ranged[1] or 0)
                end = min(int(ranged[2]) if ranged[2] else len(content) - 1, len(content) - 1)
                headers["Content-Range"] = f"bytes {start}-{end}/{len(content)}"
                content, status = content[start:end + 1], 206
            return status, content, headers
        return self._error(404, "NotFound", f"no route for {method} {path}")
