"""Faults injected by the served virtual key (`virtual-key serve --fault`): every command ends within a
bounded time with a clear message, never crashes, and leaves nothing half-changed on the key."""

import json
import os
import shlex
import subprocess
import sys
import time
from pathlib import Path

import pyotp
import pytest

from harness import YKTERM, PrivatePCSC, ServedKey, run_ykman, run_ykterm

SECRET_A = "JBSWY3DPEHPK3PXPJBSWY3DPEHPK3PXP"
SECRET_B = "GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ"
PEER = Path(__file__).with_name("fido2_peer.py")


def serve(pcsc, tmp_path, *faults, extra=()):
    """The key with `faults`, keeping its state in tmp_path so a well-behaved key can check it after."""
    args = [a for f in faults for a in ("--fault", f)] + list(extra)
    return ServedKey(pcsc, slot=0, state=tmp_path / "key.json", extra=args).start()


def yk(key, env, *args, input=None, timeout=60):
    started = time.monotonic()
    r = run_ykterm(*args, env=dict(env, YKTERM_READER=key.reader, YKTERM_CARD_TIMEOUT="3"), input=input,
                   check=False, timeout=timeout)
    r.elapsed = time.monotonic() - started
    return r


def accounts(key, env):
    return run_ykman(key.reader, "oath", "accounts", "list", env=env).stdout.split()


def healthy(pcsc, tmp_path, key):
    """Stops the faulty key and serves the same state without faults."""
    key.stop()
    return serve(pcsc, tmp_path)


def no_crash(r):
    assert r.returncode in (1, 2, 3), (r.returncode, r.stdout, r.stderr)
    assert "Fatal error" not in r.stderr and "Segmentation" not in r.stderr
    assert r.stderr.startswith("ykterm: "), r.stderr


def test_rename_with_the_key_pulled_out_before_it_leaves_the_old_name(pcsc, env, tmp_path):
    key = serve(pcsc, tmp_path)
    yk(key, env, "oath", "add", "--name", "Old:name", "--secret", "-", input=SECRET_A + "\n")
    key.stop()
    key = serve(pcsc, tmp_path, "remove-before@ins=05")
    r = yk(key, env, "oath", "rename", "Old:name", "New:name")
    no_crash(r)
    assert "removed" in r.stderr
    key = healthy(pcsc, tmp_path, key)
    assert "Old:name" in accounts(key, env)
    key.stop()


def test_rename_with_the_key_pulled_out_after_it_has_the_new_name(pcsc, env, tmp_path):
    key = serve(pcsc, tmp_path)
    yk(key, env, "oath", "add", "--name", "Old:name", "--secret", "-", input=SECRET_A + "\n")
    key.stop()
    key = serve(pcsc, tmp_path, "remove-after@ins=05")
    r = yk(key, env, "oath", "rename", "Old:name", "New:name")
    no_crash(r)
    key = healthy(pcsc, tmp_path, key)
    names = accounts(key, env)
    assert "New:name" in names and "Old:name" not in names
    key.stop()


def test_overwrite_interrupted_keeps_the_account(pcsc, env, tmp_path):
    key = serve(pcsc, tmp_path)
    yk(key, env, "oath", "add", "--name", "dup", "--secret", "-", input=SECRET_A + "\n")
    key.stop()
    key = serve(pcsc, tmp_path, "remove-before@ins=01.00")
    r = yk(key, env, "oath", "add", "--force", "--name", "dup", "--secret", "-", input=SECRET_B + "\n")
    no_crash(r)
    key = healthy(pcsc, tmp_path, key)
    assert "dup" in accounts(key, env)
    # Still the first secret's account, untouched.
    while 28 < time.time() % 30 or time.time() % 30 < 1:
        time.sleep(0.5)  # until the clock is away from a period boundary
    after = json.loads(yk(key, env, "oath", "code", "--json", "dup").stdout)[0]["code"]
    assert after == pyotp.TOTP(SECRET_A).now()
    key.stop()


@pytest.mark.parametrize("fault,words", [
    ("truncate@ins=A4", "unexpected"),
    ("garbage@ins=A4", "unexpected"),
    ("status=6F00@ins=A4", "refused"),
])
def test_broken_answers_to_calculate_all_end_with_a_clear_message(pcsc, env, tmp_path, fault, words):
    key = serve(pcsc, tmp_path, fault, extra=("--demo-accounts",))
    r = yk(key, env, "oath", "code")
    no_crash(r)
    assert words in r.stderr, r.stderr
    key.stop()


def test_refused_put_adds_nothing(pcsc, env, tmp_path):
    key = serve(pcsc, tmp_path, "status=6A84@ins=01.00")
    r = yk(key, env, "oath", "add", "--name", "full", "--secret", "-", input=SECRET_A + "\n")
    no_crash(r)
    assert "full" not in accounts(key, env)
    key.stop()


def test_an_answer_that_never_comes_times_out(pcsc, env, tmp_path):
    key = serve(pcsc, tmp_path, "hang@ins=A4", extra=("--demo-accounts",))
    r = yk(key, env, "oath", "code", timeout=30)
    no_crash(r)
    assert "in time" in r.stderr, r.stderr
    assert r.elapsed < 15
    key.stop()


def peer(key, env, action, pin):
    return subprocess.run([sys.executable, str(PEER), key.reader, action], env=env, capture_output=True,
                          text=True, input=pin + "\n", timeout=60)


@pytest.mark.parametrize("fault", ["remove-before@ctap=06.04", "status=6F00@ctap=06.04"])
def test_failed_pin_change_leaves_the_old_pin_valid_and_says_so(pcsc, env, tmp_path, fault):
    key = serve(pcsc, tmp_path)
    yk(key, env, "fido", "pin", "set", input="old-pin-1\n")
    key.stop()
    key = serve(pcsc, tmp_path, fault)
    r = yk(key, env, "fido", "pin", "change", input="old-pin-1\nnew-pin-2\n")
    no_crash(r)
    assert "not changed" in r.stderr or "may not have" in r.stderr, r.stderr
    key = healthy(pcsc, tmp_path, key)
    assert '"token"' in peer(key, env, "token", "old-pin-1").stdout
    assert "PIN_INVALID" in peer(key, env, "token", "new-pin-2").stdout
    key.stop()


def test_tui_survives_pcscd_stopping_and_starting_again(tmp_path):
    """pcscd goes away under the TUI and comes back (on the same socket path): the TUI says so, then shows
    the codes again with no key press."""
    from test_tui import Tmux  # noqa: E402 — the tmux helper lives with the TUI tests
    private = PrivatePCSC().start()
    link = tmp_path / "pcscd.comm"
    link.symlink_to(private.socket)
    key = ServedKey(private, slot=0, state=tmp_path / "key.json", extra=("--demo-accounts",)).start()
    env = dict(private.env(), PCSCLITE_CSOCK_NAME=str(link), XDG_CONFIG_HOME=str(tmp_path / "config"))
    t = Tmux(f"{shlex.quote(str(YKTERM))}", env)
    try:
        t.wait_for("GitHub")
        private.stop()
        t.wait_for("pcscd is not running", timeout=20)
        private.start()
        link.unlink()
        link.symlink_to(private.socket)
        t.wait_for("GitHub", timeout=30)
        t.send("q")
        t.wait_for("EXITED=0")
    finally:
        t.close()
        key.stop(wait=False)
        private.cleanup()


def test_tui_key_pulled_out_during_delete_recovers(pcsc, tmp_path):
    from test_tui import Tmux  # noqa: E402
    key = serve(pcsc, tmp_path, "remove-before@ins=02", extra=("--demo-accounts",))
    env = pcsc.env(XDG_CONFIG_HOME=str(tmp_path / "config"))
    t = Tmux(f"{shlex.quote(str(YKTERM))} --reader {shlex.quote(key.reader)}", env)
    try:
        t.wait_for("GitHub")
        t.send("/")
        t.type("github")
        t.send("Enter")
        t.send("d")
        t.wait_for("Delete GitHub")
        t.answer("y")
        t.wait_for("removed", timeout=20)
        # The key comes back by itself; the account is still there, and the codes return with no key press.
        t.wait_for("GitHub", timeout=20)
        t.wait_gone("removed", timeout=20)
        assert "GitHub:alice@example.com" in accounts(key, pcsc.env())
    finally:
        t.close()
        key.stop()


def test_a_key_that_keeps_processing_for_ever_is_given_up_and_cancelled(pcsc, env, tmp_path):
    """KEEPALIVE for ever over PC/SC: the command ends with a clear message within its bound
    (YKTERM_CARD_TIMEOUT=3 here), and the key is told to cancel, so it answers the next command."""
    key = serve(pcsc, tmp_path, "keepalive@ctap=04")
    r = yk(key, env, "fido", "info", timeout=40)
    no_crash(r)
    assert "in time" in r.stderr, r.stderr
    assert r.elapsed < 15
    r = yk(key, env, "fido", "info", "--json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["versions"]
    key.stop()


@pytest.mark.parametrize("fault", ["garbage@ctap=04", "truncate@ctap=04", "status=6F00@ctap=04"])
def test_broken_answers_to_get_info_end_with_a_clear_message(pcsc, env, tmp_path, fault):
    key = serve(pcsc, tmp_path, fault)
    r = yk(key, env, "fido", "info")
    no_crash(r)
    assert "Fatal" not in r.stderr and len(r.stderr.splitlines()) <= 3, r.stderr
    key.stop()
