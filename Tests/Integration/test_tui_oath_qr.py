"""The TUI's Add dialog and QR codes, in tmux on the virtual key served through pcscd: Ctrl-G makes a secret that
is shown once as a URI and a QR code after adding (the key's codes checked with ykman against pyotp for the secret
on screen), and an image path typed in the URI field is read for its QR code (images made with Debian's qrencode)."""

import base64
import re
import shlex
import shutil
import subprocess
import time

import pyotp
import pytest

from harness import YKTERM, ServedKey, run_ykman
from test_oath_qr import SECRET_A, modules, pixels, side_by_side, write_png
from test_tui import Tmux

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None or shutil.which("qrencode") is None,
                                reason="tmux or qrencode is missing: run `make deps`")


@pytest.fixture
def served(pcsc, tmp_path):
    """A fresh virtual key and ykterm on it in tmux, wide and tall enough for a QR code beside its URI."""
    key = ServedKey(pcsc, slot=0, state=tmp_path / "key.json").start()
    env = pcsc.env(XDG_CONFIG_HOME=str(tmp_path / "config"), HOME=str(tmp_path))
    t = Tmux(f"{shlex.quote(str(YKTERM))} --reader {shlex.quote(key.reader)}", env, columns=170, rows=40)
    try:
        t.wait_for("No accounts")
        yield key, env, t
    finally:
        t.close()
        key.stop()


def drawn_modules(screen, side):
    """The modules of the QR code drawn in half blocks on `screen` (two rows of modules a line), `side` modules
    square with its quiet zone of 4: found by its first dark line and column."""
    lines = screen.splitlines()
    dark = [i for i, line in enumerate(lines) if any(c in "█▀▄" for c in line)]
    top = dark[0] - 2
    left = min(min(line.index(c) for c in "█▀▄" if c in line) for line in lines if any(c in "█▀▄" for c in line)) - 4
    grid = []
    for i in range(top, top + (side + 1) // 2):
        cells = lines[i].ljust(left + side)[left:left + side] if i < len(lines) else " " * side
        grid.append([c in "█▀" for c in cells])
        grid.append([c in "█▄" for c in cells])
    return grid[:side]


def ykman_code(key, env, account):
    out = run_ykman(key.reader, "oath", "accounts", "code", account, env=env).stdout
    m = re.search(rf"^{re.escape(account)}\s+(\d+)\s*$", out, re.M)
    assert m, out
    return m.group(1)


def test_ctrl_g_makes_a_secret_shown_once_as_uri_and_qr_code_that_ykman_agrees_with(served):
    key, env, t = served
    t.send("a")
    t.wait_for("Add account")
    assert "Ctrl-G new secret" in t.screen()
    t.send("C-g")
    # The secret field fills (shown as bullets, never its characters) and the focus goes to the issuer.
    screen = t.wait_for(r"Secret \(Base32\)\s+•{32}\s")
    assert "shown this once" in screen
    t.type("Made")
    t.send("Enter")
    t.type("erin")
    t.send("Enter")
    for _ in range(6):  # secret, type, algorithm, digits, period, counter: to the last field
        t.send("Down")
    t.send("Enter")
    screen = t.wait_for(r"Added Made:erin(.|\n)*Enter or Esc closes")
    uri = re.search(r"otpauth://\S+", screen).group(0)
    parsed = pyotp.parse_uri(uri)
    assert parsed.issuer == "Made" and parsed.name == "erin" and len(base64.b32decode(parsed.secret)) == 20
    # The QR code beside it, in half blocks, is qrencode's code for the URI on screen, module for module.
    assert drawn_modules(screen, len(modules(uri))) == modules(uri), screen
    # The key calculates the code pyotp calculates for the secret on screen.
    before = int(time.time())
    code = ykman_code(key, env, "Made:erin")
    assert code in {parsed.at(before), parsed.at(int(time.time()))}
    # Enter closes it, and it is not shown again.
    t.send("Enter")
    screen = t.wait_gone("Enter or Esc closes")
    assert "otpauth://" not in screen and "Made" in screen


def test_a_small_terminal_says_so_and_shows_the_uri(pcsc, tmp_path):
    key = ServedKey(pcsc, slot=0, state=tmp_path / "key.json").start()
    env = pcsc.env(XDG_CONFIG_HOME=str(tmp_path / "config"))
    t = Tmux(f"{shlex.quote(str(YKTERM))} --reader {shlex.quote(key.reader)}", env, columns=60, rows=20)
    try:
        t.wait_for("No accounts")
        t.send("a")
        t.wait_for("Add account")
        t.send("C-g")
        t.wait_for("•{20}")
        t.type("Small")
        t.send("Enter")
        t.type("sam")
        t.send("Enter")
        for _ in range(6):
            t.send("Down")
        t.send("Enter")
        screen = t.wait_for(r"too small for the QR code(.|\n)*Enter or Esc closes")
        uri = "".join(line.strip() for line in screen.splitlines()
                      if line.strip().startswith("otpauth://") or uri_tail(line))
        parsed = pyotp.parse_uri(uri)
        before = int(time.time())
        assert ykman_code(key, env, "Small:sam") in {parsed.at(before), parsed.at(int(time.time()))}
        # Made larger, the terminal shows the code.
        t.tmux("resize-window", "-t", "0", "-x", "170", "-y", "40")
        t.wait_for("█")
        t.send("Escape")
        t.wait_gone("Enter or Esc closes")
    finally:
        t.close()
        key.stop()


def dialog_text(screen):
    """The words inside the dialog's outline, its lines joined with spaces."""
    inside = [m.group(1).strip() for m in (re.search(r"│(.*)│", line) for line in screen.splitlines()) if m]
    return " ".join(line for line in inside if line)


def uri_tail(line):
    """A line that continues a URI wrapped over lines (no spaces, a parameter's characters)."""
    s = line.strip()
    return bool(s) and " " not in s and re.fullmatch(r"[A-Za-z0-9%&=._~:/?-]+", s) is not None \
        and not s.startswith("otpauth://")


def test_an_image_path_typed_in_the_uri_field_adds_its_account(served, tmp_path):
    key, env, t = served
    uri = f"otpauth://totp/Example:alice@example.com?secret={SECRET_A}&issuer=Example"
    image = tmp_path / "enrol.png"
    subprocess.run(["qrencode", "-o", str(image), uri], check=True)
    t.send("a")
    t.wait_for("Add account")
    # As a file dropped on the terminal: its path in quotes, under the home directory as ~.
    t.type(f"'~/{image.name}'")
    t.wait_for("Enter reads the QR code in this image")
    t.send("Enter")
    # The fields fill in for review, as for a pasted URI; one Enter adds.
    t.wait_for(r"Name\s+alice@example.com")
    t.send("Enter")
    t.wait_for("Added Example:alice@example.com")
    before = int(time.time())
    code = ykman_code(key, env, "Example:alice@example.com")
    totp = pyotp.TOTP(SECRET_A)
    assert code in {totp.at(before), totp.at(int(time.time()))}


def test_an_image_without_one_account_code_is_refused_in_the_dialog(served, tmp_path):
    key, env, t = served
    blank = tmp_path / "blank.png"
    write_png(blank, [bytes([255]) * 120] * 90)
    two = tmp_path / "two.png"
    write_png(two, side_by_side(pixels(modules(f"otpauth://totp/A:a?secret={SECRET_A}")),
                                pixels(modules("otpauth://totp/B:b?secret=GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ"))))
    web = tmp_path / "web.png"
    subprocess.run(["qrencode", "-o", str(web), "https://example.com/enrol"], check=True)
    notes = tmp_path / "notes.txt"
    notes.write_text("not an image")
    t.send("a")
    t.wait_for("Add account")
    for path, words in ((blank, "no QR code found in"), (two, "holds 2 QR codes"),
                        (web, "is not an otpauth:// or otpauth-migration:// URI"),
                        (notes, "is not a PNG or JPEG image"),
                        (tmp_path / "missing.png", "No such file or directory")):
        t.send("C-u")
        t.type(str(path))
        t.send("Enter")
        # The dialog's words, wrapped over its lines.
        screen = t.wait_until(lambda text: words in dialog_text(text))
        assert "Add account" in screen and str(path) in dialog_text(screen).replace(" ", "")
    t.send("Escape")
    t.wait_gone("Add account")
    assert run_ykman(key.reader, "oath", "accounts", "list", env=env).stdout.strip() == ""
