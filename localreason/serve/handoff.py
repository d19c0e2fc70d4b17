"""Hand-off: a command in a shell asks a running `localreason serve` of the same library instead of loading models.

A server publishes itself in its library folder once its socket listens, and takes the file away when it stops:

    <home>/serve.json  {"protocol", "url", "pid", "machine", "home", "token", "apiKey", "settings", "version",
                        "code"}

(written atomically, readable by its owner only). ``connect(home)`` is the CLI's side: it reads that file, if
this user wrote it and nobody else may change it, and trusts it only when everything agrees with what this
process would do itself: the same machine, a live pid of this user, the same resolved library folder, the same
settings (config.toml and LOCALREASON_* variables), the same code (protocol, localreason version, and
``code_id``: the package's modules as they are on disk now, so a server started before an upgrade or an edit is
not asked), an API key in LOCALREASON_API_KEY when the server wants one, and a server at ``url`` that proves
within CONNECT_TIMEOUT that it holds the file's token. A server process that is stopped (Ctrl-Z, a debugger) is
not asked: it could not answer.

The proof is a challenge: the CLI sends GET /v1/instance?nonce=<fresh random text>, and the server answers its
pid, protocol, version and ``proof(token, nonce, ...)`` (HMAC-SHA256 keyed by the token), which the CLI
recomputes and compares in constant time. The token itself never leaves the file and the server process, so a
program that listens on a stale file's port (the server gone) cannot learn it by asking, and cannot answer.
/v1/instance needs no API key; the key is sent only after the proof, on the same connection (a second
/v1/instance with the key, which a keyed server checks when a key is sent), so the CLI knows the server takes
it before it says it is answering there.

Anything else (no file, a stale or foreign one, a server that does not answer in time, an unproven one) gives
None, quietly, and the command runs in its own process. LOCALREASON_HANDOFF=0 turns it off.

``Remote`` then offers the few calls `search` and `ask` make of the service, over the REST endpoints, and
returns the same values (SearchHit, Answer, Collection) rebuilt from their JSON, so the CLI prints them with
its one rendering. The server's own validators judge the input: a refusal (400 invalid_request) is raised as
the ValidationError the service would have raised here, same message, hint and exit code. Whatever the server
cannot be asked faithfully (a limit written as anything but digits, an empty scope value, a collection name it
does not hold), and any failure before an answer arrives (refused, reset, timed out, 401, 5xx), raises
``Fallback``: the caller runs the request itself, and the person sees what they would have seen without a server.
Both calls are read-only, so running one again here after the server failed at it changes nothing.

A busy server (429: its queue for the model is full) is waited for once, as long as its Retry-After says (at
most BUSY_WAIT_MAX seconds), and asked again; only a second 429 falls back. Running the question here at once
would load a second copy of the language model beside the server's, on the same cores and memory, which on a
small machine is slower than waiting for the server's next free place, and may not fit at all.

Standard library only, plus the vocabulary: importing and using this loads no model library, no web framework
and no Library. (Rebuilding an Answer imports localreason.reason, which brings numpy but no model.)
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import re
import secrets
import socket
import time
from dataclasses import fields
from pathlib import Path
from typing import Any

from .. import __version__
from ..config import API_KEY_ENV, HANDOFF_ENV
from ..keys import KEY_PREFIX

PROTOCOL = 2
"""What the discovery file, /v1/instance and the request fields the CLI sends mean; another number is ignored.
2: /v1/instance proves the token (``proof``) instead of showing it."""
FILE_NAME = "serve.json"
INSTANCE_PATH = "/v1/instance"
"""Where a server answers the proof (GET, ``?nonce=``); the one request a keyed server takes without its key."""
CONNECT_TIMEOUT = 3.0
"""Seconds for the connection and the instance check together. An idle server answers in a few milliseconds; on a
busy machine, or while the server loads its models, it can take hundreds. Running the request here instead costs
loading the models (seconds) beside the server's, so a live server is given this long; only one that hangs
costs the wait."""
MAX_FILE_BYTES = 65_536
NONCE_BYTES = 16
BUSY_WAIT_MAX = 30.0
"""Longest wait, in seconds, for a busy server (429) before asking it once more."""
_OFF = {"0", "false", "no", "off"}
_DIGITS = re.compile(r"[0-9]+")


class Fallback(Exception):
    """This request cannot go to the server, or failed before the server answered it: run it here instead."""


def discovery_path(home: str | Path) -> Path:
    return Path(home) / FILE_NAME


def settings_view(settings) -> dict[str, str]:
    """The settings that shape an answer, as text (all but the home, which is compared resolved)."""
    return {f.name: str(settings.store_shown if f.name == "store" else getattr(settings, f.name))
            for f in fields(settings) if f.name != "home"}  # fmt: skip


def new_token() -> str:
    return secrets.token_urlsafe(18)


def new_nonce() -> str:
    return secrets.token_urlsafe(NONCE_BYTES)


def proof(token: str, nonce: str, pid: int, protocol: int, version: str) -> str:
    """What /v1/instance answers to ``nonce``: HMAC-SHA256 keyed by the token, over the nonce and the answer's fields.

    Only a holder of the token can compute it for a nonce it has not seen, and it vouches for the pid, protocol
    and version answered beside it.
    """
    message = f"localreason-instance\n{protocol}\n{pid}\n{version}\n{nonce}".encode("utf-8")
    return hmac.new(token.encode("utf-8"), message, hashlib.sha256).hexdigest()


def code_id() -> str:
    """This installation's code as it is on disk now: each module's path, size and modification time, hashed.

    A server records it when it starts; a command whose package differs (upgraded, reinstalled or edited since,
    even under the same version number) does not hand its request to that server. Stat calls only (~60 files).
    """
    root = Path(__file__).resolve().parent.parent  # the localreason package
    digest = hashlib.sha256()
    try:
        for folder, subfolders, names in os.walk(root):
            subfolders[:] = sorted(d for d in subfolders if d != "__pycache__" and not d.startswith("."))
            for name in sorted(n for n in names if n.endswith(".py")):
                st = os.stat(os.path.join(folder, name))
                rel = os.path.relpath(os.path.join(folder, name), root).replace(os.sep, "/")
                digest.update(f"{rel}\0{st.st_size}\0{st.st_mtime_ns}\n".encode("utf-8", "surrogateescape"))
    except OSError:
        return "unknown"
    return digest.hexdigest()[:32]


# ---------------------------------------------------------------- the server's side


def publish(settings, url: str, token: str, api_key_required: bool, version: str) -> Path | None:
    """Write ``<home>/serve.json`` for this process (tmp file + os.replace); None if the folder cannot take it."""
    home = Path(settings.home).expanduser().resolve()
    record = {"protocol": PROTOCOL, "url": url, "pid": os.getpid(), "machine": socket.gethostname(),
              "home": str(home), "token": token, "apiKey": api_key_required, "settings": settings_view(settings),
              "version": version, "code": code_id()}  # fmt: skip
    path = discovery_path(home)
    tmp = path.with_name(f".{FILE_NAME}.{os.getpid()}.tmp")
    try:
        home.mkdir(parents=True, exist_ok=True)
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(record, f, ensure_ascii=False)
        os.replace(tmp, path)
    except OSError:
        try:
            tmp.unlink(missing_ok=True)
        except OSError:
            pass
        return None
    return path


def withdraw(path: Path | None, token: str) -> None:
    """Remove the discovery file if it still names this server (another one may have replaced it since)."""
    if path is None:
        return
    record = _read(path)
    if record is not None and record.get("token") == token:
        try:
            path.unlink()
        except OSError:
            pass


# ---------------------------------------------------------------- the command line's side


def enabled() -> bool:
    return os.environ.get(HANDOFF_ENV, "").strip().lower() not in _OFF


def connect(home: str | None) -> "Remote | None":
    """The running server of the library at ``home`` (the --home value; None: the default), or None."""
    if not enabled():
        return None
    try:
        from ..config import load_settings

        settings = load_settings(home)
        mine = Path(settings.home).expanduser().resolve()
    except Exception:  # noqa: BLE001 - whatever is wrong here, the command met in its own process says it
        return None
    record = _read(discovery_path(mine))
    if record is None or not _agrees(record, mine, settings):
        return None
    key = (os.environ.get(API_KEY_ENV, "").strip() or None) if record["apiKey"] else None  # not sent where not wanted
    if record["apiKey"] and (key is None or key.startswith(KEY_PREFIX)):
        return None  # (a collection key would see less through the server than the command sees here)
    remote = Remote(record["url"], None, settings.answer_budget)
    if not remote.proves(record["token"], record["pid"], key):
        return None
    remote.api_key = key  # from now on: this server proved it wrote the file, and takes the key
    return remote


def _read(path: Path) -> dict | None:
    """The discovery file's record, or None (absent, unreadable, not ours, not a JSON object)."""
    try:
        with open(path, "rb") as f:
            if os.name == "posix":  # written by someone else, or writable by others: not to be trusted
                st = os.fstat(f.fileno())
                if st.st_uid != os.getuid() or st.st_mode & 0o022:
                    return None
            raw = f.read(MAX_FILE_BYTES + 1)
        record = json.loads(raw) if len(raw) <= MAX_FILE_BYTES else None
    except (OSError, ValueError):
        return None
    return record if isinstance(record, dict) else None


def _agrees(record: dict, home: Path, settings) -> bool:
    """Whether the file names a live server of this library, on this machine, with these settings."""
    expected = {"protocol": int, "url": str, "pid": int, "machine": str, "home": str, "token": str, "apiKey": bool,
                "settings": dict, "version": str, "code": str}  # fmt: skip
    if any(not isinstance(record.get(k), t) for k, t in expected.items()) or record["protocol"] != PROTOCOL:
        return False
    if not re.fullmatch(r"http://(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9.-]+):[0-9]{1,5}", record["url"]):
        return False
    return (record["machine"] == socket.gethostname() and record["home"] == str(home)
            and record["settings"] == settings_view(settings) and record["version"] == __version__
            and record["code"] == code_id() and _alive(record["pid"]))  # fmt: skip


def _alive(pid: int) -> bool:
    """Whether ``pid`` is a running process of this user (the file is this user's: so was its server)."""
    if pid <= 0:
        return False
    if os.name != "posix":  # os.kill would stop the process there; the token check decides instead
        return True
    try:
        os.kill(pid, 0)
    except PermissionError:
        return False  # another user's process (the pid was reused): not the server that wrote the file
    except OSError:
        return False
    return not _stopped(pid)


def _stopped(pid: int) -> bool:
    """Whether ``pid`` is stopped (Ctrl-Z, a debugger) or a zombie: alive to os.kill, but it cannot answer, and
    asking would cost CONNECT_TIMEOUT. Linux only (/proc); elsewhere the timeout bounds the wait."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            state = f.read().rpartition(b")")[2].split()[0]  # after "pid (name)", which may hold spaces
    except (OSError, IndexError):
        return False
    return state in (b"T", b"t", b"Z", b"X")


class Remote:
    """The calls `search` and `ask` make of the service, made to a running server (see the module docstring)."""

    def __init__(self, url: str, api_key: str | None, answer_budget: int) -> None:
        authority = url.removeprefix("http://")
        host, _, port = authority.rpartition(":")
        self.url = url
        self.host, self.port = host.strip("[]"), int(port)
        self.api_key = api_key
        self.answer_budget = answer_budget
        """This process's answer_budget setting (the server's too: the settings agree), sent when --max-tokens is not."""

    def proves(self, token: str, pid: int, key: str | None) -> bool:
        """Whether the server here holds ``token``, is ``pid`` and, given ``key``, takes it (within CONNECT_TIMEOUT).

        GET /v1/instance with a fresh nonce and no key; the answer must be ``proof`` of it. Only then, on the
        same connection, is the key sent: /v1/instance again, with a new nonce, must be answered and proven too.
        """
        import http.client  # here, not at the top: a command with no server to ask never loads it

        deadline = time.monotonic() + CONNECT_TIMEOUT
        conn = http.client.HTTPConnection(self.host, self.port, timeout=CONNECT_TIMEOUT)
        try:
            for send_key in (False, True) if key else (False,):
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                if conn.sock is None:  # the first time, or the server closed the connection after answering
                    conn.timeout = left
                    conn.connect()
                conn.sock.settimeout(max(0.001, deadline - time.monotonic()))
                nonce = new_nonce()
                headers = {"Accept": "application/json", **({"Authorization": f"API-Key {key}"} if send_key else {})}
                conn.request("GET", f"{INSTANCE_PATH}?nonce={nonce}", headers=headers)
                response = conn.getresponse()
                status, raw = response.status, response.read(MAX_FILE_BYTES + 1)  # a short answer: read whole
                if status != 200 or len(raw) > MAX_FILE_BYTES or not _proven(raw, token, nonce, pid):
                    return False
        except (OSError, http.client.HTTPException):
            return False
        finally:
            conn.close()
        return True

    def request(self, method: str, path: str, body: dict | None = None,
                timeout: float | None = None) -> tuple[int, Any]:  # fmt: skip
        """(status, parsed JSON body); Fallback when no well-formed answer arrives.

        ``timeout`` bounds the connection and the answer together; None: the connection must open within
        CONNECT_TIMEOUT and the answer may take as long as the work takes (as it would here).
        """
        import http.client

        headers = {"Accept": "application/json"}
        data = None
        if body is not None:
            data = json.dumps(body).encode("ascii")  # \\u escapes: any text, even lone surrogates, goes as sent
            headers["Content-Type"] = "application/json"
        if self.api_key:
            headers["Authorization"] = f"API-Key {self.api_key}"
        started = time.monotonic()
        conn = http.client.HTTPConnection(self.host, self.port, timeout=CONNECT_TIMEOUT if timeout is None else timeout)
        try:
            conn.connect()
            conn.sock.settimeout(None if timeout is None else max(0.001, timeout - (time.monotonic() - started)))
            conn.request(method, path, body=data, headers=headers)
            response = conn.getresponse()
            status, raw = response.status, response.read()
        except (OSError, http.client.HTTPException) as exc:
            raise Fallback(f"{method} {path}: {exc.__class__.__name__}: {exc}") from None
        finally:
            conn.close()
        try:
            return status, json.loads(raw)
        except ValueError:
            raise Fallback(f"{method} {path}: {status} with a body that is not JSON") from None

    def _data(self, path: str, body: dict) -> Any:
        """The ``data`` of a POST; a refused input as the ValidationError it is here; anything else Fallback.

        A 429 (busy) is waited out once (its Retry-After, at most BUSY_WAIT_MAX) and the request made again.
        """
        status, answer = self.request("POST", path, body)
        if status == 429:
            time.sleep(_busy_wait(answer))
            status, answer = self.request("POST", path, body)
        if status == 200 and isinstance(answer, dict) and "data" in answer:
            return answer["data"]
        error = answer.get("error") if isinstance(answer, dict) else None
        if status == 400 and isinstance(error, dict) and error.get("code") == "invalid_request" \
                and isinstance(error.get("message"), str):  # fmt: skip
            from ..errors import ValidationError

            hint = (error.get("details") or {}).get("hint")
            raise ValidationError(error["message"], hint=hint if isinstance(hint, str) else None)
        raise Fallback(f"POST {path}: {status}")

    # ------------------------------------------------------------ what the CLI calls (Service's signatures)

    def collection(self, name: str):
        """The collection named ``name`` (the CLI resolves a --collection name before searching)."""
        from ..types import Collection

        status, answer = self.request("GET", "/v1/collections")
        rows = answer.get("data") if status == 200 and isinstance(answer, dict) else None
        found = [c for c in rows or () if isinstance(c, dict) and c.get("name") == name]
        if len(found) != 1:
            raise Fallback(f"no collection {name!r} on the server")  # here, the library says so in its words
        return Collection.from_dict(found[0])

    def deep_search(self, query: str, *, limit: object = 10, **scope) -> list:
        from ..types import SearchHit

        body = {"query": query, "limit": _whole(limit), **_scope(scope)}
        data = self._data("/v1/deep_search", body)
        try:
            return [SearchHit.from_dict(h) for h in data]
        except (TypeError, KeyError, ValueError, AttributeError) as exc:
            raise Fallback(f"deep_search: unexpected answer ({exc})") from None

    def reason(self, query: str, *, limit: object = 50, max_tokens: object = None, stage=None, **scope):
        """Answer ``query`` on the server (``stage`` is not called: the server reports no stages over REST)."""
        from ..reason.answer import Answer

        budget = self.answer_budget if max_tokens is None else _whole(max_tokens)
        body = {"query": query, "limit": _whole(limit), "maxTokens": budget, **_scope(scope),
                "includeStatements": True}  # fmt: skip
        data = self._data("/v1/reason", body)
        try:
            return Answer.from_dict(data, query=query)
        except (TypeError, KeyError, ValueError, AttributeError) as exc:
            raise Fallback(f"reason: unexpected answer ({exc})") from None


def _proven(raw: bytes, token: str, nonce: str, pid: int) -> bool:
    """Whether /v1/instance's answer ``raw`` is this pid, protocol and version, and proves ``token`` for ``nonce``."""
    try:
        data = json.loads(raw).get("data")
    except (ValueError, AttributeError, RecursionError):
        return False
    if not isinstance(data, dict) or data.get("pid") != pid or data.get("protocol") != PROTOCOL \
            or data.get("version") != __version__ or not isinstance(data.get("proof"), str):  # fmt: skip
        return False
    expected = proof(token, nonce, pid, PROTOCOL, __version__)
    return hmac.compare_digest(data["proof"].encode("utf-8", "replace"), expected.encode("ascii"))


def _busy_wait(answer: Any) -> float:
    """Seconds to wait after a 429: the server's retryAfter (its recent mean answer time), at most BUSY_WAIT_MAX."""
    error = answer.get("error") if isinstance(answer, dict) else None
    details = error.get("details") if isinstance(error, dict) else None
    seconds = details.get("retryAfter") if isinstance(details, dict) else None
    if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or not seconds >= 0:
        seconds = 1.0
    return min(float(seconds), BUSY_WAIT_MAX)


def _whole(value: object) -> int:
    """A count given as digits, as a JSON number; anything else is judged here (the message names it as written)."""
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    if isinstance(value, str) and _DIGITS.fullmatch(value) and len(value) <= 18:
        return int(value)
    raise Fallback(f"{value!r} is judged here")


def _scope(scope: dict) -> dict:
    """document_id / collection_id as the API's fields; empty or odd values are judged here."""
    names = {"document_id": "documentId", "collection_id": "collectionId"}
    out = {}
    for key, value in scope.items():
        if key not in names or not isinstance(value, str) or not value.strip():
            raise Fallback(f"{key}={value!r} is judged here")
        out[names[key]] = value
    return out
