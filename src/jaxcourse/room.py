"""A view of the room, opt in: participants' checker verdicts, live, on the instructor's screen.

The instructor starts a small server on their laptop (standard library only):

    python -m jaxcourse.room serve --port 8765 --data room.json
    python -m tools.room --block jit --port 8765 --data room.json   # the block's exercises as columns

and opens http://localhost:8765/ . A participant opts in with one call, giving a display name:

    from jaxcourse import room
    room.join("http://instructor-laptop:8765", "Ada")

From then on each checker verdict is reported: the exercise's name, passed / not yet / not tried
(the untouched stub), and how many hints (and whether the solution) were shown. Never code. The
report is sent by a background thread with a short timeout; a failure prints one line, once, and
never stops or slows the notebook. A participant who cannot reach the server (Colab) calls
`room.code("Ada")` and pastes the one line it prints into a shared document; the server reads the
codes from a file (`--codes codes.txt`, re-read when it changes) or from a POST to /codes.

Verdicts are kept in the `--data` file (written whole to a temporary file, then renamed over it),
so a restarted server loses none.
"""

from __future__ import annotations

import argparse
import base64
import json
import math
import os
import queue
import re
import socket
import sys
import tempfile
import threading
import time
import urllib.request
import zlib
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from . import checks, ladder

PASSED, TRIED, NOT_TRIED = "passed", "tried", "not tried"
STATES = (PASSED, TRIED, NOT_TRIED)
MAX_BODY = 16 * 1024
"""The largest request body the server reads; a larger one is answered 413."""
MAX_NAME, MAX_EXERCISE, MAX_HINTS = 40, 120, 50
MAX_PARTICIPANTS, MAX_EXERCISES = 500, 200
"""Bounds on what the server keeps, whatever it is sent."""
TIMEOUT = 2.0
"""Seconds a participant's report may take before it is given up (in the background)."""
CODE_PREFIX = "jaxroom1:"
CODE = re.compile(re.escape(CODE_PREFIX) + r"([A-Za-z0-9_\-]+={0,2})")


# --- what a participant sends ------------------------------------------------------------------


def state_of(verdict: checks.Verdict) -> str:
    """passed, tried (not yet) or not tried (the checker saw the untouched stub)."""
    if verdict.passed:
        return PASSED
    return TRIED if verdict.tried else NOT_TRIED


def report(name: str, exercise: str, state: str | None = None) -> dict:
    """The one message a participant sends about an exercise: no code, only its verdict (None
    when only the help asked for changed) and the help shown."""
    used = ladder.help_used(exercise)
    message = {"name": name, "exercise": exercise, "hints": used.hints, "solution": used.solution}
    if state is not None:
        message["state"] = state
    return message


def last_states(verdicts=None) -> dict[str, str]:
    """{exercise: the state of its last verdict} of this session (or of `verdicts`)."""
    verdicts = checks.session_verdicts() if verdicts is None else verdicts
    return {verdict.exercise: state_of(verdict) for verdict in verdicts}


def encode(name: str, states: dict[str, str], now: float | None = None) -> str:
    """A one-line progress code: the name, each exercise's state and help, and the time."""
    entries = {}
    for exercise, state in states.items():
        used = ladder.help_used(exercise)
        entries[exercise] = [STATES.index(state), used.hints, int(used.solution)]
    payload = {"n": name, "t": int(time.time() if now is None else now), "v": entries}
    packed = zlib.compress(json.dumps(payload, separators=(",", ":")).encode(), 9)
    return CODE_PREFIX + base64.urlsafe_b64encode(packed).decode()


def decode(code: str) -> dict:
    """The participant's name, time and reports from a progress code; ValueError if it is not one."""
    match = CODE.search(code)
    if not match:
        raise ValueError("no progress code (it starts with jaxroom1:)")
    try:
        inflate = zlib.decompressobj()
        packed = inflate.decompress(base64.urlsafe_b64decode(match.group(1)), MAX_BODY)
        if inflate.unconsumed_tail:  # a code inflating past MAX_BODY is no participant's
            raise ValueError("too long")
        payload = json.loads(packed)
        name, at, entries = payload["n"], float(payload["t"]), payload["v"]
        if not math.isfinite(at):
            raise ValueError("no time")
        reports = [
            {
                "name": name,
                "exercise": exercise,
                "state": STATES[state] if state in range(len(STATES)) else None,
                "hints": hints,
                "solution": bool(solution),
            }
            for exercise, (state, hints, solution) in entries.items()
        ]
    except (ValueError, TypeError, KeyError, IndexError, AttributeError, zlib.error) as error:
        raise ValueError(f"not a valid progress code ({type(error).__name__})") from None
    return {"name": name, "at": at, "reports": reports}


class _Sender:
    """Posts reports from a background thread: the notebook only puts them in a queue."""

    def __init__(self, url: str, name: str, timeout: float = TIMEOUT):
        self.url, self.name, self.timeout = url.rstrip("/"), name, timeout
        self.queue: queue.Queue = queue.Queue(maxsize=1000)
        self.warned = False
        self.thread = threading.Thread(target=self._run, name="jaxcourse-room", daemon=True)
        self.thread.start()

    def put(self, path: str, message: dict | None) -> None:
        try:
            self.queue.put_nowait((path, message))
        except queue.Full:  # the server is long gone: drop it, never wait
            pass

    def stop(self) -> None:
        self.put("", None)

    def _run(self) -> None:
        while True:
            path, message = self.queue.get()
            if message is None:
                return
            try:
                post(self.url + path, message, self.timeout)
            except Exception as error:  # never the notebook's problem: say so once
                if not self.warned:
                    self.warned = True
                    print(
                        f"room: could not report to {self.url} ({type(error).__name__}); your "
                        "work is not affected. room.code() gives a line to paste instead."
                    )


def post(url: str, message: dict, timeout: float = TIMEOUT) -> dict:
    """POSTs `message` as JSON and returns the JSON answer (urllib raises on an error status)."""
    request = urllib.request.Request(
        url,
        data=json.dumps(message).encode(),
        headers={"Content-Type": "application/json"},
        method="POST",
    )
    with urllib.request.urlopen(request, timeout=timeout) as response:
        return json.loads(response.read() or b"{}")


_SENDER: _Sender | None = None


def _on_verdict(verdict: checks.Verdict) -> None:
    if _SENDER is not None:
        _SENDER.put("/report", report(_SENDER.name, verdict.exercise, state_of(verdict)))


def _on_help(exercise: str) -> None:
    if _SENDER is not None:
        _SENDER.put("/report", report(_SENDER.name, exercise))


def join(url: str, name: str, *, timeout: float = TIMEOUT) -> None:
    """Opts in: from now on every checker verdict of this session is reported to the room server
    at `url` under `name` (and those given so far are sent now). Only exercise names, verdicts
    and the number of hints shown are sent, never code. `leave()` stops it."""
    global _SENDER
    name = " ".join(str(name).split())
    if not 0 < len(name) <= MAX_NAME:
        print(f"room: give a display name of 1 to {MAX_NAME} characters.")
        return
    leave()
    _SENDER = _Sender(url, name, timeout)
    if _on_verdict not in checks._LISTENERS:
        checks._LISTENERS.append(_on_verdict)
    if _on_help not in ladder._LISTENERS:
        ladder._LISTENERS.append(_on_help)
    _SENDER.put("/join", {"name": name})
    for exercise, state in last_states().items():
        _SENDER.put("/report", report(name, exercise, state))
    print(
        f"room: reporting your checkers' verdicts to {_SENDER.url} as {name!r} (exercise, verdict "
        "and hints used; never your code). room.leave() stops it."
    )


def leave() -> None:
    """Stops reporting (what was sent stays on the instructor's screen)."""
    global _SENDER
    if _SENDER is not None:
        _SENDER.stop()
        _SENDER = None


def code(name: str | None = None) -> None:
    """Prints this session's progress as one line to paste into the room's shared document,
    for a participant who cannot reach the room server (on Colab, say)."""
    name = " ".join(str(name or (_SENDER.name if _SENDER else "")).split())
    if not 0 < len(name) <= MAX_NAME:
        print('room: give your display name, e.g. room.code("Ada").')
        return
    states = last_states()
    if not states:
        print("room: no exercise checked yet in this session; run a checker first.")
        return
    print(encode(name, states))


# --- the server ---------------------------------------------------------------------------------


class Rejected(ValueError):
    """A request the server will not take (answered 400 with the reason)."""


def _text(message: dict, field: str, limit: int) -> str:
    value = message.get(field)
    if not isinstance(value, str):
        raise Rejected(f"{field!r} must be a string")
    value = " ".join(value.split())
    if not 0 < len(value) <= limit or not value.isprintable():
        raise Rejected(f"{field!r} must be 1 to {limit} printable characters")
    return value


def validate(message) -> dict:
    """The fields of a report the server keeps, checked; unknown fields are dropped."""
    if not isinstance(message, dict):
        raise Rejected("the body must be a JSON object")
    clean: dict[str, object] = {"name": _text(message, "name", MAX_NAME)}
    if "exercise" not in message:
        return clean
    clean["exercise"] = _text(message, "exercise", MAX_EXERCISE)
    state = message.get("state")
    if state is not None and state not in STATES:
        raise Rejected(f"'state' must be one of {STATES}")
    hints = message.get("hints", 0)
    if isinstance(hints, bool) or not isinstance(hints, int) or not 0 <= hints <= MAX_HINTS:
        raise Rejected(f"'hints' must be a whole number from 0 to {MAX_HINTS}")
    solution = message.get("solution", False)
    if not isinstance(solution, bool):
        raise Rejected("'solution' must be true or false")
    clean.update(state=state, hints=hints, solution=solution)
    return clean


class Room:
    """The participants' verdicts, kept in memory and in the data file after every change."""

    def __init__(self, data: Path, exercises=(), codes: Path | None = None, title: str = "Room"):
        self.data, self.codes, self.title = Path(data), codes and Path(codes), title
        self.data.parent.mkdir(parents=True, exist_ok=True)
        self.exercises = list(exercises)
        self.lock = threading.Lock()
        self.codes_seen: tuple[float, int] | None = None
        self.people: dict[str, dict] = self._load()

    def _load(self) -> dict:
        try:
            return json.loads(self.data.read_text())["participants"]
        except FileNotFoundError:
            return {}
        except (ValueError, KeyError, TypeError) as error:  # never written over: say so
            raise SystemExit(
                f"{self.data} is not a room's data file ({type(error).__name__}): move it away or "
                "give another --data."
            ) from None

    def _save(self) -> None:
        """Writes the whole state to a temporary file beside the data file, then renames it over
        the data file: a crash leaves the old file or the new one, never half of one."""
        text = json.dumps({"participants": self.people}, indent=1, sort_keys=True)
        fd, temporary = tempfile.mkstemp(dir=self.data.parent, prefix=f".{self.data.name}.")
        try:
            with os.fdopen(fd, "w") as file:
                file.write(text)
                file.flush()
                os.fsync(file.fileno())
            os.replace(temporary, self.data)
        except BaseException:
            Path(temporary).unlink(missing_ok=True)
            raise

    def _person(self, name: str, now: float) -> dict:
        key = name.casefold()
        if key not in self.people:
            if len(self.people) >= MAX_PARTICIPANTS:
                raise Rejected("the room is full")
            self.people[key] = {"name": name, "joined": now, "verdicts": {}}
        person = self.people[key]
        person["seen"] = max(now, person.get("seen", 0))
        return person

    def _apply(self, report: dict, now: float) -> bool:
        """Merges one validated report; False when an older code's report is not newer."""
        person = self._person(report["name"], now)
        if "exercise" not in report:
            return True
        verdicts = person["verdicts"]
        exercise = report["exercise"]
        if exercise not in verdicts and len(verdicts) >= MAX_EXERCISES:
            raise Rejected("too many exercises")
        entry = verdicts.setdefault(exercise, {"state": NOT_TRIED, "hints": 0, "solution": False})
        if now < entry.get("at", 0):
            return False
        if report["state"] is not None:
            entry["state"] = report["state"]
        entry["hints"] = max(entry["hints"], report["hints"])
        entry["solution"] = entry["solution"] or report["solution"]
        entry["at"] = now
        return True

    def receive(self, message, now: float | None = None) -> dict:
        """Takes one report (or a join: a name only); raises `Rejected` when it is not valid."""
        clean = validate(message)
        with self.lock:
            self._apply(clean, time.time() if now is None else now)
            self._save()
        return {"ok": True}

    def receive_codes(self, text: str) -> list[str]:
        """Merges every progress code in `text` (a line each, among any other text); returns
        the names read. A code older than what a participant has sent live changes nothing."""
        names = []
        for match in CODE.finditer(text):
            try:
                found = decode(match.group(0))
                reports = [validate(r) for r in found["reports"]]
                validate({"name": found["name"]})
            except ValueError:  # a mangled paste: skip that line, read the others
                continue
            at = min(found["at"], time.time())  # a code from a clock ahead locks nothing
            with self.lock:
                for report in reports or [{"name": found["name"]}]:
                    self._apply(report, at)
                self._save()
            names.append(" ".join(found["name"].split()))
        return names

    def read_codes_file(self) -> None:
        """Reads the codes file again when it has changed since last read."""
        if self.codes is None:
            return
        try:
            stat = self.codes.stat()
        except OSError:
            return
        if (stat.st_mtime, stat.st_size) != self.codes_seen:
            self.codes_seen = (stat.st_mtime, stat.st_size)
            self.receive_codes(self.codes.read_text(errors="replace"))

    def snapshot(self) -> dict:
        """What the instructor's page shows: the exercises (the block's first) and each
        participant's state of each, sorted by name."""
        self.read_codes_file()
        with self.lock:
            people = json.loads(json.dumps(self.people))
        reported = sorted({e for p in people.values() for e in p["verdicts"]})
        extra = [] if self.exercises else [e for e in reported if e not in self.exercises]
        return {
            "title": self.title,
            "exercises": self.exercises + extra,
            "now": time.time(),
            "participants": sorted(people.values(), key=lambda p: p["name"].casefold()),
        }


PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{title}</title>
<style>
body {{ font-family: system-ui, sans-serif; margin: 1.5rem; }}
table {{ border-collapse: collapse; }}
th, td {{ border: 1px solid #bbb; padding: .3rem .6rem; text-align: left; }}
td.passed {{ background: #c8efc8; }} td.tried {{ background: #ffe3a3; }}
td.not-tried {{ color: #777; }} tfoot td {{ font-weight: bold; }}
</style></head>
<body><h1>{title}</h1>
<p id="status">Waiting for the room server…</p>
<noscript>This page needs JavaScript to show the room.</noscript>
<table id="room"><thead></thead><tbody></tbody><tfoot></tfoot></table>
<script>
const LABEL = {{"passed": "passed", "tried": "not yet", "not tried": "not tried"}};
function cell(row, text, cls) {{
  const td = document.createElement(row.parentNode.tagName === "THEAD" ? "th" : "td");
  td.textContent = text; if (cls) td.className = cls; row.appendChild(td); return td;
}}
function fill(part, rows) {{
  const el = document.querySelector("#room " + part); el.replaceChildren();
  for (const cells of rows) {{
    const tr = document.createElement("tr"); el.appendChild(tr);
    for (const [text, cls] of cells) cell(tr, text, cls);
  }}
}}
function help(v) {{
  if (v.solution) return " (solution)";
  return v.hints ? ` (${{v.hints}} hint${{v.hints > 1 ? "s" : ""}})` : "";
}}
function render(room) {{
  const ex = room.exercises, people = room.participants;
  fill("thead", [[["participant"], ...ex.map(e => [e]), ["last report"]]]);
  const count = Object.fromEntries(ex.map(e => [e, {{"passed": 0, "tried": 0, "not tried": 0}}]));
  fill("tbody", people.map(p => [[p.name], ...ex.map(e => {{
    const v = p.verdicts[e] || {{"state": "not tried", "hints": 0, "solution": false}};
    count[e][v.state] += 1;
    return [LABEL[v.state] + help(v), v.state.replace(" ", "-")];
  }}), [Math.max(0, Math.round(room.now - p.seen)) + " s ago"]]));
  fill("tfoot", [[[people.length + " participants"], ...ex.map(e =>
    [`${{count[e]["passed"]}} passed, ${{count[e]["tried"]}} not yet, ${{count[e]["not tried"]}} not tried`]), [""]]]);
  document.getElementById("status").textContent =
    "Updated " + new Date(room.now * 1000).toLocaleTimeString() + "; refreshes every 3 s.";
}}
function poll() {{
  fetch("state").then(r => r.json()).then(render).catch(() => {{
    document.getElementById("status").textContent = "The room server does not answer; retrying.";
  }});
}}
poll(); setInterval(poll, 3000);
</script></body></html>
"""


class Handler(BaseHTTPRequestHandler):
    """GET / (the page), GET /state (JSON); POST /join, /report (JSON) and /codes (text)."""

    room: Room
    timeout = 10  # a client that sends nothing frees its thread
    server_version = "jaxcourse-room"

    def log_message(self, format, *args):  # noqa: A002 - the base class's name
        pass

    def _send(self, status: int, body: bytes, kind: str = "application/json") -> None:
        self.send_response(status)
        self.send_header("Content-Type", f"{kind}; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        self.end_headers()
        self.wfile.write(body)

    def _json(self, status: int, value) -> None:
        self._send(status, json.dumps(value).encode())

    def do_GET(self):
        path = self.path.split("?")[0]
        if path == "/":
            title = self.room.title.replace("&", "&amp;").replace("<", "&lt;")
            self._send(HTTPStatus.OK, PAGE.format(title=title).encode(), "text/html")
        elif path == "/state":
            self._json(HTTPStatus.OK, self.room.snapshot())
        else:
            self._json(HTTPStatus.NOT_FOUND, {"error": "not found"})

    def _body(self) -> bytes | None:
        """The request body, or None after answering 411/413 (the connection is then closed)."""
        try:
            length = int(self.headers.get("Content-Length", ""))
        except ValueError:
            length = -1
        if length < 0:
            self.close_connection = True
            self._json(HTTPStatus.LENGTH_REQUIRED, {"error": "Content-Length required"})
            return None
        if length > MAX_BODY:
            self.close_connection = True
            self._discard(length)
            self._json(HTTPStatus.REQUEST_ENTITY_TOO_LARGE, {"error": f"at most {MAX_BODY} bytes"})
            return None
        try:
            return self.rfile.read(length)
        except OSError:  # the socket's timeout passed before the body came
            self.close_connection = True
            return None

    def _discard(self, length: int, limit: int = 1 << 20) -> None:
        """Reads and drops up to `limit` bytes of a body too large to keep, so that the client,
        still sending, reads the 413 rather than a reset connection."""
        left = min(length, limit)
        try:
            while left > 0:
                chunk = self.rfile.read(min(left, 65536))
                if not chunk:
                    return
                left -= len(chunk)
        except OSError:  # the client gave up, or the socket's timeout passed
            return

    def do_POST(self):
        path = self.path.split("?")[0]
        if path not in ("/join", "/report", "/codes"):
            self._json(HTTPStatus.NOT_FOUND, {"error": "not found"})
            return
        body = self._body()
        if body is None:
            return
        try:
            if path == "/codes":
                names = self.room.receive_codes(body.decode("utf-8", errors="replace"))
                self._json(HTTPStatus.OK, {"read": names})
            else:
                self._json(HTTPStatus.OK, self.room.receive(json.loads(body)))
        except (ValueError, RecursionError) as error:  # bad JSON (ValueError) or Rejected
            self._json(HTTPStatus.BAD_REQUEST, {"error": checks.shorten(str(error), 200)})
        except OSError as error:  # the data file could not be written: the client may retry
            self._json(
                HTTPStatus.SERVICE_UNAVAILABLE,
                {"error": checks.shorten(f"not saved: {error}", 200)},
            )


class _Server(ThreadingHTTPServer):
    request_queue_size = 128  # 30 participants reporting at once are all let in
    daemon_threads = True


def make_server(room: Room, host: str = "0.0.0.0", port: int = 8765) -> ThreadingHTTPServer:
    """A threaded HTTP server for `room` (port 0: any free one); `serve_forever()` runs it."""
    handler = type("RoomHandler", (Handler,), {"room": room})
    server = _Server((host, port), handler)
    return server


def _address() -> str:
    """This machine's address on the local network, as participants would type it."""
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
            probe.connect(("10.255.255.255", 1))  # sends nothing; picks the outgoing interface
            return probe.getsockname()[0]
    except OSError:
        return socket.gethostname()


def build_parser() -> argparse.ArgumentParser:
    """The command line: `serve` and its options."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    serve = commands.add_parser("serve", help="run the room server")
    serve.add_argument("--port", type=int, default=8765)
    serve.add_argument("--host", default="0.0.0.0", help="the address to listen on")
    serve.add_argument(
        "--data", type=Path, default=Path("room.json"), help="where verdicts are kept"
    )
    serve.add_argument("--codes", type=Path, help="a text file of pasted progress codes, re-read")
    serve.add_argument(
        "--exercise", action="append", default=[], help="an exercise's name, as a column (repeat)"
    )
    serve.add_argument("--title", default="Room", help="the page's title")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    room = Room(args.data, args.exercise, args.codes, args.title)
    server = make_server(room, args.host, args.port)
    url = f"http://{_address()}:{server.server_address[1]}"
    print(
        f"Room page: http://localhost:{server.server_address[1]}/ (verdicts kept in {args.data})",
        flush=True,
    )
    print(
        f'Participants run: from jaxcourse import room; room.join("{url}", "Their name")',
        flush=True,
    )
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
