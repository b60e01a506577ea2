"""The FIDO2 tab's credentials beside the other keys', end to end in tmux: two keys served through vpcd, named "daily"
and "backup", with passkeys python-fido2 made (one relying party on both keys, one on daily only).

In daily's credentials A asks backup's PIN in a dialog that names it (a wrong PIN is said with the tries left and
asked again); then each relying party shows the keys that hold it, and the one on daily only "not on backup".
Stopping backup takes its marks away; daily's list stays.
"""

import re
import shlex

from harness import YKTERM, run_ykterm
from test_oath_keys import peer, two_keys
from test_tui import Tmux, pytestmark  # noqa: F401  (pytestmark: skipped without tmux)


def heading(screen, rp):
    """The line of relying party `rp` (exactly one: each shows once)."""
    lines = [line for line in screen.splitlines() if re.match(rf"^ {re.escape(rp)}\s", line)]
    assert len(lines) == 1, f"{rp} shows {len(lines)} times:\n{screen}"
    return lines[0]


def test_each_relying_party_shows_the_keys_that_hold_it_and_a_key_stopped_takes_its_marks(pcsc, tmp_path):
    a, b = two_keys(pcsc, tmp_path)
    env = pcsc.env(XDG_CONFIG_HOME=str(tmp_path / "config"))
    (tmp_path / "config" / "ykterm").mkdir(parents=True, exist_ok=True)
    run_ykterm("key", "name", "41000001", "daily", env=env)
    run_ykterm("key", "name", "41000002", "backup", env=env)
    run_ykterm("fido", "pin", "set", "--device", "daily", env=env, input="daily-pin-1\n")
    run_ykterm("fido", "pin", "set", "--device", "backup", env=env, input="backup-pin-1\n")
    peer(a, env, "make-resident", "shared.example", "alice", pin="daily-pin-1")
    peer(b, env, "make-resident", "shared.example", "alice", pin="backup-pin-1")
    peer(a, env, "make-resident", "daily-only.example", "bob", pin="daily-pin-1")
    # --device chooses daily whichever key arrives first; backup is plugged in beside it.
    t = Tmux(shlex.quote(str(YKTERM)) + " --device daily", env)
    try:
        t.wait_for(r"'daily' · serial 41000001 .* 2 keys")
        t.send("3")
        t.wait_for("FIDO2 authenticator")
        t.send("l")
        t.wait_for("PIN for the credentials")
        t.submit("daily-pin-1")
        screen = t.wait_for(r"Discoverable credentials \(2\)")
        assert "A other keys" in screen and "not on" not in screen, screen

        t.send("A")
        t.wait_for(r"FIDO2 PIN of .*'backup'")
        # A wrong PIN: said with the tries left, and the dialog asks again.
        t.submit("not-the-pin")
        t.wait_for(r"Wrong PIN: 7 tries left")
        t.submit("backup-pin-1")
        screen = t.wait_until(
            lambda s: "Keys: daily · backup" in s and re.search(r"shared\.example\s.*daily · backup", s)
            and re.search(r"daily-only\.example\s.*daily  not on backup", s), timeout=20)
        assert "FIDO2 PIN of" not in screen and "backup-pin-1" not in screen, screen
        assert heading(screen, "shared.example").rstrip().endswith("daily · backup")
        assert "A this key only" in screen

        b.stop()
        screen = t.wait_until(lambda s: "not on" not in s and "backup" not in s, timeout=20)
        assert "Keys:" not in screen, screen
        assert re.search(r"^ shared\.example\s*$", screen, re.M) and re.search(r"^ daily-only\.example\s*$", screen,
                                                                                re.M), screen
        assert "alice" in screen and "bob" in screen
        t.send("q")
        t.wait_for("EXITED=0")
    finally:
        t.close()
