"""The TUI's OpenPGP tab end to end in tmux, on the virtual key served through pcscd, checked with GnuPG and
yubikey-manager: the tab shows the card as `ykman openpgp info` and `gpg --card-status` tell it (the tries left,
the fingerprint of a key imported beforehand), a PIN changed in the tab is the one gpg then needs (and ykman no
longer takes the old one), and a touch policy set in the tab — a fixed one, asked about first — is the one
`ykman openpgp info` reports."""

import os
import re
import shutil
import subprocess

import pytest

from harness import ServedKey, run_ykman, run_ykterm
from test_openpgp import ADMIN, GnuPG, flat, retry_counters
from test_tui import Tmux, pytestmark, served_tui  # noqa: F401  (pytestmark: skipped without tmux)


@pytest.fixture
def gnupg(pcsc):
    if not (shutil.which("gpg") and os.path.exists("/usr/lib/gnupg/scdaemon")):
        pytest.skip("gnupg and scdaemon are not installed (make deps installs them for the tests)")
    g = GnuPG(pcsc)
    yield g
    g.cleanup()


def openpgp_tab(t):
    t.send("7")
    return t.wait_for("OpenPGP application")


def grouped(fingerprint):
    """40 hex digits in GnuPG's groups of four, as the tab shows them."""
    return " ".join(fingerprint[i:i + 4] for i in range(0, 40, 4))


def test_the_tab_shows_the_card_changes_the_pin_gpg_needs_and_sets_a_fixed_touch_policy(pcsc, env, tmp_path,
                                                                                        gnupg):
    key = ServedKey(pcsc, slot=0, state=tmp_path / "key.json").start()
    t = None
    try:
        # Keys imported beforehand: P-256 for signatures, Ed25519 for authentication (ykman shows the touch
        # policies of slots with keys only). gpg reads the signature key's fingerprint from the card.
        for slot, algorithm in (("sig", ["EC", "-pkeyopt", "ec_paramgen_curve:P-256"]), ("aut", ["ED25519"])):
            pem = tmp_path / f"{slot}.pem"
            subprocess.run(["openssl", "genpkey", "-algorithm", *algorithm, "-out", str(pem)], check=True,
                           capture_output=True)
            run_ykterm("openpgp", "keys", "import", slot, str(pem), "--reader", key.reader, env=env,
                       input=ADMIN + "\n")
        colons = gnupg.run("--batch", "--with-colons", "--card-status").stdout
        fpr = next(line for line in colons.splitlines() if line.startswith("fpr:")).split(":")[1]
        assert len(fpr) == 40
        assert retry_counters(gnupg.card_status()) == (3, 0, 3)
        ykman_info = flat(run_ykman(key.reader, "openpgp", "info", env=env).stdout)
        assert "PIN tries remaining: 3" in ykman_info and "Admin PIN tries remaining: 3" in ykman_info
        assert "Reset code tries remaining: 0" in ykman_info
        gnupg.stop()

        t = served_tui(pcsc, tmp_path, key)
        openpgp_tab(t)
        screen = t.wait_for(grouped(fpr))
        assert re.search(r"Version\s+OpenPGP 3\.4 · firmware 5\.7\.2 · serial 28123456", screen)
        assert re.search(r"PIN\s+3 tries left", screen) and re.search(r"Admin PIN\s+3 tries left", screen)
        assert re.search(r"Reset code\s+none set", screen)
        row = next(line for line in screen.splitlines() if "SIG Signature" in line)
        assert "SECP256R1" in row and row.rstrip().endswith("off")
        assert re.search(r"DEC Decryption\s+no key", screen)

        # p: a new PIN, typed twice.
        t.send("p")
        t.wait_for("Change the OpenPGP PIN")
        t.submit("123456", "24681357", "24681357")
        t.wait_for("OpenPGP PIN changed")

        # gpg then needs the new one: the old PIN uses up a try (the tab, read again, shows it), the new one
        # verifies and gives it back. ykman refuses the old one too.
        gnupg.card_edit("verify", "123456", "quit")
        assert retry_counters(gnupg.card_status()) == (2, 0, 3)
        gnupg.stop()
        t.send("r")
        t.wait_for(r"PIN\s+2 tries left")
        gnupg.card_edit("verify", "24681357", "quit")
        assert retry_counters(gnupg.card_status()) == (3, 0, 3)
        gnupg.stop()
        old = run_ykman(key.reader, "openpgp", "access", "change-pin", "-P", "123456", "-n", "97531864", env=env,
                        check=False)
        assert old.returncode != 0
        run_ykman(key.reader, "openpgp", "access", "change-pin", "-P", "24681357", "-n", "123456", env=env)
        t.send("r")
        t.wait_for(r"PIN\s+3 tries left")

        # t: the signature key's touch policy. Fixed is asked about first; Enter is No, y sets it.
        t.send("t")
        t.wait_for("Touch policy of key SIG")
        t.send("Right", "Right")
        t.wait_for(r"Touch policy\s+< fixed >")
        t.send("Enter")
        t.submit(ADMIN)
        t.wait_for("cannot be changed again")
        t.answer("Enter")
        t.wait_gone("cannot be changed again")
        assert "On (fixed)" not in run_ykman(key.reader, "openpgp", "info", env=env).stdout
        t.send("Enter")
        t.wait_for("cannot be changed again")
        t.answer("y")
        t.wait_for(r"Touch policy of key SIG: fixed")
        t.wait_for(r"SIG Signature.*fixed \(until a new key\)")
        lines = flat(run_ykman(key.reader, "openpgp", "keys", "info", "sig", env=env).stdout)
        assert "Touch policy: On (fixed)" in lines, lines
        # A fixed policy cannot be changed again, and the tab says so without asking.
        t.send("t")
        t.wait_for("The touch policy of key SIG is fixed")

        # A policy that is not fixed goes through without a question: cached for the authentication key.
        t.send("Down", "Down", "t")
        t.wait_for("Touch policy of key AUT")
        t.send("Right", "Right", "Right")
        t.wait_for(r"Touch policy\s+< cached >")
        t.send("Enter")
        t.submit(ADMIN)
        t.wait_for(r"Touch policy of key AUT: cached")
        t.wait_for(r"AUT Authentication\s+Ed25519.*cached \(15 s\)")
        assert "Touch policy: Cached" in flat(run_ykman(key.reader, "openpgp", "keys", "info", "aut", env=env).stdout)
    finally:
        if t:
            t.close()
        key.stop()


def test_keys_gpg_made_show_with_its_fingerprints_and_gpg_signs_with_the_pin_the_tab_set(pcsc, env, tmp_path, gnupg):
    key = ServedKey(pcsc, slot=0, state=tmp_path / "key.json").start()
    t = None
    try:
        # gpg generates its three keys on the card (no backup, admin PIN, PIN, no expiry, the user ID, then the PIN
        # for the self-signatures), as test_openpgp does.
        r = gnupg.card_edit("admin", "generate", "n", ADMIN, "123456", "0", "Jane Doe", "jane@example.org", "",
                            "123456", "123456", "123456", "quit")
        assert "KEY_CREATED" in r.stdout, r.stdout + r.stderr
        colons = gnupg.run("--batch", "--with-colons", "--card-status").stdout
        sig, dec, aut = next(line for line in colons.splitlines() if line.startswith("fpr:")).split(":")[1:4]
        counter = int(re.search(r"^Signature counter : (\d+)$", gnupg.card_status(), re.M).group(1))
        gnupg.stop()

        t = served_tui(pcsc, tmp_path, key)
        openpgp_tab(t)
        screen = t.wait_for(grouped(aut))
        lines = screen.splitlines()
        for name, fingerprint in (("SIG Signature", sig), ("DEC Decryption", dec), ("AUT Authentication", aut)):
            at = next(i for i, line in enumerate(lines) if name in line)
            assert "RSA2048" in lines[at] and grouped(fingerprint) in lines[at + 1], (name, screen)
        assert re.search(rf"Signatures\s+{counter} made · the PIN for every signature", screen)

        t.send("p")
        t.wait_for("Change the OpenPGP PIN")
        t.submit("123456", "24681357", "24681357")
        t.wait_for("OpenPGP PIN changed")

        # The old PIN is refused (a try used up), and gpg signs with the new one: the signature verifies.
        gnupg.card_edit("verify", "123456", "quit")
        assert retry_counters(gnupg.card_status()) == (2, 0, 3)
        gnupg.restart()
        message = tmp_path / "message.txt"
        message.write_text("signed with the PIN the tab set\n")
        gnupg.run("--batch", "--pinentry-mode", "loopback", "--passphrase-fd", "0", "--output", f"{message}.sig",
                  "--detach-sign", message, input="24681357\n")
        assert "Good signature" in gnupg.run("--batch", "--verify", f"{message}.sig", message).stderr
        assert retry_counters(gnupg.card_status()) == (3, 0, 3)
        gnupg.stop()
        # The tab, read again, counts the signature too.
        t.send("r")
        t.wait_for(rf"Signatures\s+{counter + 1} made")
        t.wait_for(r"PIN\s+3 tries left")
    finally:
        if t:
            t.close()
        key.stop()


def test_the_kdf_turned_on_in_the_tab_is_the_one_gpg_and_ykman_derive_with(pcsc, env, tmp_path, gnupg):
    """d turns the PIN derivation on with the admin PIN; the tab says so, and the PIN then changed in the tab is the
    one gpg (deriving from the card's KDF object) and ykman need."""
    key = ServedKey(pcsc, slot=0, state=tmp_path / "key.json").start()
    t = served_tui(pcsc, tmp_path, key)
    try:
        openpgp_tab(t)
        t.send("d")
        t.wait_for(r"Turn the PIN derivation \(KDF\) on")
        t.submit(ADMIN)
        t.wait_for("PIN derivation on")
        t.wait_for(r"KDF\s+on: the PINs go to the key derived")
        t.send("p")
        t.wait_for("Change the OpenPGP PIN")
        t.submit("123456", "24681357", "24681357")
        t.wait_for("OpenPGP PIN changed")
    finally:
        t.close()
    try:
        assert "KDF enabled: True" in flat(run_ykman(key.reader, "openpgp", "info", env=env).stdout)
        gnupg.card_edit("verify", "24681357", "quit")
        assert retry_counters(gnupg.card_status()) == (3, 0, 3)
        gnupg.stop()
        run_ykman(key.reader, "openpgp", "access", "change-pin", "-P", "24681357", "-n", "13572468", env=env)
    finally:
        key.stop()
