"""The room server (`jaxcourse.room`): real HTTP clients on loopback, an ephemeral port, bounded
waits, and the instructor's page in headless Chromium."""

import base64
import http.client
import json
import re
import shlex
import socket
import subprocess
import threading
import time
import urllib.error
import urllib.request
import zlib
from pathlib import Path

import pytest
from bs4 import BeautifulSoup
from test_site import find_browser

from jaxcourse import checks, ladder, room
from jaxcourse.exercises import jit as jit_exercises
from tools import room as room_tool

ROOT = Path(__file__).resolve().parents[1]

AT = ladder.exercise_name(jit_exercises.check_apply_boundary)
SHRINK = ladder.exercise_name(jit_exercises.check_shrink_path)
EXERCISES = [AT, SHRINK]


class Running:
    """A room server on 127.0.0.1 in a thread, stopped by `stop()`."""

    def __init__(self, data, codes=None, exercises=EXERCISES):
        self.room = room.Room(data, exercises, codes, title="Room: jit")
        self.received = []  # every message `receive` was given, as the client sent it
        receive = self.room.receive

        def recording(message, now=None):
            self.received.append(message)
            return receive(message, now)

        self.room.receive = recording
        self.server = room.make_server(self.room, "127.0.0.1", 0)
        self.port = self.server.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def stop(self):
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=10)
        assert not self.thread.is_alive()

    def state(self):
        with urllib.request.urlopen(self.url + "/state", timeout=5) as response:
            return json.loads(response.read())

    def rows(self):
        return {p["name"]: p["verdicts"] for p in self.state()["participants"]}

    def raw(self, method, path, body=b"", headers=None):
        """(status, JSON answer) of one request over a fresh connection."""
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
        try:
            connection.request(method, path, body=body, headers=headers or {})
            response = connection.getresponse()
            return response.status, json.loads(response.read() or b"{}")
        finally:
            connection.close()


@pytest.fixture(autouse=True)
def fresh_session(monkeypatch):
    """Verdicts, hints and solutions that another test in this process caused are not this
    test's: `room.join` reports the session's verdicts so far."""
    monkeypatch.setattr(ladder, "_USED", {})
    monkeypatch.setattr(checks, "_VERDICTS", [])


@pytest.fixture
def running(tmp_path):
    server = Running(tmp_path / "room.json")
    yield server
    room.leave()
    server.stop()


def wait_for(condition, seconds=10.0):
    """Polls `condition` until it holds, at most `seconds`; returns its last value."""
    deadline = time.monotonic() + seconds
    while True:
        value = condition()
        if value or time.monotonic() > deadline:
            return value
        time.sleep(0.05)


def verdict(name, exercise, state, hints=0, solution=False):
    return {
        "name": name,
        "exercise": exercise,
        "state": state,
        "hints": hints,
        "solution": solution,
    }


@pytest.mark.slow  # about 6 s here: each of the 90 posts is written to disk and synced
def test_thirty_participants_report_at_once(running):
    """30 clients, started together, each join and send two verdicts; none is lost, and the data
    file on disk holds them all."""
    start = threading.Barrier(30)
    errors = []

    def participant(i):
        try:
            start.wait(timeout=10)
            name = f"P{i:02d}"
            room.post(running.url + "/join", {"name": name}, timeout=10)
            room.post(running.url + "/report", verdict(name, AT, room.TRIED, hints=1), timeout=10)
            state = room.PASSED if i % 2 else room.TRIED
            room.post(running.url + "/report", verdict(name, AT, state), timeout=10)
        except Exception as error:  # reported below, with the participant
            errors.append((i, error))

    threads = [threading.Thread(target=participant, args=(i,)) for i in range(30)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    assert not any(thread.is_alive() for thread in threads)
    assert errors == []
    rows = running.rows()
    assert sorted(rows) == [f"P{i:02d}" for i in range(30)]
    for i in range(30):
        entry = rows[f"P{i:02d}"][AT]
        assert entry["state"] == (room.PASSED if i % 2 else room.TRIED)
        assert entry["hints"] == 1, "the help shown is kept by a later verdict without it"
    stored = json.loads((running.room.data).read_text())["participants"]
    assert len(stored) == 30


def test_bad_posts_are_refused_and_the_server_goes_on(running):
    good = json.dumps(verdict("Ada", AT, room.PASSED)).encode()
    cases = {
        "not JSON": (b"{name: Ada", 400),
        "not an object": (b"[1, 2]", 400),
        "not UTF-8": (b"\xff\xfe{}", 400),
        "no name": (json.dumps({"exercise": AT}).encode(), 400),
        "an empty name": (json.dumps({"name": "  "}).encode(), 400),
        "a name too long": (json.dumps({"name": "x" * 41}).encode(), 400),
        "an unknown state": (json.dumps({**verdict("Ada", AT, "done")}).encode(), 400),
        "hints as a boolean": (
            json.dumps({**verdict("Ada", AT, room.TRIED), "hints": True}).encode(),
            400,
        ),
        "deeply nested": (b"[" * 8000 + b"]" * 8000, 400),
        "oversized": (json.dumps({"name": "Ada", "pad": "x" * 20_000}).encode(), 413),
    }
    for what, (body, status) in cases.items():
        answer = running.raw("POST", "/report", body, {"Content-Type": "application/json"})
        assert answer[0] == status, what
        assert "error" in answer[1], what
    assert running.raw("POST", "/nowhere", good)[0] == 404
    assert running.raw("GET", "/nowhere")[0] == 404

    # no Content-Length (a chunked body): 411, not a thread waiting for ever
    with socket.create_connection(("127.0.0.1", running.port), timeout=10) as raw:
        raw.sendall(
            b"POST /report HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"
        )
        assert raw.recv(100).startswith(b"HTTP/1.0 411")

    assert running.rows() == {}, "nothing refused was kept"
    extra = {**verdict("Ada", AT, room.PASSED), "code": "def apply_boundary(): ...", "x": [1]}
    assert running.raw("POST", "/report", json.dumps(extra).encode()) == (200, {"ok": True})
    stored = json.loads(running.room.data.read_text())["participants"]["ada"]["verdicts"][AT]
    assert set(stored) == {"state", "hints", "solution", "at"}, "unknown fields are not kept"
    assert running.rows()["Ada"][AT]["state"] == room.PASSED


def test_a_participant_who_reconnects_keeps_one_row(running):
    room.post(running.url + "/join", {"name": "Ada Lovelace"})
    room.post(running.url + "/report", verdict("Ada Lovelace", AT, room.PASSED, hints=2))
    room.post(running.url + "/join", {"name": "  ada   lovelace "})  # a new kernel, retyped
    room.post(running.url + "/report", verdict("ada lovelace", SHRINK, room.TRIED))
    rows = running.rows()
    assert list(rows) == ["Ada Lovelace"], "the first spelling is the row's name"
    assert rows["Ada Lovelace"][AT]["state"] == room.PASSED
    assert rows["Ada Lovelace"][AT]["hints"] == 2
    assert rows["Ada Lovelace"][SHRINK]["state"] == room.TRIED


def test_a_data_file_that_is_not_a_rooms_is_never_written_over(tmp_path):
    data = tmp_path / "room.json"
    data.write_text("my notes")
    with pytest.raises(SystemExit, match="not a room's data file"):
        room.Room(data)
    assert data.read_text() == "my notes"


def test_a_restart_loses_no_verdict(tmp_path):
    first = Running(tmp_path / "room.json")
    try:
        for i in range(5):
            room.post(first.url + "/report", verdict(f"P{i}", AT, room.PASSED, hints=i))
        before = first.state()["participants"]
    finally:
        first.stop()
    assert [p.name for p in tmp_path.iterdir()] == ["room.json"], "no temporary file is left"
    second = Running(tmp_path / "room.json")
    try:
        assert second.state()["participants"] == before
        room.post(second.url + "/report", verdict("P0", SHRINK, room.TRIED))
        assert len(second.rows()) == 5
        assert second.rows()["P0"] == {**before[0]["verdicts"], SHRINK: second.rows()["P0"][SHRINK]}
    finally:
        second.stop()


def test_a_progress_code_round_trips_and_the_server_reads_pasted_codes(tmp_path):
    states = {AT: room.PASSED, SHRINK: room.TRIED}
    code = room.encode("Grace", states, now=1000)
    assert code.startswith(room.CODE_PREFIX) and len(code) < 200 and "\n" not in code
    decoded = room.decode(f"  Grace: {code}  ")
    assert decoded["name"] == "Grace" and decoded["at"] == 1000
    assert {r["exercise"]: r["state"] for r in decoded["reports"]} == states
    with pytest.raises(ValueError):
        room.decode(room.CODE_PREFIX + "bm90IHpsaWI")  # base64, but not a code
    for time_field in ("NaN", "1e999", '"soon"'):  # not a time: would break the page's JSON
        payload = f'{{"n": "Grace", "t": {time_field}, "v": {{}}}}'.encode()
        forged = base64.urlsafe_b64encode(zlib.compress(payload)).decode()
        with pytest.raises(ValueError):
            room.decode(room.CODE_PREFIX + forged)

    codes = tmp_path / "codes.txt"
    codes.write_text(f"Shared notes\nGrace {code}\nLin jaxroom1:garbage!!\n")
    server = Running(tmp_path / "room.json", codes=codes)
    try:
        assert server.rows()["Grace"][AT]["state"] == room.PASSED
        # a newer code pasted into the file is read when the file changes
        later = room.encode("Lin", {SHRINK: room.PASSED}, now=2000)
        codes.write_text(codes.read_text() + later + "\n")
        assert wait_for(lambda: "Lin" in server.rows())
        # and a code POSTed to /codes, among other text
        status, answer = server.raw(
            "POST", "/codes", f"pasted: {room.encode('Mo', states)}".encode()
        )
        assert (status, answer) == (200, {"read": ["Mo"]})
        # a live report is newer than Grace's old code: reading the code again changes nothing
        room.post(server.url + "/report", verdict("Grace", SHRINK, room.PASSED))
        server.raw("POST", "/codes", code.encode())
        assert server.rows()["Grace"][SHRINK]["state"] == room.PASSED
        assert sorted(server.rows()) == ["Grace", "Lin", "Mo"]
        # a code from a clock far ahead does not lock the row against later live reports
        ahead = room.encode("Mo", {AT: room.TRIED}, now=time.time() + 86400)
        server.raw("POST", "/codes", ahead.encode())
        room.post(server.url + "/report", verdict("Mo", AT, room.PASSED))
        assert server.rows()["Mo"][AT]["state"] == room.PASSED
    finally:
        server.stop()


def answer_with_a_secret(u, left, right):
    secret_marker_xyz = 1  # noqa: F841 - a name no report may contain
    return u


def test_the_checkers_report_verdicts_and_hints_never_code(running, capsys):
    room.join(running.url, "Ada")
    assert "Ada" in capsys.readouterr().out
    stub = jit_exercises.check_apply_boundary(None)
    assert not stub.tried
    wrong = jit_exercises.check_apply_boundary(answer_with_a_secret)
    assert wrong.tried and not wrong.passed
    jit_exercises.check_apply_boundary.hint(2)
    assert wait_for(lambda: running.rows().get("Ada", {}).get(AT, {}).get("hints") == 2)
    entry = running.rows()["Ada"][AT]
    assert entry["state"] == room.TRIED and entry["solution"] is False
    sent = json.dumps(running.received)
    assert "secret_marker_xyz" not in sent and "return u" not in sent
    allowed = {"name", "exercise", "state", "hints", "solution"}
    assert all(set(message) <= allowed for message in running.received), running.received
    states = [m.get("state") for m in running.received if "exercise" in m]
    assert states[:2] == [room.NOT_TRIED, room.TRIED] and states[-1] is None
    assert capsys.readouterr().out == "", "a report that reached the server prints nothing"


def test_an_unreachable_server_neither_breaks_nor_slows_a_notebook(capsys):
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    room.join(f"http://127.0.0.1:{port}", "Ada", timeout=0.5)
    sender = room._SENDER
    started = time.monotonic()
    for _ in range(3):
        assert not jit_exercises.check_apply_boundary(None)
    assert time.monotonic() - started < 1.0
    room.leave()
    sender.thread.join(timeout=10)
    assert not sender.thread.is_alive()
    printed = [  # this server's: a sender of an earlier test may still be finishing
        line
        for line in capsys.readouterr().out.splitlines()
        if "could not report" in line and f":{port} " in line
    ]
    assert len(printed) == 1, "one line at most, however many reports failed"


def test_a_listener_that_raises_loses_no_verdict():
    def broken(verdict):
        raise RuntimeError("no network")

    checks._LISTENERS.append(broken)
    ladder._LISTENERS.append(broken)
    try:
        verdict = jit_exercises.check_apply_boundary(None)
        assert checks.session_verdicts()[-1] is verdict
        assert jit_exercises.check_apply_boundary.hint(1).title.startswith("Hint 1")
    finally:
        checks._LISTENERS.remove(broken)
        ladder._LISTENERS.remove(broken)


def test_the_instructor_page_shows_each_participant_and_state(running, tmp_path):
    browser = find_browser()
    if browser is None:
        pytest.fail("no headless browser found: install Debian's chromium")
    room.post(running.url + "/report", verdict("Ada", AT, room.PASSED, hints=1))
    room.post(running.url + "/report", verdict("Ada", SHRINK, room.TRIED, solution=True))
    room.post(running.url + "/report", verdict("<b>Bob</b>", AT, room.TRIED, hints=2))
    room.post(running.url + "/join", {"name": "Cy"})
    room.post(running.url + "/report", verdict("Cy", "Exercise 9 (not in this block)", room.PASSED))
    dom = subprocess.run(
        [
            browser,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            f"--user-data-dir={tmp_path / 'profile'}",
            "--virtual-time-budget=5000",
            "--dump-dom",
            running.url + "/",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    ).stdout
    page = BeautifulSoup(dom, "html.parser")
    table = page.find("table", id="room")
    header = [th.get_text() for th in table.thead.find_all("th")]
    assert header == ["participant", AT, SHRINK, "last report"]
    rows = {
        tr.find_all("td")[0].get_text(): [td.get_text() for td in tr.find_all("td")[1:3]]
        for tr in table.tbody.find_all("tr")
    }
    assert rows == {
        "Ada": ["passed (1 hint)", "not yet (solution)"],
        "<b>Bob</b>": ["not yet (2 hints)", "not tried"],  # a name is text, never markup
        "Cy": ["not tried", "not tried"],
    }
    ada = next(tr for tr in table.tbody.find_all("tr") if tr.td.get_text() == "Ada")
    classes = [td["class"] for td in ada.find_all("td")[1:3]]
    assert classes == [["passed"], ["tried"]]
    footer = [td.get_text() for td in table.tfoot.find_all("td")]
    assert footer[:3] == [
        "3 participants",
        "1 passed, 1 not yet, 1 not tried",
        "0 passed, 1 not yet, 2 not tried",
    ]
    assert page.find("title").get_text() == "Room: jit"


def test_the_instructor_kit_documents_the_commands_as_they_are():
    """The server command on instructors.qmd parses, its block's exercises are found, and the
    participants' two calls are the module's."""
    text = (ROOT / "instructors.qmd").read_text()
    commands = re.findall(r"^python -m tools\.room .*$", text, re.MULTILINE)
    assert commands
    for command in commands:
        args, rest = room_tool.build_parser().parse_known_args(shlex.split(command)[3:])
        assert room_tool.exercise_names(args.block)
        options = room.build_parser().parse_args(["serve", *rest])
        assert options.codes and options.data
    for call in re.findall(r"room\.(\w+)\(", text):
        assert callable(getattr(room, call)), call
