"""The virtual key's OpenPGP application between ykterm and yubikey-manager (`ykman openpgp`): what ykterm
changes (tries, PINs, the reset code, touch policies, the reset) `ykman openpgp info` and ykman's use of the new
PINs see, and what ykman changes (tries, touch policies, PINs, imported keys) `ykterm openpgp info --json` sees.
Then GnuPG through the test's pcscd (scdaemon without its own CCID driver): `gpg --card-status` shows what
ykterm set, the PIN ykterm changed is the one gpg needs, and keys gpg generates on the card sign, decrypt and
are shown by ykterm with gpg's fingerprints."""

import json
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time

import pytest

from harness import VENV_BIN, ServedKey, run_ykman, run_ykterm

ADMIN = "12345678"


@pytest.fixture
def home_env(env, tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    env = dict(env)
    env["HOME"] = str(home)
    return env


@pytest.fixture
def ykterm(key, home_env):
    def run(*args, input=None, check=True):
        return run_ykterm("openpgp", *args, "--reader", key.reader, env=home_env, input=input, check=check)
    return run


@pytest.fixture
def ykman(key, home_env):
    def run(*args, input=None, check=True):
        return run_ykman(key.reader, "openpgp", *args, env=home_env, input=input, check=check)
    return run


# ykman's command line imports keys into the attestation slot only: keys for the other slots are made with ykman's
# library (yubikit), as its `OpenPgpSession` does it, through the test's pcscd.
YUBIKIT_KEY = """
import sys
from ykman.pcsc import list_devices
from yubikit.core.smartcard import SmartCardConnection
from yubikit.openpgp import KEY_REF, OID, RSA_SIZE, OpenPgpSession
from cryptography.hazmat.primitives.serialization import load_pem_private_key
reader, admin, slot, what = sys.argv[1:5]
device = [d for d in list_devices(reader)][0]
with device.open_connection(SmartCardConnection) as connection:
    session = OpenPgpSession(connection)
    session.verify_admin(admin)
    ref = KEY_REF[slot.upper()]
    if what == "rsa2048":
        session.generate_rsa_key(ref, RSA_SIZE.RSA2048)
    elif what.endswith(".pem"):
        session.put_key(ref, load_pem_private_key(open(what, "rb").read(), None))
    else:
        session.generate_ec_key(ref, OID[what])
"""


def yubikit_key(key, env, admin, slot, what):
    """Generates (`what`: rsa2048 or a curve, e.g. SECP256R1) or imports (`what`: a PEM file) a key with yubikit."""
    r = subprocess.run([str(VENV_BIN / "python"), "-c", YUBIKIT_KEY, key.reader, admin, slot, str(what)], env=env,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr


def flat(text):
    """ykman's output with one space after each colon (it aligns the values), one stripped line each."""
    return [re.sub(r":[ \t]+", ": ", line.strip()) for line in text.splitlines()]


def info_json(ykterm):
    return json.loads(ykterm("info", "--json").stdout)


def test_a_new_key_reads_the_same_in_both(ykterm, ykman):
    lines = flat(ykman("info").stdout)
    assert "OpenPGP version: 3.4" in lines and "Application version: 5.7.2" in lines
    assert "PIN tries remaining: 3" in lines and "Reset code tries remaining: 0" in lines
    assert "Admin PIN tries remaining: 3" in lines and "KDF enabled: False" in lines
    assert "Require PIN for signature: Always" in lines
    info = info_json(ykterm)
    assert (info["pin_tries"], info["reset_code_tries"], info["admin_pin_tries"]) == (3, 0, 3)
    assert info["openpgp_version"] == "3.4" and info["application_version"] == "5.7.2"
    assert info["serial"] == 28123456 and info["manufacturer"] == 6
    assert info["signature_pin_policy"] == "always" and info["kdf_enabled"] is False
    assert [k["slot"] for k in info["keys"]] == ["sig", "dec", "aut", "att"]
    # Only the attestation key is there, as a YubiKey leaves the factory with it.
    assert [k["slot"] for k in info["keys"] if k["has_key"]] == ["att"]
    r = ykterm("keys", "info", "sig", check=False)
    assert r.returncode == 1 and "holds no key" in r.stderr


def test_ykterm_changes_seen_by_ykman(key, home_env, ykterm, ykman, tmp_path):
    # Tries: asked first (--force here), then the admin PIN from standard input.
    r = ykterm("access", "set-retries", "5", "6", "7", input=ADMIN + "\n", check=False)
    assert r.returncode == 2 and "nothing was changed" in r.stderr
    ykterm("access", "set-retries", "5", "6", "7", "--force", input=ADMIN + "\n")
    lines = flat(ykman("info").stdout)
    assert "PIN tries remaining: 5" in lines and "Admin PIN tries remaining: 7" in lines
    # No reset code yet, so it has no tries; once set it has the 6.
    assert "Reset code tries remaining: 0" in lines
    ykterm("access", "change-reset-code", input=ADMIN + "\nresetcode1\n")
    assert "Reset code tries remaining: 6" in flat(ykman("info").stdout)

    # The PIN: ykterm changes it, ykman verifies with the new one (and the old one fails).
    ykterm("access", "change-pin", input="123456\n24681357\n")
    ykman("access", "change-pin", "-P", "24681357", "-n", "13572468")
    r = ykman("access", "change-pin", "-P", "24681357", "-n", "11111111", check=False)
    assert r.returncode != 0
    assert "PIN tries remaining: 4" in flat(ykman("info").stdout)
    # The reset code ykterm set unblocks the PIN for ykman.
    ykman("access", "unblock-pin", "-r", "resetcode1", "-n", "55555555")
    ykterm("access", "change-pin", input="55555555\n123456\n")

    # The signature PIN policy, with the admin PIN.
    ykterm("access", "set-signature-policy", "once", input=ADMIN + "\n")
    assert "Require PIN for signature: Once" in flat(ykman("info").stdout)
    ykterm("access", "set-signature-policy", "always", input=ADMIN + "\n")
    assert "Require PIN for signature: Always" in flat(ykman("info").stdout)
    r = ykterm("access", "set-signature-policy", "sometimes", input=ADMIN + "\n", check=False)
    assert r.returncode == 2

    # The admin PIN, then a touch policy on an imported key (ykman shows slots with keys only).
    ykterm("access", "change-admin-pin", input=ADMIN + "\nadmin-pin-2\n")
    yubikit_key(key, home_env, "admin-pin-2", "sig", "SECP256R1")
    ykterm("keys", "set-touch", "sig", "cached", input="admin-pin-2\n")
    assert "Touch policy: Cached" in flat(ykman("keys", "info", "sig").stdout)
    # A fixed policy is asked about first; --force sets it, and then nothing turns it off.
    r = ykterm("keys", "set-touch", "sig", "fixed", input="admin-pin-2\n", check=False)
    assert r.returncode == 2 and "nothing was changed" in r.stderr
    ykterm("keys", "set-touch", "sig", "fixed", "--force", input="admin-pin-2\n")
    lines = flat(ykman("info").stdout)
    assert "Touch policy: On (fixed)" in lines
    r = ykterm("keys", "set-touch", "sig", "off", input="admin-pin-2\n", check=False)
    assert r.returncode == 1 and "fixed" in r.stderr

    # A wrong admin PIN: ykterm says how many tries are left, ykman agrees.
    r = ykterm("keys", "set-touch", "dec", "on", input="wrong-admin\n", check=False)
    assert r.returncode == 1 and "6 tries left" in r.stderr, r.stderr
    assert "Admin PIN tries remaining: 6" in flat(ykman("info").stdout)

    # The reset: asked first, then everything is as new for ykman.
    r = ykterm("reset", check=False)
    assert r.returncode == 2
    ykterm("reset", "--force")
    lines = flat(ykman("info").stdout)
    assert "PIN tries remaining: 3" in lines and "Admin PIN tries remaining: 3" in lines
    assert not any(line.startswith("Signature key") for line in lines)
    ykman("access", "change-pin", "-P", "123456", "-n", "123456")


def test_ykman_changes_seen_by_ykterm(key, home_env, ykterm, ykman, tmp_path):
    ykman("access", "set-retries", "4", "5", "6", "-a", ADMIN, "-f")
    info = info_json(ykterm)
    assert (info["pin_tries"], info["reset_code_tries"], info["admin_pin_tries"]) == (4, 0, 6)

    ykman("access", "set-signature-policy", "once", "-a", ADMIN)
    assert info_json(ykterm)["signature_pin_policy"] == "once"
    ykman("access", "set-signature-policy", "always", "-a", ADMIN)
    assert info_json(ykterm)["signature_pin_policy"] == "always"

    ykman("access", "change-pin", "-P", "123456", "-n", "7654321")
    # The PIN ykman set is the one ykterm must give; the old one is wrong.
    r = ykterm("access", "change-pin", input="123456\n111111\n", check=False)
    assert r.returncode == 1 and "3 tries left" in r.stderr, r.stderr
    ykterm("access", "change-pin", input="7654321\n123456\n")
    assert info_json(ykterm)["pin_tries"] == 4

    # Keys ykman's library imports and generates, with the touch policies ykman sets.
    for slot, spec in (("sig", ["-algorithm", "ED25519"]), ("aut", ["-algorithm", "RSA", "-pkeyopt",
                                                                    "rsa_keygen_bits:2048"])):
        pem = tmp_path / f"{slot}.pem"
        subprocess.run(["openssl", "genpkey", *spec, "-out", str(pem)], check=True, capture_output=True)
        yubikit_key(key, home_env, ADMIN, slot, pem)
    yubikit_key(key, home_env, ADMIN, "dec", "X25519")
    ykman("keys", "set-touch", "sig", "on", "-a", ADMIN, "-f")
    ykman("keys", "set-touch", "aut", "cached-fixed", "-a", ADMIN, "-f")
    keys = {k["slot"]: k for k in info_json(ykterm)["keys"]}
    assert keys["sig"]["has_key"] and keys["sig"]["algorithm"] == "Ed25519" and keys["sig"]["origin"] == "imported"
    assert keys["sig"]["touch_policy"] == "on"
    assert keys["aut"]["algorithm"] == "RSA2048" and keys["aut"]["touch_policy"] == "cached-fixed"
    assert keys["dec"]["has_key"] and keys["dec"]["origin"] == "generated" and keys["dec"]["algorithm"] == "X25519"
    assert keys["dec"]["touch_policy"] == "off"
    text = ykterm("keys", "info", "aut").stdout
    assert "RSA2048" in text and "cached-fixed" in text and "imported" in text

    ykman("reset", "-f")
    info = info_json(ykterm)
    assert (info["pin_tries"], info["admin_pin_tries"]) == (3, 3)
    # A reset keeps the attestation key.
    assert [k["slot"] for k in info["keys"] if k["has_key"]] == ["att"]


# --- GnuPG ------------------------------------------------------------------------------------------------------

def libpcsclite():
    """The libpcsclite the test's pcscd speaks to (the system's), for scdaemon's pcsc-driver."""
    out = subprocess.run(["ldconfig", "-p"], capture_output=True, text=True).stdout
    for line in out.splitlines():
        if line.strip().startswith("libpcsclite.so.1 ") and "=>" in line:
            return line.split("=>", 1)[1].strip()
    return "libpcsclite.so.1"


class GnuPG:
    """gpg with a GNUPGHOME of its own, whose scdaemon reaches the key through the test's pcscd."""

    def __init__(self, pcsc):
        # A short path: gpg-agent's sockets live in it.
        self.home = tempfile.mkdtemp(prefix="gpg")
        with open(os.path.join(self.home, "scdaemon.conf"), "w") as f:
            f.write(f"disable-ccid\npcsc-driver {libpcsclite()}\npcsc-shared\n")
        with open(os.path.join(self.home, "gpg-agent.conf"), "w") as f:
            f.write("allow-loopback-pinentry\n")
        self.env = pcsc.env(GNUPGHOME=self.home, HOME=self.home)

    def run(self, *args, input=None, check=True):
        r = subprocess.run(["gpg", *map(str, args)], input=input, env=self.env, capture_output=True, text=True,
                           timeout=120)
        if check and r.returncode != 0:
            raise AssertionError(f"gpg {' '.join(map(str, args))} exited {r.returncode}\n{r.stdout}\n{r.stderr}")
        return r

    def card_status(self):
        return self.run("--batch", "--card-status").stdout

    def card_edit(self, *lines, check=True):
        """--card-edit with its questions and PINs answered from `lines`, as GnuPG's status protocol asks them."""
        return self.run("--no-tty", "--command-fd", "0", "--status-fd", "1", "--pinentry-mode", "loopback",
                        "--card-edit", input="".join(f"{line}\n" for line in lines), check=check)

    def restart(self):
        """A fresh scdaemon (and agent): one that still believes a PIN verified which another program's SELECT
        has since forgotten on the card would fail its next command."""
        self.stop()

    def pids(self):
        out = []
        for command in ("getinfo pid", "scd getinfo pid"):
            r = subprocess.run(["gpg-connect-agent", "--no-autostart", command, "/bye"], env=self.env,
                               capture_output=True, text=True, timeout=30)
            out += [int(m) for m in re.findall(r"^D (\d+)$", r.stdout, re.M)]
        return out

    def stop(self):
        """gpgconf --kill, then by PID whatever is left of the agent and its scdaemon."""
        pids = self.pids()
        subprocess.run(["gpgconf", "--kill", "all"], env=self.env, capture_output=True, timeout=30)
        deadline = time.monotonic() + 5
        for pid in pids:
            while os.path.exists(f"/proc/{pid}") and time.monotonic() < deadline:
                time.sleep(0.05)
            if os.path.exists(f"/proc/{pid}"):
                os.kill(pid, signal.SIGKILL)

    def cleanup(self):
        self.stop()
        shutil.rmtree(self.home, ignore_errors=True)


@pytest.fixture
def gnupg(pcsc, key):
    if not (shutil.which("gpg") and os.path.exists("/usr/lib/gnupg/scdaemon")):
        pytest.skip("gnupg and scdaemon are not installed (make deps installs them for the tests)")
    g = GnuPG(pcsc)
    yield g
    g.cleanup()


def retry_counters(status):
    m = re.search(r"^PIN retry counter : (\d+) (\d+) (\d+)$", status, re.M)
    assert m, status
    return tuple(int(x) for x in m.groups())


def test_gpg_card_status_shows_what_ykterm_set_and_needs_the_pin_ykterm_changed(gnupg, ykterm):
    status = gnupg.card_status()
    assert "Manufacturer .....: Yubico" in status and "Serial number ....: 28123456" in status
    assert "Version ..........: 3.4" in status and retry_counters(status) == (3, 0, 3)
    assert "Key attributes ...: rsa2048 rsa2048 rsa2048" in status and "Signature PIN ....: forced" in status

    ykterm("access", "set-retries", "5", "4", "6", "--force", input=ADMIN + "\n")
    ykterm("access", "change-reset-code", input=ADMIN + "\nresetcode1\n")
    ykterm("access", "change-pin", input="123456\n24681357\n")
    gnupg.restart()
    assert retry_counters(gnupg.card_status()) == (5, 4, 6)
    # gpg's "verify" with the old PIN uses up a try; with the one ykterm set it succeeds and gives it back.
    gnupg.card_edit("verify", "123456", "quit")
    assert retry_counters(gnupg.card_status()) == (4, 4, 6)
    gnupg.card_edit("verify", "24681357", "quit")
    assert retry_counters(gnupg.card_status()) == (5, 4, 6)
    assert info_json(ykterm)["pin_tries"] == 5


def test_keys_gpg_generates_sign_decrypt_and_show_in_ykterm_with_gpgs_fingerprints(gnupg, ykterm, ykman):
    # The cardholder's name and URL, written by gpg, read by ykterm.
    gnupg.card_edit("admin", "name", "Doe", "Jane", ADMIN, "url", "https://example.org/jane.asc", "quit")
    info = info_json(ykterm)
    assert info["cardholder"] == "Jane Doe" and info["url"] == "https://example.org/jane.asc"

    # ykterm's SELECT forgot the admin PIN scdaemon verified: a fresh scdaemon asks again.
    gnupg.restart()
    # generate: no backup of the encryption key, admin PIN, PIN, no expiry, the user ID, then the PIN for the
    # self-signatures.
    r = gnupg.card_edit("admin", "generate", "n", ADMIN, "123456", "0", "Jane Doe", "jane@example.org", "",
                        "123456", "123456", "123456", "quit")
    assert "KEY_CREATED" in r.stdout, r.stdout + r.stderr
    colons = gnupg.run("--batch", "--with-colons", "--card-status").stdout
    fprs = next(line for line in colons.splitlines() if line.startswith("fpr:")).split(":")[1:4]
    assert all(len(f) == 40 for f in fprs)
    keys = {k["slot"]: k for k in info_json(ykterm)["keys"]}
    assert [keys[s]["fingerprint"] for s in ("sig", "aut", "dec")] == [fprs[0], fprs[2], fprs[1]]
    assert all(keys[s]["origin"] == "generated" and keys[s]["algorithm"] == "RSA2048" for s in ("sig", "dec", "aut"))
    assert keys["sig"]["created"] is not None
    # ykman sees the same fingerprints.
    ykman_info = ykman("info").stdout.replace(" ", "")
    assert all(f in ykman_info for f in fprs)

    # A detached signature made on the card verifies; a message encrypted to the card's key decrypts on it.
    gnupg.restart()
    message = os.path.join(gnupg.home, "message.txt")
    with open(message, "w") as f:
        f.write("signed and sealed by the virtual key\n")
    gnupg.run("--batch", "--pinentry-mode", "loopback", "--passphrase-fd", "0", "--output", message + ".sig",
              "--detach-sign", message, input="123456\n")
    assert "Good signature" in gnupg.run("--batch", "--verify", message + ".sig", message).stderr
    gnupg.run("--batch", "--trust-model", "always", "--encrypt", "-r", "jane@example.org", "--output",
              message + ".gpg", message)
    r = gnupg.run("--batch", "--pinentry-mode", "loopback", "--passphrase-fd", "0", "--decrypt", message + ".gpg",
                  input="123456\n")
    assert r.stdout == "signed and sealed by the virtual key\n"
    # The signature counter counts gpg's signatures: the self-signature(s) and the detached one.
    counter = re.search(r"^Signature counter : (\d+)$", gnupg.card_status(), re.M)
    assert counter and int(counter.group(1)) >= 2
    assert info_json(ykterm)["signature_counter"] == int(counter.group(1))


# --- Key import -----------------------------------------------------------------------------------------------------

SIGN_WITH_CARD = """
import sys
from ykman.pcsc import list_devices
from yubikit.core.smartcard import SmartCardConnection
from yubikit.openpgp import OpenPgpSession
from cryptography.hazmat.primitives import hashes
reader, pin, message, out = sys.argv[1:5]
device = [d for d in list_devices(reader)][0]
with device.open_connection(SmartCardConnection) as connection:
    session = OpenPgpSession(connection)
    session.verify_pin(pin)
    open(out, "wb").write(session.sign(open(message, "rb").read(), hashes.SHA256()))
"""


def v4_fingerprint(pem_path, created):
    """The OpenPGP v4 fingerprint (RFC 4880, 12.2) of a P-256 ECDSA key, computed here from the PEM file."""
    import hashlib
    import struct
    from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat, load_pem_private_key
    point = load_pem_private_key(open(pem_path, "rb").read(), None).public_key().public_bytes(
        Encoding.X962, PublicFormat.UncompressedPoint)
    oid = bytes.fromhex("2A8648CE3D030107")
    bits = (len(point) - 1) * 8 + point[0].bit_length()
    body = struct.pack(">BIB", 4, created, 19) + bytes([len(oid)]) + oid + struct.pack(">H", bits) + point
    return hashlib.sha1(b"\x99" + struct.pack(">H", len(body)) + body).hexdigest().upper()


def test_ykterm_imports_keys_that_ykman_and_gnupg_see_and_the_card_signs_with(key, home_env, gnupg, ykterm, ykman,
                                                                               tmp_path):
    pem = tmp_path / "sig.pem"
    subprocess.run(["openssl", "genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out",
                    str(pem)], check=True, capture_output=True)
    r = ykterm("keys", "import", "sig", str(pem), input=ADMIN + "\n")
    assert "Key imported into slot sig" in r.stdout
    keys = {k["slot"]: k for k in info_json(ykterm)["keys"]}
    assert keys["sig"]["algorithm"] == "SECP256R1" and keys["sig"]["origin"] == "imported"
    assert json.loads(ykterm("keys", "info", "sig", "--json").stdout) == keys["sig"]

    # GnuPG reads the fingerprint and time ykterm wrote. GnuPG signs only with a key in its keyring, and making
    # the OpenPGP public key (a self-signed certificate) for it is beyond a test: so the fingerprint is computed
    # here from the PEM file and the creation time gpg reads, and the card's signature (made with ykman's library)
    # is checked with openssl against the PEM's public key.
    colons = gnupg.run("--batch", "--with-colons", "--card-status").stdout
    fpr = next(line for line in colons.splitlines() if line.startswith("fpr:")).split(":")[1]
    created = int(next(line for line in colons.splitlines() if line.startswith("fprtime:")).split(":")[1])
    assert fpr == keys["sig"]["fingerprint"] == v4_fingerprint(pem, created)
    assert "Key attributes ...: nistp256" in gnupg.card_status()
    assert fpr in ykman("keys", "info", "sig").stdout.replace(" ", "")
    gnupg.stop()
    message, signature, public = tmp_path / "message", tmp_path / "message.sig", tmp_path / "public.pem"
    message.write_bytes(b"signed by an imported key\n")
    r = subprocess.run([str(VENV_BIN / "python"), "-c", SIGN_WITH_CARD, key.reader, "123456", str(message),
                        str(signature)], env=home_env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    subprocess.run(["openssl", "pkey", "-in", str(pem), "-pubout", "-out", str(public)], check=True)
    subprocess.run(["openssl", "dgst", "-sha256", "-verify", str(public), "-signature", str(signature), str(message)],
                   check=True, capture_output=True)

    # A key in the slot: asked first, --force replaces it (RSA now, the attributes follow).
    rsa = tmp_path / "rsa.pem"
    subprocess.run(["openssl", "genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048", "-out",
                    str(rsa)], check=True, capture_output=True)
    r = ykterm("keys", "import", "sig", str(rsa), input=ADMIN + "\n", check=False)
    assert r.returncode == 2 and "nothing was changed" in r.stderr
    ykterm("keys", "import", "sig", str(rsa), "--force", input=ADMIN + "\n")
    assert "Algorithm: RSA2048" in flat(ykman("keys", "info", "sig").stdout)

    # X25519 for decryption, Ed25519 for authentication; ykman reads both.
    for slot, algorithm in (("dec", "X25519"), ("aut", "ED25519")):
        path = tmp_path / f"{slot}.pem"
        subprocess.run(["openssl", "genpkey", "-algorithm", algorithm, "-out", str(path)], check=True,
                       capture_output=True)
        ykterm("keys", "import", slot, str(path), input=ADMIN + "\n")
    assert "Algorithm: X25519" in flat(ykman("keys", "info", "dec").stdout)
    assert "Algorithm: Ed25519" in flat(ykman("keys", "info", "aut").stdout)

    # Refused before anything is sent: a kind the slot does not take, an encrypted file.
    r = ykterm("keys", "import", "dec", str(tmp_path / "aut.pem"), "--force", input=ADMIN + "\n", check=False)
    assert r.returncode == 2 and "does not take" in r.stderr
    encrypted = tmp_path / "encrypted.pem"
    subprocess.run(["openssl", "pkcs8", "-topk8", "-in", str(pem), "-out", str(encrypted), "-passout", "pass:x"],
                   check=True, capture_output=True)
    r = ykterm("keys", "import", "sig", str(encrypted), "--force", input=ADMIN + "\n", check=False)
    assert r.returncode == 2 and "openssl pkcs8" in r.stderr
    assert info_json(ykterm)["admin_pin_tries"] == 3


DECRYPT_WITH_CARD = """
import sys
from ykman.pcsc import list_devices
from yubikit.core.smartcard import SmartCardConnection
from yubikit.openpgp import OpenPgpSession
from cryptography.hazmat.primitives.serialization import load_pem_public_key
reader, pin, peer, out = sys.argv[1:5]
device = [d for d in list_devices(reader)][0]
with device.open_connection(SmartCardConnection) as connection:
    session = OpenPgpSession(connection)
    session.verify_pin(pin, extended=True)
    open(out, "wb").write(session.decrypt(load_pem_public_key(open(peer, "rb").read())))
"""

# The curves a YubiKey 5.7 takes beside P-256 and P-384: openssl's name, the OID's DER content, ykman's name, gpg's.
MORE_CURVES = (
    ("P-521", "2B81040023", "SECP521R1", "nistp521"),
    ("brainpoolP256r1", "2B2403030208010107", "BrainpoolP256R1", "brainpoolP256r1"),
    ("brainpoolP384r1", "2B240303020801010B", "BrainpoolP384R1", "brainpoolP384r1"),
    ("brainpoolP512r1", "2B240303020801010D", "BrainpoolP512R1", "brainpoolP512r1"),
)


def v4_ecdsa_fingerprint(pem_path, created, oid_hex):
    """The v4 fingerprint of an ECDSA key on the curve of `oid_hex`, computed here from the PEM file."""
    import hashlib
    import struct
    from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat, load_pem_private_key
    point = load_pem_private_key(open(pem_path, "rb").read(), None).public_key().public_bytes(
        Encoding.X962, PublicFormat.UncompressedPoint)
    oid = bytes.fromhex(oid_hex)
    bits = (len(point) - 1) * 8 + point[0].bit_length()
    body = struct.pack(">BIB", 4, created, 19) + bytes([len(oid)]) + oid + struct.pack(">H", bits) + point
    return hashlib.sha1(b"\x99" + struct.pack(">H", len(body)) + body).hexdigest().upper()


def test_p521_and_brainpool_keys_ykterm_imports_sign_and_decrypt_for_ykman_and_show_in_gpg(key, home_env, gnupg,
                                                                                          ykterm, ykman, tmp_path):
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.hazmat.primitives.serialization import (Encoding, PublicFormat, load_pem_private_key)
    for curve, oid, name, gpg_name in MORE_CURVES:
        sig, dec = tmp_path / f"{curve}.sig.pem", tmp_path / f"{curve}.dec.pem"
        for pem in (sig, dec):
            subprocess.run(["openssl", "genpkey", "-algorithm", "EC", "-pkeyopt", f"ec_paramgen_curve:{curve}",
                            "-out", str(pem)], check=True, capture_output=True)
        ykterm("keys", "import", "sig", str(sig), "--force", input=ADMIN + "\n")
        ykterm("keys", "import", "dec", str(dec), "--force", input=ADMIN + "\n")
        keys = {k["slot"]: k for k in info_json(ykterm)["keys"]}
        assert keys["sig"]["algorithm"] == keys["dec"]["algorithm"] == name, keys
        assert f"Algorithm: {name}" in flat(ykman("keys", "info", "sig").stdout)
        assert f"Algorithm: {name}" in flat(ykman("keys", "info", "dec").stdout)

        # GnuPG 2.2 reads the attributes, and the fingerprint ykterm computed and wrote is the key's.
        gnupg.restart()
        status = gnupg.card_status()
        assert f"Key attributes ...: {gpg_name} {gpg_name} " in status, status
        colons = gnupg.run("--batch", "--with-colons", "--card-status").stdout
        fpr = next(line for line in colons.splitlines() if line.startswith("fpr:")).split(":")[1]
        created = int(next(line for line in colons.splitlines() if line.startswith("fprtime:")).split(":")[1])
        assert fpr == keys["sig"]["fingerprint"] == v4_ecdsa_fingerprint(sig, created, oid)
        gnupg.stop()

        # The card signs (ECDSA, checked by openssl with the PEM's public key) and agrees on a secret (ECDH,
        # the same as python's from the PEM's private key and the peer's public key).
        message, signature, public = tmp_path / "message", tmp_path / "message.sig", tmp_path / "public.pem"
        message.write_bytes(f"signed on {curve}\n".encode())
        r = subprocess.run([str(VENV_BIN / "python"), "-c", SIGN_WITH_CARD, key.reader, "123456", str(message),
                            str(signature)], env=home_env, capture_output=True, text=True, timeout=120)
        assert r.returncode == 0, r.stderr
        subprocess.run(["openssl", "pkey", "-in", str(sig), "-pubout", "-out", str(public)], check=True)
        subprocess.run(["openssl", "dgst", "-sha256", "-verify", str(public), "-signature", str(signature),
                        str(message)], check=True, capture_output=True)
        mine = load_pem_private_key(dec.read_bytes(), None)
        peer = ec.generate_private_key(mine.curve)
        peer_pem, secret = tmp_path / "peer.pem", tmp_path / "secret"
        peer_pem.write_bytes(peer.public_key().public_bytes(Encoding.PEM, PublicFormat.SubjectPublicKeyInfo))
        r = subprocess.run([str(VENV_BIN / "python"), "-c", DECRYPT_WITH_CARD, key.reader, "123456", str(peer_pem),
                            str(secret)], env=home_env, capture_output=True, text=True, timeout=120)
        assert r.returncode == 0, r.stderr
        assert secret.read_bytes() == mine.exchange(ec.ECDH(), peer.public_key())


def test_attestations_ykterm_and_ykman_make_chain_to_the_attestation_certificate(ykterm, ykman, tmp_path):
    pem = tmp_path / "sig.pem"
    subprocess.run(["openssl", "genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out",
                    str(pem)], check=True, capture_output=True)
    ykterm("keys", "import", "sig", str(pem), input=ADMIN + "\n")
    r = ykterm("keys", "attest", "sig", input="wrong-pin\n", check=False)
    assert r.returncode == 1 and "2 tries left" in r.stderr
    r = ykterm("keys", "attest", "sig", input="123456\n")
    assert "Attested by" in r.stderr and "OpenPGP Attestation" in r.stderr
    ours = tmp_path / "ykterm.pem"
    ours.write_text(r.stdout)
    ykterm("keys", "attest", "sig", "--out", str(tmp_path / "ykterm.der"), "--format", "der", input="123456\n")
    theirs = tmp_path / "ykman.pem"
    # ykman asks before it replaces the certificate ykterm's attestation left in the slot.
    ykman("keys", "attest", "sig", str(theirs), "-P", "123456", input="y\n")
    att = tmp_path / "att.pem"
    ykman("certificates", "export", "att", str(att))
    for certificate in (ours, theirs):
        r = subprocess.run(["openssl", "verify", "-CAfile", str(att), str(certificate)], capture_output=True,
                           text=True)
        assert r.returncode == 0, r.stdout + r.stderr
        spki = subprocess.run(["openssl", "x509", "-in", str(certificate), "-noout", "-pubkey"], capture_output=True,
                              text=True, check=True).stdout
        assert spki == subprocess.run(["openssl", "pkey", "-in", str(pem), "-pubout"], capture_output=True,
                                      text=True, check=True).stdout
    # --format der: a certificate (each attestation is a new one) of the same key.
    assert spki == subprocess.run(["openssl", "x509", "-inform", "DER", "-in", str(tmp_path / "ykterm.der"),
                                   "-noout", "-pubkey"], capture_output=True, text=True, check=True).stdout
    r = ykterm("keys", "attest", "dec", input="123456\n", check=False)
    assert r.returncode == 1 and "holds no key" in r.stderr


def test_certificates_ykterm_and_ykman_store_export_and_delete_for_each_other(ykterm, ykman, tmp_path):
    def certificate(name):
        pem = tmp_path / f"{name}.pem"
        subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                        "-keyout", str(tmp_path / f"{name}.key"), "-subj", f"/CN={name}", "-days", "2",
                        "-out", str(pem)], check=True, capture_output=True)
        der = tmp_path / f"{name}.der"
        subprocess.run(["openssl", "x509", "-in", str(pem), "-outform", "DER", "-out", str(der)], check=True)
        return pem, der

    r = ykterm("certificates", "export", "aut", check=False)
    assert r.returncode == 1 and "has no certificate" in r.stderr
    # ykterm stores (PEM and DER files), ykman reads.
    for slot in ("sig", "aut", "att"):
        pem, der = certificate(slot)
        ykterm("certificates", "import", slot, str(pem if slot != "aut" else der), input=ADMIN + "\n")
        ykman("certificates", "export", slot, str(tmp_path / f"{slot}.ykman.der"), "-F", "DER")
        assert (tmp_path / f"{slot}.ykman.der").read_bytes() == der.read_bytes()
        assert ykterm("certificates", "export", slot).stdout == pem.read_text()
    # ykman stores, ykterm reads (DER with --format der, to a file with --out).
    pem, der = certificate("dec")
    ykman("certificates", "import", "dec", str(pem), "-a", ADMIN)
    ykterm("certificates", "export", "dec", "--format", "der", "--out", str(tmp_path / "dec.out"))
    assert (tmp_path / "dec.out").read_bytes() == der.read_bytes()
    # Deleted by ykterm: gone for ykman; deleted by ykman: gone for ykterm. The others stay.
    ykterm("certificates", "delete", "aut", input=ADMIN + "\n")
    assert ykman("certificates", "export", "aut", str(tmp_path / "gone.pem"), check=False).returncode != 0
    ykman("certificates", "delete", "dec", "-a", ADMIN)
    assert ykterm("certificates", "export", "dec", check=False).returncode == 1
    assert ykterm("certificates", "export", "sig").stdout == (tmp_path / "sig.pem").read_text()
    r = ykterm("certificates", "import", "sig", str(tmp_path / "sig.key"), input=ADMIN + "\n", check=False)
    assert r.returncode == 2 and "not an X.509 certificate" in r.stderr


def test_info_shows_each_slots_certificate_that_ykman_stored_and_none_after_ykterm_deletes_it(ykterm, ykman,
                                                                                              tmp_path):
    pem = tmp_path / "sig.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                    "-keyout", str(tmp_path / "sig.key"), "-subj", "/CN=Jane Doe/O=Example", "-days", "30",
                    "-out", str(pem)], check=True, capture_output=True)
    end = subprocess.run(["openssl", "x509", "-in", str(pem), "-noout", "-enddate", "-dateopt", "iso_8601"],
                         capture_output=True, text=True, check=True).stdout.strip().split("=", 1)[1]
    fingerprint = subprocess.run(["openssl", "x509", "-in", str(pem), "-noout", "-fingerprint", "-sha256"],
                                 capture_output=True, text=True, check=True).stdout.strip().split("=", 1)[1]
    before = {c["slot"]: c for c in info_json(ykterm)["certificates"]}
    assert list(before) == ["sig", "dec", "aut", "att"]
    assert not any(c["present"] or c["subject"] for slot, c in before.items() if slot != "att")
    # The attestation certificate is there from the start, the one ykman exports.
    ykman("certificates", "export", "att", str(tmp_path / "att.pem"))
    att_fingerprint = subprocess.run(["openssl", "x509", "-in", str(tmp_path / "att.pem"), "-noout", "-fingerprint",
                                      "-sha256"], capture_output=True, text=True, check=True).stdout.strip()
    assert before["att"]["present"] and att_fingerprint.split("=", 1)[1] == before["att"]["sha256_fingerprint"]

    ykman("certificates", "import", "sig", str(pem), "-a", ADMIN)
    info = info_json(ykterm)
    sig = info["certificates"][0]
    assert sig["slot"] == "sig" and sig["present"] and sig["subject"] == "CN=Jane Doe, O=Example"
    assert sig["issuer"] == sig["subject"] and sig["sha256_fingerprint"] == fingerprint
    # openssl's ISO 8601 end date ("2026-12-30 10:57:36Z") is the same instant as ours.
    assert sig["not_after"].replace("T", " ") == end
    assert not info["certificates"][1]["present"] and info["certificates"][1]["subject"] is None
    def blocks():
        """`info`'s text in blocks (one per slot after the first), each line "Name: value"."""
        lines = [re.sub(r"\s{2,}", ": ", line.strip()) for line in ykterm("info").stdout.splitlines()]
        return "\n".join(lines).split("\n\n")
    sig_block = next(b for b in blocks() if b.startswith("Signature key"))
    assert "Certificate: CN=Jane Doe, O=Example" in sig_block and f"Expires: {sig['not_after']}" in sig_block
    dec_block = next(b for b in blocks() if b.startswith("Decryption key"))
    assert "Certificate: none" in dec_block

    ykterm("certificates", "delete", "sig", input=ADMIN + "\n")
    r = ykman("certificates", "export", "sig", str(tmp_path / "gone.pem"), check=False)
    assert r.returncode != 0 and not (tmp_path / "gone.pem").exists()
    assert not info_json(ykterm)["certificates"][0]["present"]
    assert "Certificate: none" in next(b for b in blocks() if b.startswith("Signature key"))


def kdf_setting(gnupg):
    m = re.search(r"^KDF setting \.+: (\w+)$", gnupg.card_status(), re.M)
    assert m, gnupg.card_status()
    return m.group(1)


def test_a_kdf_gpg_sets_up_is_derived_alike_by_ykterm_and_ykman_and_one_ykterm_sets_up_by_gpg(gnupg, ykterm, ykman):
    """GnuPG's kdf-setup, ykterm's `access kdf` and yubikit each derive the PINs (iterated and salted S2K) from the
    card's KDF object; a PIN one of them set, the others verify: so the three derivations agree."""
    assert kdf_setting(gnupg) == "off"
    gnupg.card_edit("admin", "kdf-setup", ADMIN, "quit")
    gnupg.restart()
    assert kdf_setting(gnupg) == "on" and info_json(ykterm)["kdf_enabled"] is True
    assert "KDF enabled: True" in flat(ykman("info").stdout)
    # The defaults, now sent derived: ykterm changes the PIN, gpg verifies the new one (its tries stay full).
    ykterm("access", "change-pin", input="123456\n24681357\n")
    gnupg.restart()
    gnupg.card_edit("verify", "24681357", "quit")
    assert retry_counters(gnupg.card_status()) == (3, 0, 3)
    # ykman (yubikit) changes it from the one ykterm set; ykterm's admin PIN change and reset code work for gpg and
    # ykman.
    ykman("access", "change-pin", "-P", "24681357", "-n", "13572468")
    ykterm("access", "change-admin-pin", input=ADMIN + "\nadmin-pin-2\n")
    ykterm("access", "change-reset-code", input="admin-pin-2\nresetcode1\n")
    ykman("access", "unblock-pin", "-a", "admin-pin-2", "-n", "97531864")
    r = ykterm("access", "change-pin", input="13572468\n11223344\n", check=False)
    assert r.returncode == 1 and "wrong PIN" in r.stderr, r.stderr
    ykterm("access", "unblock-pin", input="resetcode1\n55555555\n")
    gnupg.restart()
    gnupg.card_edit("verify", "55555555", "quit")
    assert retry_counters(gnupg.card_status())[0] == 3

    # ykterm turns it off (the defaults again, as typed) and on again: gpg verifies the defaults each time, which it
    # derives from the object ykterm wrote.
    r = ykterm("access", "kdf", "off", input="admin-pin-2\n", check=False)
    assert r.returncode == 2 and "nothing was changed" in r.stderr, r.stderr
    ykterm("access", "kdf", "off", "--force", input="admin-pin-2\n")
    gnupg.restart()
    assert kdf_setting(gnupg) == "off" and info_json(ykterm)["kdf_enabled"] is False
    gnupg.restart()
    gnupg.card_edit("verify", "123456", "quit")
    out = ykterm("access", "kdf", "on", "--force", input=ADMIN + "\n").stdout
    assert "KDF on" in out, out
    gnupg.restart()
    assert kdf_setting(gnupg) == "on"
    gnupg.card_edit("verify", "123456", "quit")
    gnupg.card_edit("admin", "name", "Doe", "Jane", ADMIN, "quit")
    assert retry_counters(gnupg.card_status()) == (3, 0, 3)
    assert info_json(ykterm)["cardholder"] == "Jane Doe"
    ykman("access", "change-admin-pin", "-a", ADMIN, "-n", "admin-pin-3")
    ykterm("access", "set-signature-policy", "once", input="admin-pin-3\n")


def test_a_yubikey_4_has_no_kdf(pcsc, env, tmp_path):
    """A YubiKey 4 (firmware 4.3.7) has no KDF object: ykterm and ykman read the KDF off, and ykterm's `access kdf
    on` says which firmware it needs, with the key unchanged."""
    k = ServedKey(pcsc, slot=0, state=tmp_path / "yk4.json", extra=["--firmware", "4.3.7"]).start()
    try:
        def info():
            return json.loads(run_ykterm("openpgp", "info", "--json", "--reader", k.reader, env=env).stdout)
        assert info()["kdf_enabled"] is False
        r = run_ykterm("openpgp", "access", "kdf", "on", "--force", "--reader", k.reader, env=env,
                       input="12345678\n", check=False)
        assert r.returncode == 1 and "5.2.0" in r.stderr and "4.3.7" in r.stderr, r.stderr
        assert info()["kdf_enabled"] is False and info()["admin_pin_tries"] == 3
        out = run_ykman(k.reader, "openpgp", "info", env=env).stdout
        assert re.search(r"^KDF enabled:\s+False$", out, re.M), out
    finally:
        k.stop()
