"""A local fake of the Hugging Face Hub HTTP API: the endpoints huggingface_hub 2.4 calls to publish a model.

create_repo (POST /api/repos/create), create_branch (POST /api/models/{repo}/branch/{b}), list_repo_files
(GET /api/models/{repo}/tree/{rev}), README validation (POST /api/validate-yaml), preupload
(POST /api/models/{repo}/preupload/{rev}: safetensors go as LFS, the rest as regular files, like the Hub), the
LFS batch API (POST /{repo}.git/info/lfs/objects/batch, basic transfer: PUT upload + POST verify) and commit
(POST /api/models/{repo}/commit/{rev}, ndjson). Every request is recorded; a wrong token gets 401.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import unquote, urlparse

TOKEN = "hf_fake_token_for_tests_0123456789"
GITATTRIBUTES = b"*.safetensors filter=lfs diff=lfs merge=lfs -text\n"
ROUTE = re.compile(r"/api/models/(?P<repo>[^/]+/[^/]+)/(?P<op>preupload|commit|tree|branch)/(?P<rev>.+)")


@dataclass
class Repo:
    private: bool
    branches: dict[str, dict[str, bytes]] = field(default_factory=lambda: {"main": {".gitattributes": GITATTRIBUTES}})
    commits: list[dict] = field(default_factory=list)


class FakeHub:
    """State of the fake Hub and the server thread around it (use as a context manager)."""

    def __init__(self) -> None:
        self.repos: dict[str, Repo] = {}
        self.lfs: dict[str, bytes] = {}
        self.requests: list[tuple[str, str]] = []
        self.uploaded_as: dict[str, str] = {}  # path -> "lfs" | "regular", as sent in the last commit
        self.lock = threading.Lock()
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler_class())
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05},
                                       daemon=True)

    def __enter__(self) -> FakeHub:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()

    def files(self, repo_id: str, branch: str = "main") -> dict[str, bytes]:
        return self.repos[repo_id].branches[branch]

    # --- request handling ---
    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        hub = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:  # quiet
                pass

            def _reply(self, status: int, body: object, headers: dict[str, str] | None = None) -> None:
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for key, value in (headers or {}).items():
                    self.send_header(key, value)
                self.end_headers()
                self.wfile.write(data)

            def _body(self) -> bytes:
                if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
                    chunks = []
                    while True:
                        size = int(self.rfile.readline().strip(), 16)
                        if size == 0:
                            self.rfile.readline()
                            return b"".join(chunks)
                        chunks.append(self.rfile.read(size))
                        self.rfile.readline()
                return self.rfile.read(int(self.headers.get("Content-Length") or 0))

            def _handle(self, method: str) -> None:
                path = urlparse(self.path).path
                body = self._body()
                if path == "/api/agent-harnesses":
                    # huggingface_hub's best-effort user-agent registry lookup (made when it builds headers and an
                    # agent environment variable is set): not a publishing step; an empty registry is the answer.
                    return self._reply(200, {"standardEnvVars": [], "harnesses": {}})
                with hub.lock:
                    hub.requests.append((method, path))
                if not path.startswith("/lfs-upload/") and self.headers.get("Authorization") != f"Bearer {TOKEN}":
                    return self._reply(401, {"error": "Invalid credentials in Authorization header"})
                with hub.lock:
                    status, reply = hub.route(method, path, body)
                self._reply(status, reply, {"X-Error-Message": reply["error"]} if "error" in reply else None)

            def do_GET(self) -> None:  # noqa: N802
                self._handle("GET")

            def do_POST(self) -> None:  # noqa: N802
                self._handle("POST")

            def do_PUT(self) -> None:  # noqa: N802
                self._handle("PUT")

        return Handler

    def route(self, method: str, path: str, body: bytes) -> tuple[int, dict]:
        path = unquote(path)
        if method == "POST" and path == "/api/repos/create":
            payload = json.loads(body)
            repo_id = f"{payload['organization']}/{payload['name']}"
            if repo_id in self.repos:
                return 409, {"error": "You already created this model repo", "url": f"{self.url}/{repo_id}"}
            self.repos[repo_id] = Repo(private=payload.get("visibility") == "private")
            return 200, {"url": f"{self.url}/{repo_id}"}
        if method == "POST" and path == "/api/validate-yaml":
            return 200, {"errors": [], "warnings": []}
        if method == "PUT" and path.startswith("/lfs-upload/"):
            oid = path.rsplit("/", 1)[1]
            if hashlib.sha256(body).hexdigest() != oid:
                return 400, {"error": "sha256 mismatch"}
            self.lfs[oid] = body
            return 200, {}
        if method == "POST" and path == "/lfs-verify":
            payload = json.loads(body)
            ok = payload["oid"] in self.lfs and len(self.lfs[payload["oid"]]) == payload["size"]
            return (200, {}) if ok else (404, {"error": "object not uploaded"})
        match = re.fullmatch(r"/(?P<repo>[^/]+/[^/]+)\.git/info/lfs/objects/batch", path)
        if method == "POST" and match:
            payload = json.loads(body)
            objects = [
                {"oid": o["oid"], "size": o["size"], "authenticated": True,
                 "actions": {"upload": {"href": f"{self.url}/lfs-upload/{o['oid']}"},
                             "verify": {"href": f"{self.url}/lfs-verify"}}}
                for o in payload["objects"]
            ]
            return 200, {"transfer": "basic", "objects": objects}
        match = ROUTE.fullmatch(path)
        if not match:
            return 404, {"error": f"no route for {method} {path}"}
        repo_id, op, rev = match["repo"], match["op"], match["rev"]
        if repo_id not in self.repos:
            return 404, {"error": "Repository not found"}
        repo = self.repos[repo_id]
        if op == "branch":
            if rev in repo.branches:
                return 409, {"error": "Reference already exists"}
            repo.branches[rev] = dict(repo.branches["main"])
            return 200, {}
        if rev not in repo.branches:
            return 404, {"error": f"Revision Not Found for {rev}"}
        files = repo.branches[rev]
        if op == "tree" and method == "GET":
            return 200, [{"type": "file", "path": p, "size": len(c), "oid": hashlib.sha1(c).hexdigest()}
                         for p, c in sorted(files.items())]  # type: ignore[return-value]
        if op == "preupload":
            entries = json.loads(body)["files"]
            return 200, {"files": [
                {"path": e["path"], "uploadMode": "lfs" if e["path"].endswith(".safetensors") else "regular",
                 "shouldIgnore": False, "oid": None} for e in entries]}
        if op == "commit":
            return self._commit(repo_id, repo, rev, body)
        return 404, {"error": f"no route for {method} {path}"}

    def _commit(self, repo_id: str, repo: Repo, rev: str, body: bytes) -> tuple[int, dict]:
        lines = [json.loads(line) for line in body.decode().splitlines() if line.strip()]
        files = dict(repo.branches[rev])
        self.uploaded_as = {}
        for line in lines[1:]:
            value = line["value"]
            if line["key"] == "file":
                files[value["path"]] = base64.b64decode(value["content"])
                self.uploaded_as[value["path"]] = "regular"
            elif line["key"] == "lfsFile":
                if value["oid"] not in self.lfs:
                    return 422, {"error": f"LFS object {value['oid']} was never uploaded"}
                files[value["path"]] = self.lfs[value["oid"]]
                self.uploaded_as[value["path"]] = "lfs"
            elif line["key"] == "deletedFile":
                files.pop(value["path"], None)
            else:
                return 400, {"error": f"unsupported commit line {line['key']}"}
        repo.branches[rev] = files
        oid = hashlib.sha1(json.dumps(sorted((p, hashlib.sha256(c).hexdigest()) for p, c in files.items()))
                           .encode() + str(len(repo.commits)).encode()).hexdigest()
        repo.commits.append({"oid": oid, "branch": rev, "summary": lines[0]["value"]["summary"]})
        return 200, {"commitUrl": f"{self.url}/{repo_id}/commit/{oid}", "commitOid": oid, "pullRequestUrl": None}
