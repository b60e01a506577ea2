"""The OATH tab over every key, end to end in tmux: two keys served through vpcd, named "daily" and "backup".

A toggles the all-keys view and writes it to the config file; each account shows once with the keys that hold it,
an account ykman put on one key only is marked "not on backup", and stopping one key takes only its marks away while
the other key's codes stay (checked against pyotp). A URI pasted with backup checked in the Add dialog is on both keys
afterwards, as ykman reads each key.
"""

import re
import shlex
import time

import pyotp

from harness import YKTERM, run_ykman, run_ykterm
from test_oath_keys import SECRET, URI, two_keys
from test_tui import Tmux, pytestmark  # noqa: F401  (pytestmark: skipped without tmux)

OTHER = "GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ"


def setup(pcsc, tmp_path, config=""):
    """Both keys answering and named; ykterm's config (and the names) in a directory of the test's own."""
    a, b = two_keys(pcsc, tmp_path)
    env = pcsc.env(XDG_CONFIG_HOME=str(tmp_path / "config"))
    (tmp_path / "config" / "ykterm").mkdir(parents=True, exist_ok=True)
    if config:
        (tmp_path / "config" / "ykterm" / "config.toml").write_text(config)
    run_ykterm("key", "name", "41000001", "daily", env=env)
    run_ykterm("key", "name", "41000002", "backup", env=env)
    return a, b, env


def row(screen, issuer):
    """The line of `issuer`'s account (exactly one: each account shows once)."""
    lines = [line for line in screen.splitlines() if re.match(rf"^..{re.escape(issuer)}\s", line)]
    assert len(lines) == 1, f"{issuer} shows {len(lines)} times:\n{screen}"
    return lines[0]


def shown_code(line):
    m = re.search(r"\s(\d{3}) (\d{3})\s", line)
    assert m, line
    return m.group(1) + m.group(2)


def code_matches(tmux, issuer, secret):
    """The code on screen for `issuer`, read away from a period boundary, is pyotp's."""
    while 1.5 > 30 - time.time() % 30 or 30 - time.time() % 30 > 28.5:
        time.sleep(0.5)  # until the clock is away from a period boundary
    line = row(tmux.screen(), issuer)
    assert shown_code(line) == pyotp.TOTP(secret).now(), line
    return line


def test_each_account_once_with_its_keys_and_a_key_stopped_takes_only_its_marks(pcsc, tmp_path):
    a, b, env = setup(pcsc, tmp_path)
    run_ykman(a.reader, "oath", "accounts", "add", "-i", "Shared", "alice", SECRET, env=env)
    run_ykman(b.reader, "oath", "accounts", "add", "-i", "Shared", "alice", SECRET, env=env)
    run_ykman(a.reader, "oath", "accounts", "add", "-i", "Daily Only", "bob", OTHER, env=env)
    t = Tmux(shlex.quote(str(YKTERM)), env)
    try:
        t.wait_for(r"Shared\s")
        t.send("A")
        screen = t.wait_until(
            lambda s: "Keys: daily · backup" in s and re.search(r"Shared\s.*daily · backup", s)
            and re.search(r"Daily Only\s.*not on backup", s), timeout=20)
        assert "Daily Only" in row(screen, "Daily Only")
        code_matches(t, "Shared", SECRET)
        code_matches(t, "Daily Only", OTHER)
        # The view is remembered for the next start.
        config = (tmp_path / "config" / "ykterm" / "config.toml").read_text()
        assert re.search(r"^\[oath\]\nall_keys = true$", config, re.M), config

        b.stop()
        screen = t.wait_until(
            lambda s: "not on backup" not in s and "backup" not in s.splitlines()[1]
            and re.search(r"Shared\s.*\d{3} \d{3}.*\sdaily\s*$", s, re.M), timeout=20)
        assert "daily · backup" not in screen, screen
        line = code_matches(t, "Shared", SECRET)
        assert line.rstrip().endswith("daily"), line
        code_matches(t, "Daily Only", OTHER)
        t.send("q")
        t.wait_for("EXITED=0")
    finally:
        t.close()


def test_a_pasted_uri_with_backup_checked_is_on_both_keys(pcsc, tmp_path):
    a, b, env = setup(pcsc, tmp_path, config="[oath]\nall_keys = true\nadd_to_all_keys = true\n")
    run_ykman(a.reader, "oath", "accounts", "add", "-i", "Shared", "alice", OTHER, env=env)
    run_ykman(b.reader, "oath", "accounts", "add", "-i", "Shared", "alice", OTHER, env=env)
    t = Tmux(shlex.quote(str(YKTERM)), env)
    try:
        # Opened in the all-keys view, as the config file says.
        t.wait_until(lambda s: "Keys: daily · backup" in s and re.search(r"Shared\s.*daily · backup", s),
                     timeout=20)
        t.paste(URI)
        t.wait_for(r"Also on backup\s+< yes >")
        t.send("Enter")
        t.wait_for(r"Added Backup Test:alice@example.com to daily, backup")
        for key in (a, b):
            assert "Backup Test:alice@example.com" in run_ykman(
                key.reader, "oath", "accounts", "list", env=env).stdout.splitlines(), key.reader
        t.wait_until(lambda s: re.search(r"Backup Test\s.*daily · backup", s))
        code_matches(t, "Backup Test", SECRET)
        t.send("q")
        t.wait_for("EXITED=0")
    finally:
        t.close()


def test_d_compares_the_keys_as_oath_diff_and_delete_takes_the_account_off_both(pcsc, tmp_path):
    a, b, env = setup(pcsc, tmp_path, config="[oath]\nadd_to_all_keys = true\n")
    for key in (a, b):
        run_ykman(key.reader, "oath", "accounts", "add", "-i", "Shared", "alice", SECRET, env=env)
    run_ykman(a.reader, "oath", "accounts", "add", "-i", "Daily Only", "bob", OTHER, env=env)
    run_ykman(b.reader, "oath", "accounts", "add", "-i", "Eight", "dan", "-d", "8", OTHER, env=env)
    run_ykman(a.reader, "oath", "accounts", "add", "-i", "Eight", "dan", OTHER, env=env)
    t = Tmux(shlex.quote(str(YKTERM)), env)
    try:
        t.wait_for(r"Shared\s")
        # D from the one-key view: the all-keys view comes on and the comparison shows what oath diff says.
        t.send("D")
        screen = t.wait_for(r"Only on daily, not on backup:\n\s+Daily Only:bob", timeout=20)
        assert re.search(r"Set up differently \(daily / backup\):\n\s+Eight:dan\s+digits 6 / 8", screen), screen
        assert "Only on backup" not in screen, screen
        assert "Names and settings only" in screen
        diff = run_ykterm("oath", "diff", "daily", "backup", env=env, check=False)
        assert diff.returncode == 1 and "Daily Only:bob: only on daily, not on backup" in diff.stdout, diff.stdout
        t.send("Escape")
        t.wait_until(lambda s: "Keys: daily · backup" in s and re.search(r"Shared\s.*daily · backup", s))
        # Delete Shared from both keys (the list's last account): backup is checked as the config says; Enter asks
        # once more, naming both.
        t.send("End")
        t.send("d")
        t.wait_for(r"Also from backup\s+< yes >")
        t.send("Enter")
        t.wait_for(r"Delete Shared:alice from daily, backup\?")
        t.answer("y")
        t.wait_for(r"Deleted Shared:alice from daily, backup")
        for key in (a, b):
            assert "Shared:alice" not in run_ykman(key.reader, "oath", "accounts", "list", env=env).stdout, key.reader
        t.send("q")
        t.wait_for("EXITED=0")
    finally:
        t.close()
