"""A reader that does not answer must not hang ykterm (issue 35, item 6).

Acceptance: with the stuck-reader set-up (two vpcd configurations sharing one driver library, three keys),
`ykterm list` returns within 5 s and names the readers that did not answer; with a stand-in reader that never
answers beside a working key, `list` (and `list --json`) shows the working key and `oath code` reaches it,
within 5 s too. Each ykterm run is killed after 15 s, so a hang fails as an assertion. The set-ups, and
what pcscd and the vpcd driver do in them, are in stuck_readers.py.
"""

import base64
import json
import re
import time

import pyotp
import pytest

from harness import YKTERM
from stuck_readers import run_timed, silent_beside_working, stop_leftovers, two_configs_one_library

LIMIT = 5.0        # seconds the acceptance allows
KILL_AFTER = 15    # a run still going then is killed
# `oath code` among the two configurations' readers: ykterm probes them all at once (3 s), and its own probes
# can wedge the readers that share a driver socket; when the one reader that answered its probe is wedged by
# the time the command connects to it, that connect waits its own deadline and names it. Two deadlines, and
# a margin for a loaded machine.
TWO_DEADLINES = 2 * 3.0 + 2.0

WORKING_SERIAL = 28200001
# The demo account GitHub:alice@example.com of `virtual-key serve --demo-accounts` (OATHState.demoAccounts):
# TOTP, SHA-1, 6 digits, 30 s.
GITHUB = "GitHub:alice@example.com"
GITHUB_SECRET = bytes([0x09, 0x30, 0x2A, 0xAA, 0xB8, 0xFD, 0xA8, 0xB6, 0x56, 0xC7,
                       0xD0, 0x3E, 0xD3, 0x8E, 0x07, 0x7D, 0xB1, 0xAC, 0x60, 0xD6])


def env_of(setup, tmp_path):
    """The set-up's pcscd, and a HOME and config directory of the test's own (no config file picks a key)."""
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    return setup.env(HOME=home, XDG_CONFIG_HOME=home / ".config")


def run(args, env, limit=LIMIT):
    r, elapsed = run_timed(args, env, timeout=KILL_AFTER)
    what = "ykterm " + " ".join(map(str, args))
    assert r.returncode is not None, (f"{what} was still running after {KILL_AFTER} s (killed)\n"
                                      f"stdout: {r.stdout}\nstderr: {r.stderr}")
    assert elapsed < limit, f"{what} took {elapsed:.1f} s (limit {limit} s)\nstdout: {r.stdout}\nstderr: {r.stderr}"
    return r


def offered_as_choices(stderr):
    """The readers a "several keys match" error lists as choices."""
    if "several keys match" not in stderr:
        return []
    tail = stderr.split("several keys match", 1)[1].splitlines()[1:]
    return [line.strip() for line in tail if line.startswith("  ")]


def described_as_key(stdout, reader):
    """Whether a `list` line gives `reader` a key's description (firmware, applications): a reader that did
    not answer has none to give."""
    return any(line.startswith(reader + ":") and "firmware" in line for line in stdout.splitlines())


@pytest.fixture(autouse=True)
def _no_stand_in_left_running():
    """Stops, by PID, any stand-in card a set-up left behind (the set-ups stop theirs; this is the backstop)."""
    yield
    stop_leftovers()


# --- Two vpcd configurations sharing one driver library ---------------------------------------------------

@pytest.fixture
def two_configs():
    with two_configs_one_library() as setup:
        yield setup


def test_list_returns_and_names_the_readers_that_did_not_answer(two_configs, tmp_path):
    assert two_configs.stuck, two_configs.probes
    r = run(["list"], env_of(two_configs, tmp_path))
    said = r.stdout + r.stderr
    for reader in two_configs.stuck:
        assert reader in said, f"{reader} did not answer and is not named\nstdout: {r.stdout}\nstderr: {r.stderr}"
        assert not described_as_key(r.stdout, reader), r.stdout


def test_oath_code_does_not_offer_readers_that_did_not_answer(two_configs, tmp_path):
    r = run(["oath", "code"], env_of(two_configs, tmp_path), limit=TWO_DEADLINES)
    offered = offered_as_choices(r.stderr)
    assert not set(offered) & set(two_configs.stuck), (
        f"readers that did not answer offered as keys: {offered} (stuck: {two_configs.stuck})\n{r.stderr}")


# --- A stand-in reader that never answers, beside a working key --------------------------------------------

@pytest.fixture(params=["after-power-up", "atr-only"])
def beside_silent(request):
    with silent_beside_working(mode=request.param, serial=WORKING_SERIAL) as setup:
        yield setup


def test_list_shows_the_working_key_beside_a_reader_that_never_answers(beside_silent, tmp_path):
    r = run(["list"], env_of(beside_silent, tmp_path))
    assert r.returncode == 0, r.stderr
    [working] = beside_silent.working
    [silent] = beside_silent.stuck
    assert working in r.stdout and str(WORKING_SERIAL) in r.stdout, r.stdout
    assert silent in r.stdout + r.stderr, f"{silent} is not named\nstdout: {r.stdout}\nstderr: {r.stderr}"
    assert not described_as_key(r.stdout, silent), r.stdout


def test_list_json_shows_the_working_key_beside_a_reader_that_never_answers(beside_silent, tmp_path):
    r = run(["list", "--json"], env_of(beside_silent, tmp_path))
    assert r.returncode == 0, r.stderr
    rows = json.loads(r.stdout)
    [working] = beside_silent.working
    [silent] = beside_silent.stuck
    assert any(row.get("reader") == working and row.get("serial") == WORKING_SERIAL for row in rows), rows
    # The silent reader may be listed (as not answering) or left to stderr, but not as a key that answered.
    assert not any(row.get("reader") == silent and (row.get("serial") or row.get("version")) for row in rows), rows
    assert silent in r.stdout + r.stderr, f"{silent} is not named\nstdout: {r.stdout}\nstderr: {r.stderr}"


def test_oath_code_reaches_the_working_key_beside_a_reader_that_never_answers(beside_silent, tmp_path):
    totp = pyotp.TOTP(base64.b32encode(GITHUB_SECRET).decode())
    before = time.time()
    r = run(["oath", "code"], env_of(beside_silent, tmp_path))
    after = time.time()
    assert r.returncode == 0, f"stdout: {r.stdout}\nstderr: {r.stderr}"
    m = re.search(r"^" + re.escape(GITHUB) + r"\s+(\d{6})\s*$", r.stdout, re.MULTILINE)
    assert m, r.stdout
    assert m.group(1) in {totp.at(before), totp.at(after)}, r.stdout


def test_list_beside_a_card_that_never_answered_at_all(tmp_path):
    """The control: a stand-in that never answered even pcscd's first presence check leaves its reader
    looking empty, and the working key beside it is listed as usual."""
    with silent_beside_working(mode="silent", serial=WORKING_SERIAL) as setup:
        r = run(["list"], env_of(setup, tmp_path))
        assert r.returncode == 0, r.stderr
        assert str(WORKING_SERIAL) in r.stdout, r.stdout


def test_doctor_and_list_readers_name_the_silent_reader_and_the_working_key(beside_silent, tmp_path):
    """doctor asks every reader at once: the silent one is named with the fix, the working key is described."""
    r = run(["doctor"], env_of(beside_silent, tmp_path))
    [working] = beside_silent.working
    [silent] = beside_silent.stuck
    lines = r.stdout.splitlines()
    assert any(line.startswith("fail") and silent in line and "did not answer" in line and "pcscd" in line
               for line in lines), r.stdout
    assert any(line.startswith("ok") and working in line and str(WORKING_SERIAL) in line for line in lines), r.stdout
    # --readers reads pcscd's own state of each reader and talks to no key: it answers at once, silent or not.
    r = run(["list", "--readers"], env_of(beside_silent, tmp_path))
    assert working in r.stdout and silent in r.stdout, r.stdout


def test_the_tui_goes_on_with_the_working_key_and_names_the_silent_reader(beside_silent, tmp_path):
    """The TUI probes every key; the one that does not answer is named in the status line and the tabs show
    the key that does (its codes right by pyotp), without a key press."""
    from test_tui import Tmux, code_of
    env = dict(env_of(beside_silent, tmp_path))
    t = Tmux(str(YKTERM), {k: str(v) for k, v in env.items()})
    try:
        [silent] = beside_silent.stuck
        screen = t.wait_for(r"GitHub .*\d{3} \d{3}", timeout=20)
        screen = t.wait_for(rf"{re.escape(silent)} did not answer", timeout=20)
        assert str(WORKING_SERIAL) in screen, screen
        totp = pyotp.TOTP(base64.b32encode(GITHUB_SECRET).decode())
        for _ in range(3):
            now = time.time()
            code, _ = code_of(t.screen(), "GitHub")
            if code in {totp.at(now - 1.5), totp.at(now)}:
                break
            time.sleep(1)  # a period boundary may lie between the capture and the clock read
        else:
            raise AssertionError(f"GitHub shows {code}, pyotp {totp.at(time.time())}")
    finally:
        t.close()
