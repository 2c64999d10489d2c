"""The apps of the apps image (LibreOffice, GIMP, VLC, gedit, gnome-terminal, nautilus,
Thunderbird) on a bare machine, in an OSWorld-mode session: opened as OSWorld's tasks
open them (``/setup/open_file``, ``/setup/launch``), each one's window in the Scene with
what AT-SPI exposes of it, X11 apps through Xwayland, and VLC's HTTP interface where
OSWorld's graders read it.

``make test APPS=1`` installs the apps (CI does); without them these tests are skipped
on a developer's machine and fail under CI, where a skip would hide a missing install."""

from __future__ import annotations

import io
import subprocess
import sys
from pathlib import Path

import pytest
from PIL import Image

from tests.container.documents import pptx
from tests.support import ROOT, Process, Session, free_ports, http, osworld_upload, require_apps, wait_until

pytestmark = pytest.mark.desktop

require_apps("soffice", "gimp", "vlc", "gedit", "gnome-terminal", "nautilus", "thunderbird", "Xwayland", "xprop")

HOME = "/home/user"


def apps_session() -> Session:
    """An OSWorld-mode session without a browser, its OSWorld server and VLC port noted."""
    port, vlc = free_ports(2)
    s = Session(["1280x800"], browser=False,
                extra_args=["--osworld", "--osworld-port", str(port), "--vlc-port", str(vlc)])
    s.osworld = f"http://127.0.0.1:{port}"  # type: ignore[attr-defined]
    s.vlc_port = vlc  # type: ignore[attr-defined]
    return s.start()


@pytest.fixture(scope="module")
def session():
    s = apps_session()
    yield s
    s.stop()


def test_a_fresh_home_holds_what_gimp_leaves_after_its_first_run():
    """OSWorld's GIMP graders read ~/.config/GIMP/2.10, which a used machine has before
    the task: a session's new home has it (made by GIMP itself at install), its own."""
    fresh = Session(["800x600"], browser=False, extra_args=["--user", "deskbox-apphome"]).start()
    try:
        folder = Path(fresh.state["home"]) / ".config" / "GIMP" / "2.10"
        for name in ("pluginrc", "menurc", "unitrc", "parasiterc"):
            assert (folder / name).is_file(), sorted(p.name for p in folder.iterdir()) if folder.exists() else folder
            assert (folder / name).stat().st_uid == fresh.state["user"]["uid"], name
        assert not (folder / "CrashLog").exists()
    finally:
        fresh.stop()


def upload(session: Session, path: str, data: bytes) -> None:
    osworld_upload(session.osworld, path, data)


def scene(session: Session) -> dict:
    return http("GET", session.scene + "/api/v1/scene").json()


def app_window(session: Session, title_part: str = "", *, app_id: str | None = None, role: str = "",
               name: str = "", timeout: float = 90) -> tuple[dict, list[dict]]:
    """The Scene's window whose title has ``title_part`` (and of ``app_id``), and the
    AT-SPI elements in it, once one of them has ``role`` (Scene role names) and ``name``."""
    seen: list = []

    def find():
        s = scene(session)
        seen[:] = [(w["app_id"], w["title"]) for app in s["apps"] for w in app["windows"]]
        for app in s["apps"]:
            for window in app["windows"]:
                if title_part in window["title"] and app_id in (None, window["app_id"]):
                    elements = [e for e in s["ax"] if e["window_id"] == window["id"] and e["source"] == "atspi"]
                    if any(role in ("", e["role"]) and name in ("", e["name"]) for e in elements):
                        return window, elements
        return None
    try:
        return wait_until(find, timeout, 0.5,
                          what=f"a window *{title_part}* ({app_id}) with {role} {name!r} in the Scene")
    except AssertionError as exc:
        raise AssertionError(f"{exc}; the Scene's windows last: {seen}") from None


def close_app(session: Session, name: str) -> None:
    """The app ended, and gone once this returns, its windows too: one still exiting
    keeps what it holds (VLC its HTTP port, and the next VLC then starts without its HTTP
    interface), and a window left beside the next test's app halves its width. ``name``
    is the process name as pgrep sees it, which for an app started through a link is the
    link's (``gimp``, not ``gimp-2.10``): a name that matches nothing fails here rather
    than leaving the app running."""
    pids = session_pids(session, name)
    assert pids, f"no process named {name!r} runs in this session"
    http("POST", session.osworld + "/setup/execute", {"command": ["pkill", "-x", name], "shell": False})
    wait_until(lambda: not session_pids(session, name), 30, 0.2, what=f"this session's {name} gone")

    def windows_left() -> list:
        return [w for w in http("GET", session.desktopd + "/api/v1/tree").json()["windows"] if w.get("pid") in pids]
    wait_until(lambda: not windows_left(), 10, 0.2, what=f"the windows of {name} {sorted(pids)} gone")


def close_discarding_changes(session: Session) -> None:
    """Close LibreOffice's modified document as a person would: the window's close asks
    whether to save, and "Don't Save", clicked by its Scene id, closes the dialog and the
    window. (SIGTERM or SIGKILL would leave a Document Recovery dialog for the next
    start, in front of the next document.)"""
    resp = http("POST", session.osworld + "/setup/execute",
                {"command": ["swaymsg", '[app_id="^libreoffice"] kill'], "shell": False})
    assert resp.status == 200, resp.body[:300]
    dont_save = "Don\u2019t Save"  # LibreOffice's label, with its typographic apostrophe
    _, elements = app_window(session, "Save Document?", app_id="soffice", role="button", name=dont_save, timeout=30)
    button = next(e for e in elements if e["name"] == dont_save)
    resp = http("POST", session.scene + "/api/v1/act", {"target": button["id"], "action": "click"})
    assert resp.status == 200 and resp.json()["ok"], resp.body[:300]
    wait_until(lambda: not any("LibreOffice" in w["title"] or w["app_id"] == "soffice"
                               for a in scene(session)["apps"] for w in a["windows"]),
               30, 0.5, what="the dialog and LibreOffice's window closed")
    wait_until(lambda: not office_running(session), 30, 0.5, what="this session's soffice.bin gone")


def session_pids(session: Session, name: str) -> set[int]:
    """This session's processes named ``name`` (another session's may run on a
    developer's machine: told apart by the runtime folder in their environment)."""
    runtime = f"XDG_RUNTIME_DIR={session.state['env']['XDG_RUNTIME_DIR']}".encode()
    found = set()
    for pid in subprocess.run(["pgrep", "-x", name], capture_output=True, text=True).stdout.split():
        try:
            with open(f"/proc/{pid}/environ", "rb") as f:
                if runtime in f.read().split(b"\0"):
                    found.add(int(pid))
        except OSError:
            continue
    return found


def office_running(session: Session) -> bool:
    """Whether this session's LibreOffice still runs."""
    return bool(session_pids(session, "soffice.bin"))


def xlsx() -> bytes:
    from openpyxl import Workbook

    book = Workbook()
    sheet = book.active
    sheet.title = "Data"
    for row in range(1, 21):
        for col in range(1, 6):
            sheet.cell(row=row, column=col, value=row * col)
    sheet["G1"] = "=SUM(A1:A3)"
    out = io.BytesIO()
    book.save(out)
    return out.getvalue()


def docx() -> bytes:
    from docx import Document

    doc = Document()
    doc.add_paragraph("The first paragraph of the test document, in plain type.")
    doc.add_heading("Quarterly notes", level=1)
    doc.add_paragraph("The last paragraph, below the heading.")
    out = io.BytesIO()
    doc.save(out)
    return out.getvalue()


def test_open_file_of_a_spreadsheet_opens_calc_focused_with_its_menus_in_the_scene(session):
    upload(session, f"{HOME}/Desktop/numbers.xlsx", xlsx())
    resp = http("POST", session.osworld + "/setup/open_file", {"path": "~/Desktop/numbers.xlsx"}, timeout=120)
    assert resp.status == 200, resp.body[:300]
    window, elements = app_window(session, "numbers.xlsx - LibreOffice Calc", role="cell", name="B2")
    assert window["focused"], window
    assert ("menu", "File") in {(e["role"], e["name"]) for e in elements}
    # The sheet's visible cells that hold something, named and valued as Calc shows them.
    cells = {e["name"]: e for e in elements if e["role"] == "cell"}
    assert cells["B2"]["value"] == "4" and cells["E20"]["value"] == "100", sorted(cells)[:10]
    # Typed into by id: the click lands on the cell (its box is where Calc draws it).
    resp = http("POST", session.scene + "/api/v1/act", {"target": cells["C3"]["id"], "action": "type", "text": "777\n"})
    assert resp.status == 200 and resp.json()["ok"], resp.body[:300]

    def c3() -> str | None:
        s = http("GET", session.scene + "/api/v1/scene?mode=agent-turn").json()
        return next((e["value"] for e in s["ax"] if e["id"] == cells["C3"]["id"]), None)
    wait_until(lambda: c3() == "777", 15, 0.5, what="C3 reading 777 after typing into it by id")
    # The active cell is focused and has its formula, whole (as the formula bar shows it).
    resp = http("POST", session.scene + "/api/v1/act", {"target": cells["G1"]["id"], "action": "click"})
    assert resp.status == 200 and resp.json()["ok"], resp.body[:300]

    def g1() -> dict | None:
        s = http("GET", session.scene + "/api/v1/scene?mode=agent-turn").json()
        return next((e for e in s["ax"] if e["id"] == cells["G1"]["id"] and "focused" in e["states"]), None)
    active = wait_until(g1, 15, 0.5, what="G1 focused after a click on it by id")
    assert active["value"] == "6" and active["formula"] == "=SUM(A1:A3)", active
    assert "formula" not in cells["B2"], cells["B2"]
    # A text longer than its cell is drawn across its empty neighbours: changing its end
    # changes none of its own cell's pixels, and the next agent-turn reads it all the same.
    def h5() -> dict | None:
        s = http("GET", session.scene + "/api/v1/scene?mode=agent-turn").json()
        return next((e for e in s["ax"] if e["role"] == "cell" and e["name"] == "H5"
                     and e["window_id"] == window["id"]), None)

    for keys, text in ((["Right", "Down", "Down", "Down", "Down"], "Overflowing text, first take"),  # G1 -> H5
                       (["Up"], "Overflowing text, second take")):  # H6 -> H5
        for key in keys:
            session.keyboard(action="key", keys=key)
        # Calc moves its cursor after it has taken the keys that follow (typed at once,
        # the text landed in H1): as an agent would, look before typing.
        wait_until(lambda: "focused" in ((h5() or {}).get("states") or ()), 15, 0.3, what="H5 active")
        session.keyboard(action="type", text=text + "\n")
        wait_until(lambda text=text: (h5() or {}).get("value") == text, 15, 0.3, what=f"H5 reading {text!r}")
    # Held still (no pixel of its window changed, no AT-SPI event from LibreOffice), Calc
    # is not walked again: an agent-turn gives its last walk, cells and all; what is
    # typed next is read at the next turn.
    def kept() -> dict | None:
        s = http("GET", session.scene + "/api/v1/scene?mode=agent-turn").json()
        return s if "atspi_walk:soffice" not in s["timings_ms"] and s["sources"]["atspi"] is None else None

    s = wait_until(kept, 15, 0.3, what="an agent-turn that gives Calc's last walk")
    assert {"B2", "C3", "H5"} <= {e["name"] for e in s["ax"] if e["role"] == "cell" and e["window_id"] == window["id"]}
    session.keyboard(action="type", text="after a kept turn\n")  # into H6
    wait_until(lambda: any(e["role"] == "cell" and e["name"] == "H6" and e.get("value") == "after a kept turn"
                           for e in http("GET", session.scene + "/api/v1/scene?mode=agent-turn").json()["ax"]),
               15, 0.3, what="H6 read after the kept turns")
    # OSWorld's /accessibility lists the sheet's visible cells as OSWorld's server does,
    # found by a grader's selector, at the box the Scene gives (display pixels).
    import lxml.etree
    from lxml.cssselect import CSSSelector

    resp = http("GET", session.osworld + "/accessibility", timeout=60)
    assert resp.status == 200, resp.body[:300]
    tree = lxml.etree.fromstring(resp.json()["AT"].encode())
    found = CSSSelector('application[name="soffice"] table-cell[name="B2"]')(tree)
    assert len(found) == 1 and found[0].text == "4", [lxml.etree.tostring(f)[:200] for f in found]
    cp = "{https://accessibility.ubuntu.example.org/ns/component}"
    x, y = (int(v) for v in found[0].get(cp + "screencoord").strip("()").split(","))
    assert abs(x - cells["B2"]["bbox"][0]) <= 2 and abs(y - cells["B2"]["bbox"][1]) <= 2, (x, y, cells["B2"])
    val = "{https://accessibility.ubuntu.example.org/ns/value}"
    assert {found[0].get(val + k) is not None for k in ("min", "max")} == {True}, found[0].attrib

    def cells_of(xml: str) -> dict:
        return {c.get("name"): (dict(c.attrib), c.text) for c in
                CSSSelector('application[name="soffice"] table-cell')(lxml.etree.fromstring(xml.encode()))}

    def read() -> tuple[dict, str]:
        """The sheet's cells in /accessibility, and how it was read (Server-Timing)."""
        answer = http("GET", session.osworld + "/accessibility", timeout=60)
        assert answer.status == 200, answer.body[:300]
        return cells_of(answer.json()["AT"]), answer.headers.get("server-timing", "")

    def read_until(ok, what: str) -> tuple[dict, str]:
        return wait_until(lambda: (lambda found: found if ok(*found) else None)(read()), 15, 0.3, what=what)

    # While no object of its last read sends an AT-SPI event, LibreOffice gives that read
    # again (Server-Timing names it), the same tree; the pointer moved over the window
    # changes nothing the read lists.
    assert len(cells_of(resp.json()["AT"])) > 20
    session.pointer(action="move", x=cells["C3"]["bbox"][0] + 5, y=cells["C3"]["bbox"][1] + 5)
    kept, _ = read_until(lambda _, timing: 'kept;desc="soffice:' in timing, "LibreOffice's last read given again")
    again, timing = read()
    assert 'kept;desc="soffice:' in timing and again == kept, [(k, kept.get(k), v) for k, v in again.items()
                                                                 if kept.get(k) != v][:3]
    # What is typed is read at the next call, and every cell has its Value bounds (asked
    # once while a cell lives) in that new read.
    session.keyboard(action="type", text="read again\n")  # into H7; H8 is active then
    typed, timing = read_until(lambda cells, _: (cells.get("H7") or ({}, ""))[1] == "read again",
                               "H7 in /accessibility after typing into it")
    assert "kept" not in timing, timing
    assert all(attrs.get(val + "min") is not None for attrs, _ in typed.values()), typed
    assert {k: v for k, v in typed.items() if k not in ("H7", "H8")} == \
        {k: v for k, v in kept.items() if k not in ("H7", "H8")}
    # Scrolled, the sheet shows other rows: its events tell the read to walk it again.
    cx, cy = cells["C3"]["bbox"][:2]
    session.pointer(action="scroll", x=cx + 5, y=cy + 5, dy=3)
    _, timing = read_until(lambda cells, _: cells and "A1" not in cells, "row 1 scrolled out of /accessibility")
    assert "kept" not in timing, timing
    session.pointer(action="scroll", x=cx + 5, y=cy + 5, dy=-3)
    # Every element's box lies in its window (display-local pixels).
    wx, wy, ww, wh = window["bounds"]
    for e in elements:
        x, y, w, h = e["bbox"]
        assert wx - 1 <= x and x + w <= wx + ww + 1 and wy - 1 <= y and y + h <= wy + wh + 1, e
    close_discarding_changes(session)


@pytest.mark.parametrize("app", ["calc", "writer"])
def test_a_libreoffice_read_keeping_what_did_not_change_is_the_read_from_scratch(session, app):
    """OSWorld's server gives LibreOffice's last read again while nothing it listed sent an
    AT-SPI event, and reads it again taking its closed menus while they sent none
    (deskbox.atspi.full). After each kind of action an agent takes, that read is the one a
    reader made for the occasion gives, node for node, once the desktop holds still
    (tests/apps/full_reads.py)."""
    name, data, title, role, label = {
        "calc": ("reads.xlsx", xlsx(), "reads.xlsx - LibreOffice Calc", "cell", "B2"),
        "writer": ("reads.docx", docx(), "reads.docx - LibreOffice Writer", "togglebutton", "Bold")}[app]
    upload(session, f"{HOME}/Desktop/{name}", data)
    resp = http("POST", session.osworld + "/setup/open_file", {"path": f"~/Desktop/{name}"}, timeout=120)
    assert resp.status == 200, resp.body[:300]
    window, elements = app_window(session, title, role=role, name=label)
    if app == "calc":
        c3 = next(e for e in elements if e["role"] == "cell" and e["name"] == "C3")
        x, y = c3["bbox"][0] + 5, c3["bbox"][1] + 5
    else:
        document = next(e for e in elements if e["role"] == "documenttext")
        x, y = document["bbox"][0] + document["bbox"][2] // 2, document["bbox"][1] + 40
    reads = Process(session, [sys.executable, str(ROOT / "tests" / "apps" / "full_reads.py")], stdin=subprocess.PIPE,
                    cwd=str(ROOT), env=session.app_env(PYTHONPATH=str(ROOT)))

    walks: list[dict] = []  # the keeping reader's, of every comparison

    def agreed(what: str) -> dict:
        last: dict = {}

        def compared() -> dict | None:
            assert reads.proc.stdin is not None
            reads.proc.stdin.write(b"read\n")
            reads.proc.stdin.flush()
            last.update(reads.next(120))
            walks.append(last["walk"])
            return dict(last) if last["still"] and not last["count"] else None
        try:
            return wait_until(compared, 60, 0.5, what=f"the two reads agreeing after {what}")
        except AssertionError as exc:
            raise AssertionError(f"{exc}: {last.get('count')} differences (where, what, keeping, from scratch), "
                                 f"held still: {last.get('still')}:\n"
                                 + "\n".join(map(str, last.get("differences") or ()))) from None

    try:
        agreed(f"{title} opened")
        wx, wy = window["bounds"][:2]
        for what, act in (("a click in the document", lambda: session.pointer(action="click", x=x, y=y)),
                          ("the pointer moved over the toolbar", lambda: session.pointer(action="move", x=wx + 200,
                                                                                         y=wy + 70)),
                          ("a text typed", lambda: session.keyboard(action="type", text="5\n")),
                          ("an undo", lambda: session.keyboard(action="key", keys="ctrl+z")),
                          ("a scroll", lambda: session.pointer(action="scroll", x=x, y=y, dy=3)),
                          ("the menu bar entered", lambda: session.keyboard(action="key", keys="F10")),
                          ("the File menu opened", lambda: session.keyboard(action="key", keys="Down")),
                          ("the menus closed", lambda: session.keyboard(action="key", keys="Escape")),
                          ("the menus closed", lambda: session.keyboard(action="key", keys="Escape")),
                          ("a text typed and kept", lambda: session.keyboard(action="type", text="words\n"))):
            act()
            agreed(what)
        # (Reads compared did keep and take: what is compared is the keeping.)
        assert any(w.get("kept") for w in walks) and any(w.get("taken") for w in walks), walks
    finally:
        reads.stop()
    close_discarding_changes(session)


def test_open_file_of_a_document_opens_writer_and_its_bold_button_clicked_by_id_toggles(session):
    upload(session, f"{HOME}/Documents/notes.docx", docx())
    resp = http("POST", session.osworld + "/setup/open_file", {"path": f"{HOME}/Documents/notes.docx"}, timeout=120)
    assert resp.status == 200, resp.body[:300]
    window, elements = app_window(session, "notes.docx - LibreOffice Writer", role="togglebutton", name="Bold")
    names = {e["name"] for e in elements if e["role"] in ("togglebutton", "button")}
    assert {"Italic", "Underline"} <= names, sorted(names)
    # The document's paragraphs on screen, in reading order, with their text and boxes
    # inside the document, one below the other.
    document = next(e for e in elements if e["role"] == "documenttext")
    paragraphs = [e for e in elements if e["role"] in ("paragraph", "heading") and inside(e["bbox"], document["bbox"])]
    assert [p["value"] for p in paragraphs] == ["The first paragraph of the test document, in plain type.",
                                                "Quarterly notes", "The last paragraph, below the heading."]
    assert [p["role"] for p in paragraphs] == ["paragraph", "heading", "paragraph"]
    assert paragraphs[0]["bbox"][1] < paragraphs[1]["bbox"][1] < paragraphs[2]["bbox"][1]
    # The caret is at the start of the plain paragraph: Bold is off. LibreOffice draws its
    # toolbars itself and reports their boxes 26 px too high; a click at the Scene's box
    # must land on the button all the same (the pointer, not an AT-SPI action).
    bold = next(e for e in elements if e["name"] == "Bold")
    assert "checked" not in bold["states"], bold
    resp = http("POST", session.scene + "/api/v1/act", {"target": bold["id"], "action": "click"})
    assert resp.status == 200 and resp.json()["ok"], resp.body[:300]

    def bold_now() -> dict | None:
        s = http("GET", session.scene + "/api/v1/scene?mode=agent-turn").json()
        return next((e for e in s["ax"] if e["id"] == bold["id"] and "checked" in e["states"]), None)
    wait_until(bold_now, 10, 0.3, what="Bold checked after the click")
    # A menu opened by id shows its items (a closed menu's are not read at all).
    menu = next(e for e in elements if e["role"] == "menu" and e["name"] == "Format")
    resp = http("POST", session.scene + "/api/v1/act", {"target": menu["id"], "action": "click"})
    assert resp.status == 200 and resp.json()["ok"], resp.body[:300]
    _, elements = app_window(session, "notes.docx - LibreOffice Writer", role="menuitem", name="Character...",
                             timeout=15)
    # Its item, clicked by id, opens its dialog, whose Cancel button, clicked by id, closes it.
    item = next(e for e in elements if e["role"] == "menuitem" and e["name"] == "Character...")

    def dialog_open() -> bool:
        return any(w["title"] == "Character" for a in scene(session)["apps"] for w in a["windows"])
    click_menu_item(session, item, dialog_open, "the Character dialog")
    _, dialog = app_window(session, "Character", role="button", name="Cancel", timeout=30)
    cancel = next(e for e in dialog if e["role"] == "button" and e["name"] == "Cancel")
    resp = http("POST", session.scene + "/api/v1/act", {"target": cancel["id"], "action": "click"})
    assert resp.status == 200 and resp.json()["ok"], resp.body[:300]
    wait_until(lambda: not any(w["title"] == "Character" for a in scene(session)["apps"] for w in a["windows"]),
               15, 0.5, what="the Character dialog closed by its Cancel button")
    # A submenu, by id: Format > Text opens to the right of its item, where the Scene
    # places its items; its Italic, clicked by id, sets the toolbar's Italic.
    title = "notes.docx - LibreOffice Writer"
    _, elements = app_window(session, title, role="menu", name="Format")
    italic = next(e for e in elements if e["role"] == "togglebutton" and e["name"] == "Italic")
    assert "checked" not in italic["states"], italic
    menu = next(e for e in elements if e["role"] == "menu" and e["name"] == "Format")
    assert http("POST", session.scene + "/api/v1/act", {"target": menu["id"], "action": "click"}).json()["ok"]
    _, elements = app_window(session, title, role="menu", name="Text", timeout=15)
    text = next(e for e in elements if e["role"] == "menu" and e["name"] == "Text")
    assert http("POST", session.scene + "/api/v1/act", {"target": text["id"], "action": "click"}).json()["ok"]
    _, elements = app_window(session, title, role="menuitemcheckbox", name="Italic", timeout=15)
    item = next(e for e in elements if e["role"] == "menuitemcheckbox" and e["name"] == "Italic")
    x, y, w, h = text["bbox"]
    assert item["bbox"][0] >= x + w - 10 and abs(item["bbox"][1] - (y + h)) <= 2, (item, text)
    # The open submenu's item is highlighted from exactly where its box starts.
    shot = Image.open(io.BytesIO(http("GET", session.desktopd + "/api/v1/screenshot").body)).convert("RGB")

    def highlighted(px: int, py: int) -> bool:
        r, g, b = shot.getpixel((px, py))
        return b > 180 and b - r > 80  # (Adwaita's selection blue)
    top = next(py for py in range(max(0, y - 12), y + h) if highlighted(x + w // 2, py))
    left = next(px for px in range(max(0, x - 12), x + w) if highlighted(px, y + h // 2))
    assert abs(top - y) <= 2 and abs(left - x) <= 2, ((left, top), text["bbox"])

    def italic_on() -> bool:
        return any(e["role"] == "togglebutton" and e["name"] == "Italic" and "checked" in e["states"]
                   for e in scene(session)["ax"])
    click_menu_item(session, item, italic_on, "Italic set through Format > Text")
    # As fast as an agent can: the item clicked by id as soon as a Scene shows it, some
    # 0.2 s after the click that opened its menu. GTK drops a click that soon (measured:
    # 4 of 4 dropped); the actor waits the half second out, and the dialog opens.
    _, elements = app_window(session, title, role="menu", name="Format")
    menu = next(e for e in elements if e["role"] == "menu" and e["name"] == "Format")
    resp = http("POST", session.scene + "/api/v1/act", {"target": menu["id"], "action": "click", "settle_ms": 0})
    assert resp.status == 200 and resp.json()["ok"], resp.body[:300]
    item = wait_until(lambda: next((e for e in http("GET", session.scene + "/api/v1/scene?mode=active").json()["ax"]
                                    if e["role"] == "menuitem" and e["name"] == "Paragraph..."), None),
                      10, 0.02, what="Format's Paragraph... in the Scene")
    resp = http("POST", session.scene + "/api/v1/act", {"target": item["id"], "action": "click"})
    assert resp.status == 200 and resp.json()["ok"], resp.body[:300]
    wait_until(lambda: any(w["title"] == "Paragraph" for a in scene(session)["apps"] for w in a["windows"]),
               5, 0.3, what="the Paragraph dialog, its menu item clicked at once")
    session.keyboard(action="key", keys="Escape")
    wait_until(lambda: not any(w["title"] == "Paragraph" for a in scene(session)["apps"] for w in a["windows"]),
               15, 0.5, what="the Paragraph dialog closed by Escape")
    close_discarding_changes(session)


def click_menu_item(session: Session, item: dict, done, what: str) -> None:
    """Click a menu item by id: ``done()`` within 5 s. (GTK drops a click on an item
    within half a second of the one that opened its menu: the actor waits that out.)"""
    resp = http("POST", session.scene + "/api/v1/act", {"target": item["id"], "action": "click"})
    assert resp.status == 200 and resp.json()["ok"], resp.body[:300]
    wait_until(done, 5, 0.3, what=what)


def inside(box, outer, slack: int = 1) -> bool:
    x, y, w, h = box
    ox, oy, ow, oh = outer
    return ox - slack <= x and x + w <= ox + ow + slack and oy - slack <= y and y + h <= oy + oh + slack


def test_open_file_of_a_presentation_opens_impress_with_its_slide_thumbnails_clicked_by_id(session):
    upload(session, f"{HOME}/Documents/deck.pptx", pptx())
    resp = http("POST", session.osworld + "/setup/open_file", {"path": f"{HOME}/Documents/deck.pptx"}, timeout=120)
    assert resp.status == 200, resp.body[:300]
    window, elements = app_window(session, "deck.pptx - LibreOffice Impress", role="group", name="Slide 3")
    # The slide pane's thumbnails, top to bottom, the first selected.
    pane = next(e for e in elements if e["name"] == "Slides View")
    thumbs = [e for e in elements if e["name"] in ("Slide 1", "Slide 2", "Slide 3") and inside(e["bbox"], pane["bbox"])]
    assert [t["name"] for t in thumbs] == ["Slide 1", "Slide 2", "Slide 3"], thumbs
    assert thumbs[0]["bbox"][1] < thumbs[1]["bbox"][1] < thumbs[2]["bbox"][1]
    assert "selected" in thumbs[0]["states"]
    # The slide shown in the main view: its title and body as paragraphs.
    texts = {e["value"] for e in elements if e["role"] == "paragraph"}
    assert {"Slide title 1", "Body of slide 1"} <= texts, sorted(t for t in texts if t)
    # The second thumbnail, clicked by id, brings its slide into the main view.
    resp = http("POST", session.scene + "/api/v1/act", {"target": thumbs[1]["id"], "action": "click"})
    assert resp.status == 200 and resp.json()["ok"], resp.body[:300]
    wait_until(lambda: any(e["role"] == "paragraph" and e["value"] == "Slide title 2"
                           for e in scene(session)["ax"] if e["window_id"] == window["id"]),
               15, 0.5, what="slide 2's title in the main view after its thumbnail was clicked")
    resp = http("POST", session.osworld + "/setup/execute",
                {"command": ["swaymsg", '[app_id="^libreoffice"] kill'], "shell": False})
    assert resp.status == 200, resp.body[:300]
    wait_until(lambda: not office_running(session), 30, 0.5, what="this session's soffice.bin gone")
