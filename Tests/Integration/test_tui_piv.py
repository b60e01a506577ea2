"""The TUI's PIV tab end to end in tmux: on the virtual key served through pcscd, with yubikey-manager filling the
slots and checking what the tab changed (the slot ykman filled is shown, its certificate in full with openssl's
fingerprint, the signature check, a PIN change and an unblock that ykman then accepts, a certificate export
openssl reads, a self-signed certificate made on the key that openssl verifies with the slot's key, and the SSH
line copied through OSC 52 that `ykterm piv ssh-key` prints), and on `ykterm --virtual` (the demo slot, verified
with the default PIN).
"""

import os
import re
import shlex
import subprocess

from harness import YKTERM, ServedKey, run_ykman, run_ykterm
from test_tui import Tmux, pytestmark, served_tui  # noqa: F401  (pytestmark: skipped without tmux)

MGM_DEFAULT = "010203040506070801020304050607080102030405060708"
MGM_AES192 = "8796a5b4c3d2e1f00f1e2d3c4b5a69780123456789abcdef"


def openssl(*args, input=None):
    r = subprocess.run(["openssl", *map(str, args)], input=input, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    return r.stdout


def fill_9a(key, env, tmp_path, subject="CN=ykterm-test"):
    """An EC P-256 key generated in 9A and a self-signed certificate for it, both made by ykman."""
    pub = tmp_path / "9a-pub.pem"
    run_ykman(key.reader, "piv", "keys", "generate", "-a", "ECCP256", "-m", MGM_DEFAULT, "9a", pub, env=env)
    run_ykman(key.reader, "piv", "certificates", "generate", "-m", MGM_DEFAULT, "-P", "123456", "-s", subject,
              "9a", pub, env=env)
    return run_ykman(key.reader, "piv", "certificates", "export", "9a", "-", env=env).stdout


def ykman_pin_tries(key, env):
    info = run_ykman(key.reader, "piv", "info", env=env).stdout
    return re.search(r"PIN tries remaining:\s*(\d+)/(\d+)", info).group(1)


def piv_tab(t):
    t.send("5")
    return t.wait_for("PIV application")


def test_slot_filled_by_ykman_verifies_and_a_pin_changed_in_the_tab_is_the_one_ykman_needs(pcsc, env, tmp_path):
    key = ServedKey(pcsc, slot=0, state=tmp_path / "key.json").start()
    pem = fill_9a(key, env, tmp_path)
    fingerprint = openssl("x509", "-noout", "-fingerprint", "-sha256", input=pem).split("=", 1)[1].strip()
    t = served_tui(pcsc, tmp_path, key)
    try:
        piv_tab(t)
        screen = t.wait_for("CN=ykterm-test")
        row = next(line for line in screen.splitlines() if "9A Authentication" in line)
        assert "ECCP256" in row and "CN=ykterm-test" in row
        assert re.search(r"PIN\s+3 of 3 tries left · the default \(123456\)", screen)
        assert re.search(r"PUK\s+3 of 3 tries left", screen)
        assert re.search(r"Management key\s+AES192 · the default", screen)
        assert "9C Digital Signature" in screen and "empty" in screen

        # Enter: the certificate in full, with the fingerprint openssl computes.
        t.send("Enter")
        screen = t.wait_for("SHA-256 fingerprint")
        assert re.search(r"Subject\s+CN=ykterm-test", screen) and re.search(r"Issuer\s+CN=ykterm-test", screen)
        lines = screen.splitlines()
        start = next(i for i, line in enumerate(lines) if "SHA-256 fingerprint" in line)
        values = " ".join([lines[start].split("fingerprint", 1)[1]] + lines[start + 1:start + 3])
        shown = "".join(re.findall(r"\b(?:[0-9A-F]{2}:)+[0-9A-F]{2}:?", values))
        assert shown == fingerprint, (shown, fingerprint)
        assert re.search(r"Key\s+ECCP256 · generated on the key", screen)
        assert "the certificate's public key is the slot's key" in screen
        t.send("Escape")
        t.wait_gone("SHA-256 fingerprint")

        # v: the PIN, then the key signs and the certificate's key checks the signature.
        t.send("v")
        t.wait_for("PIN to sign with slot 9A")
        t.submit("123456")
        t.wait_for(r"Slot 9A: signature verified \(ECCP256\) with the certificate's public key")

        # p: a new PIN, which ykman then needs (and the old one no longer works).
        t.send("p")
        t.wait_for("Change the PIV PIN")
        t.submit("123456", "24681357", "24681357")
        t.wait_for("PIV PIN changed")
        screen = t.wait_for(r"PIN\s+3 of 3 tries left")
        assert "the default (123456)" not in screen
        old = run_ykman(key.reader, "piv", "access", "change-pin", "-P", "123456", "-n", "97531864", env=env,
                        check=False)
        assert old.returncode != 0
        run_ykman(key.reader, "piv", "access", "change-pin", "-P", "24681357", "-n", "123456", env=env)
        assert ykman_pin_tries(key, env) == "3"
    finally:
        t.close()
        key.stop()


def test_wrong_pins_show_the_tries_left_and_the_puk_unblocks(pcsc, env, tmp_path):
    key = ServedKey(pcsc, slot=0, state=tmp_path / "key.json").start()
    fill_9a(key, env, tmp_path)
    t = served_tui(pcsc, tmp_path, key)
    try:
        piv_tab(t)
        t.wait_for("CN=ykterm-test")
        t.send("v")
        t.wait_for("PIN to sign with slot 9A")
        t.submit("000000")
        t.wait_for("Wrong PIN: 2 tries left before the PIN is blocked")
        assert ykman_pin_tries(key, env) == "2"
        t.submit("000001")
        t.wait_for("Wrong PIN: 1 tries left")
        t.submit("000002")
        screen = t.wait_for("The PIN is blocked after too many wrong tries")
        assert "PIN to sign with slot 9A" not in screen
        assert re.search(r"PIN\s+blocked: b unblocks it with the PUK", screen)
        assert ykman_pin_tries(key, env) == "0"

        # b: the PUK sets a new PIN; ykman then signs with it.
        t.send("b")
        t.wait_for("Unblock the PIV PIN")
        t.submit("12345678", "13572468", "13572468")
        t.wait_for("PIV PIN unblocked")
        t.wait_for(r"PIN\s+3 of 3 tries left")
        run_ykman(key.reader, "piv", "access", "change-pin", "-P", "13572468", "-n", "123456", env=env)
    finally:
        t.close()
        key.stop()


def test_export_writes_the_pem_and_asks_before_replacing(pcsc, env, tmp_path):
    key = ServedKey(pcsc, slot=0, state=tmp_path / "key.json").start()
    pem = fill_9a(key, env, tmp_path)
    target = tmp_path / "exported.pem"
    t = served_tui(pcsc, tmp_path, key)
    try:
        piv_tab(t)
        t.wait_for("CN=ykterm-test")
        t.send("e")
        t.wait_for("Export the certificate of slot 9A")
        t.send("C-u")
        t.submit(str(target))
        t.wait_for("Certificate of slot 9A written to")
        assert target.read_text() == pem
        assert oct(os.stat(target).st_mode & 0o777) == "0o644"
        assert "CN = ykterm-test" in openssl("x509", "-noout", "-subject", "-in", target)

        # Again: the file exists; n goes back to the form, y replaces it.
        target.write_text("something else\n")
        t.send("e")
        t.wait_for("Export the certificate of slot 9A")
        t.send("C-u")
        t.submit(str(target))
        t.wait_for("exists. Replace it?")
        t.answer("n")
        t.wait_gone("exists. Replace it?")
        assert target.read_text() == "something else\n"
        t.send("Enter")
        t.wait_for("exists. Replace it?")
        t.answer("y")
        t.wait_for("Certificate of slot 9A written to")
        assert target.read_text() == pem
    finally:
        t.close()
        key.stop()


def test_virtual_demo_slot_verifies_with_the_default_pin(tmp_path):
    env = dict(os.environ, XDG_CONFIG_HOME=str(tmp_path / "config"))
    t = Tmux(f"{shlex.quote(str(YKTERM))} --virtual", env)
    try:
        t.wait_for("GitHub")
        piv_tab(t)
        screen = t.wait_for("CN=ykterm demo")
        assert "ECCP256" in next(line for line in screen.splitlines() if "9A Authentication" in line)
        t.send("v")
        t.wait_for("PIN to sign with slot 9A")
        t.submit("123456")
        t.wait_for(r"signature verified \(ECCP256\)")
        # The help names the tab's keys.
        t.send("?")
        screen = t.wait_for("PIV tab")
        assert "unblock the PIN with the PUK" in screen
    finally:
        t.close()


def test_an_rsa_key_in_the_signature_slot_verifies_after_its_pin(pcsc, env, tmp_path):
    key = ServedKey(pcsc, slot=0, state=tmp_path / "key.json").start()
    pub = tmp_path / "9c-pub.pem"
    run_ykman(key.reader, "piv", "keys", "generate", "-a", "RSA2048", "-m", MGM_DEFAULT, "9c", pub, env=env)
    run_ykman(key.reader, "piv", "certificates", "generate", "-m", MGM_DEFAULT, "-P", "123456", "-s", "CN=signer",
              "9c", pub, env=env)
    t = served_tui(pcsc, tmp_path, key)
    try:
        piv_tab(t)
        screen = t.wait_for("CN=signer")
        assert "RSA2048" in next(line for line in screen.splitlines() if "9C Digital Signature" in line)
        t.send("j")
        t.send("v")
        t.wait_for("PIN to sign with slot 9C")
        t.submit("123456")
        t.wait_for(r"Slot 9C: signature verified \(RSA2048\)")
    finally:
        t.close()
        key.stop()


def test_g_makes_a_certificate_signed_by_the_slots_key_and_s_copies_its_ssh_line(pcsc, env, tmp_path):
    key = ServedKey(pcsc, slot=0, state=tmp_path / "key.json").start()
    ykenv = dict(env, YKTERM_READER=key.reader)
    pub = tmp_path / "9c.pub"
    run_ykterm("piv", "keys", "generate", "9c", "-a", "ECCP256", "--out", pub, env=ykenv)
    run_ykterm("piv", "management-key", "change", "--algorithm", "AES192", input=MGM_AES192 + "\n", env=ykenv)
    pem = tmp_path / "9c.pem"

    def exported():
        pem.unlink(missing_ok=True)
        run_ykterm("piv", "certificates", "export", "9c", "--out", pem, env=ykenv)
        return openssl("x509", "-in", pem, "-noout", "-subject", "-issuer", "-pubkey")

    t = served_tui(pcsc, tmp_path, key)
    try:
        # tmux keeps what a program copies with OSC 52 as a paste buffer.
        t.tmux("set-option", "-s", "set-clipboard", "on")
        piv_tab(t)
        screen = t.wait_for("9C Digital Signature")
        assert "ECCP256" in next(line for line in screen.splitlines() if "9C Digital Signature" in line)
        t.send("j")
        t.send("g")
        screen = t.wait_for("Self-signed certificate for slot 9C")
        assert re.search(r"Subject\s+CN=PIV slot 9C", screen) and re.search(r"Valid for \(days\)\s+365", screen)
        assert "Management key (hex)" in screen and re.search(r"PIN\s", screen)
        t.send("C-u")
        t.type("CN=tmux test,O=ykterm")
        t.send("Enter")
        t.send("C-u")
        # A wrong management key is refused by the key; the dialog stays, the PIN not yet tried.
        t.submit("30", "00" * 24, "123456")
        screen = t.wait_for("Wrong management key: the key refused it")
        assert "Self-signed certificate for slot 9C" in screen and "00" * 24 not in screen
        t.submit(MGM_AES192, "123456")
        t.wait_for(r"Slot 9C: self-signed certificate stored, subject CN=tmux test")
        screen = t.wait_for(r"9C Digital Signature\s+ECCP256\s+CN=tmux test")
        assert MGM_AES192 not in screen

        # The slot holds a self-signed certificate with the subject typed, for the key generated in the slot,
        # signed by that key, valid for 30 days.
        text = exported()
        assert "subject=CN = tmux test, O = ykterm" in text and "issuer=CN = tmux test, O = ykterm" in text, text
        assert openssl("pkey", "-pubin", "-in", pub) in text
        assert openssl("verify", "-check_ss_sig", "-CAfile", pem, pem).strip().endswith(": OK")
        assert subprocess.run(["openssl", "x509", "-in", pem, "-noout", "-checkend", str(29 * 86400)]).returncode == 0
        assert subprocess.run(["openssl", "x509", "-in", pem, "-noout", "-checkend", str(31 * 86400)],
                              capture_output=True).returncode == 1

        # Again: the slot holds a certificate now, so the dialog asks before it replaces it.
        t.send("g")
        t.wait_for("Self-signed certificate for slot 9C")
        t.submit("", "", MGM_AES192, "123456")
        t.wait_for("Slot 9C already holds a certificate. Replace it?")
        t.answer("y")
        t.wait_for(r"Slot 9C: self-signed certificate stored, subject CN=PIV slot 9C")
        text = exported()
        assert "subject=CN = PIV slot 9C" in text and openssl("pkey", "-pubin", "-in", pub) in text, text

        # s: the slot's authorized_keys line, exactly as ykterm piv ssh-key prints it, goes out through OSC 52.
        line = run_ykterm("piv", "ssh-key", "9c", env=ykenv).stdout.strip()
        assert line.startswith("ecdsa-sha2-nistp256 ") and line.endswith(" PIV slot 9C"), line
        t.send("s")
        t.wait_for(r"Copied the SSH key of PIV slot 9C \(OSC 52")
        assert t.tmux("show-buffer") == line
    finally:
        t.close()
        key.stop()


def test_an_enhanced_pin_key_says_so_and_a_pin_too_simple_keeps_the_dialog(pcsc, env, tmp_path):
    """On a key that enforces PIN complexity the device view says so; the key refuses a PIN change to 111111, the
    dialog stays with the key's reason, and the PINs typed again in it make the PIN ykman then needs."""
    key = ServedKey(pcsc, slot=0, state=tmp_path / "key.json", extra=("--pin-complexity",)).start()
    t = served_tui(pcsc, tmp_path, key)
    try:
        t.wait_for("Enhanced PIN")
        t.send("i")
        t.wait_for(r"PIN complexity\s+enforced")
        t.send("z")
        t.wait_gone("Device information")
        piv_tab(t)
        t.send("p")
        t.wait_for("Change the PIV PIN")
        t.submit("123456", "111111", "111111")
        t.wait_for("enforces PIN complexity")
        assert "Change the PIV PIN" in t.screen()
        t.submit("123456", "24681357", "24681357")
        t.wait_for("PIV PIN changed")
        run_ykman(key.reader, "piv", "access", "change-pin", "-P", "24681357", "-n", "13572468", env=env)
    finally:
        t.close()
        key.stop()
