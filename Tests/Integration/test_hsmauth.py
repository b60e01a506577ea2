"""The virtual key's YubiHSM Auth application between ykterm and yubikey-manager: credentials ykterm adds (symmetric,
derived from a password, generated and imported asymmetric ones) `ykman hsmauth credentials list` shows, and
the reverse; the management password ykterm sets is the one ykman then needs; session keys ykterm calculates
equal those yubikit's `HsmAuthSession` calculates for the same credential and context, and both equal the
YubiHSM 2's derivation done here with python's cryptography (the YubiHSM 2's side of the handshake, for the
asymmetric credentials too)."""

import json
import os
import subprocess

import pytest

from harness import VENV_BIN, YKTERM, ServedKey, run_ykman, run_ykterm

CRED = "s3cret-cred"


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
        return run_ykterm("hsmauth", *args, "--reader", key.reader, env=home_env, input=input, check=check)
    return run


@pytest.fixture
def ykman(key, home_env):
    def run(*args, input=None, check=True):
        return run_ykman(key.reader, "hsmauth", *args, env=home_env, input=input, check=check)
    return run


def ykman_list(ykman):
    """{label: (type, touch, retries)} from `ykman hsmauth credentials list`."""
    out = {}
    for line in ykman("credentials", "list").stdout.splitlines()[2:]:
        label, kind, touch, retries = [f.strip() for f in line.split("\t")]
        out[label] = (kind, touch, int(retries))
    return out


def ykterm_list(ykterm):
    return {c["label"]: (c["type"], c["touch"], c["retries"])
            for c in json.loads(ykterm("credentials", "list", "--json").stdout)}


# yubikit's HsmAuthSession over the test's pcscd. Symmetric: the session keys for a context. Asymmetric: plays the
# YubiHSM 2 (static and ephemeral P-256 keys, the receipt) with python's cryptography, as python-yubihsm's
# client checks it, and prints what yubikit got and what the HSM side derived.
YUBIKIT = r"""
import json, sys
from cryptography.hazmat.primitives import cmac, hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.ciphers import algorithms
from cryptography.hazmat.primitives.kdf.x963kdf import X963KDF
from ykman.pcsc import list_devices
from yubikit.core.smartcard import SmartCardConnection
from yubikit.hsmauth import HsmAuthSession
reader, what, label, password = sys.argv[1:5]
device = [d for d in list_devices(reader)][0]
def point(k):
    return k.public_bytes(serialization.Encoding.X962, serialization.PublicFormat.UncompressedPoint)
with device.open_connection(SmartCardConnection) as connection:
    s = HsmAuthSession(connection)
    if what == "symmetric":
        keys = s.calculate_session_keys_symmetric(label, bytes.fromhex(sys.argv[5]), password)
        print(json.dumps([k.hex() for k in keys]))
    else:
        pk_oce = s.get_public_key(label)
        sk_sd = ec.generate_private_key(ec.SECP256R1())
        epk_oce = s.get_challenge(label, password)
        esk_sd = ec.generate_private_key(ec.SECP256R1())
        epk_sd = point(esk_sd.public_key())
        shsee = esk_sd.exchange(ec.ECDH(), ec.EllipticCurvePublicKey.from_encoded_point(ec.SECP256R1(), epk_oce))
        shsss = sk_sd.exchange(ec.ECDH(), pk_oce)
        shs = X963KDF(hashes.SHA256(), 64, b"\x3c\x88\x10").derive(shsee + shsss)
        c = cmac.CMAC(algorithms.AES(shs[:16]))
        c.update(epk_sd + epk_oce)
        receipt = c.finalize()
        keys = s.calculate_session_keys_asymmetric(label, epk_oce + epk_sd, sk_sd.public_key(), password, receipt)
        print(json.dumps({"yubikit": [k.hex() for k in keys], "hsm": [shs[16:32].hex(), shs[32:48].hex(), shs[48:].hex()]}))
"""


def yubikit(key, env, *args):
    r = subprocess.run([str(VENV_BIN / "python"), "-c", YUBIKIT, key.reader, *map(str, args)], env=env,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def yubihsm_symmetric(enc, mac, context):
    """The YubiHSM 2's session keys (SCP03's KDF with AES-CMAC), with python's cryptography."""
    from cryptography.hazmat.primitives import cmac
    from cryptography.hazmat.primitives.ciphers import algorithms

    def derive(k, t):
        c = cmac.CMAC(algorithms.AES(k))
        c.update(b"\0" * 11 + bytes([t, 0, 0, 0x80, 1]) + context)
        return c.finalize().hex()
    return [derive(enc, 4), derive(mac, 6), derive(mac, 7)]


def test_a_new_key_reads_the_same_in_both(ykterm, ykman):
    info = json.loads(ykterm("info", "--json").stdout)
    assert info == {"version": "5.7.2", "management_key_retries": 8, "credentials": 0}
    lines = ykman("info").stdout
    assert "5.7.2" in lines and "8/8" in lines
    assert "No YubiHSM Auth credentials" in ykterm("credentials", "list").stdout
    assert "No items found" in ykman("credentials", "list").stdout


def test_credentials_added_by_each_are_listed_by_the_other(key, home_env, ykterm, ykman, tmp_path):
    enc, mac = os.urandom(16), os.urandom(16)
    # ykterm adds: management password (empty: the default), credential password, then the keys.
    ykterm("credentials", "symmetric", "sym", input=f"\n{CRED}\n{enc.hex()}\n{mac.hex()}\n")
    ykterm("credentials", "derive", "derived", "--touch", input=f"\n{CRED}\npassword\n")
    ykterm("credentials", "generate", "gen", input=f"\n{CRED}\n")
    pem = tmp_path / "p256.pem"
    subprocess.run(["openssl", "genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out",
                    str(pem)], check=True, capture_output=True)
    ykterm("credentials", "import", "imported", str(pem), input=f"\n{CRED}\n")
    assert ykman_list(ykman) == {
        "sym": ("Symmetric", "Off", 8), "derived": ("Symmetric", "On", 8),
        "gen": ("Asymmetric", "Off", 8), "imported": ("Asymmetric", "Off", 8)}
    # The imported key's public key, as ykterm and ykman export it, is the file's.
    want = subprocess.run(["openssl", "pkey", "-in", str(pem), "-pubout"], check=True, capture_output=True,
                          text=True).stdout
    assert ykterm("credentials", "export", "imported").stdout == want
    ykman("credentials", "export", "imported", str(tmp_path / "ykman.pem"))
    assert (tmp_path / "ykman.pem").read_text() == want
    r = ykterm("credentials", "export", "sym", check=False)
    assert r.returncode == 1 and "symmetric" in r.stderr

    # ykman adds; ykterm lists.
    ykman("credentials", "symmetric", "ykman-sym", "-m", "", "-c", CRED, "-E", enc.hex(), "-M", mac.hex(), "-t")
    ykman("credentials", "generate", "ykman-gen", "-m", "", "-c", CRED)
    listed = ykterm_list(ykterm)
    assert listed["ykman-sym"] == ("symmetric", True, 8) and listed["ykman-gen"] == ("asymmetric", False, 8)
    assert listed["sym"] == ("symmetric", False, 8) and len(listed) == 6
    # A label that is taken is refused, and nothing changes.
    r = ykterm("credentials", "symmetric", "sym", "--generate", input=f"\n{CRED}\n", check=False)
    assert r.returncode == 1 and "already" in r.stderr

    # Deleting: each deletes what the other added.
    r = ykterm("credentials", "delete", "ykman-sym", input="\n", check=False)
    assert r.returncode == 2 and "--force" in r.stderr
    ykterm("credentials", "delete", "ykman-sym", "--force", input="\n")
    ykman("credentials", "delete", "sym", "-m", "", "--force")
    assert set(ykman_list(ykman)) == {"derived", "gen", "imported", "ykman-gen"}
    assert set(ykterm_list(ykterm)) == {"derived", "gen", "imported", "ykman-gen"}


def test_session_keys_equal_yubikits_and_the_yubihsm_derivation(key, home_env, ykterm, ykman):
    enc, mac = os.urandom(16), os.urandom(16)
    ykman("credentials", "symmetric", "sym", "-m", "", "-c", CRED, "-E", enc.hex(), "-M", mac.hex())
    ykterm("credentials", "derive", "derived", input=f"\n{CRED}\npassword\n")
    context = os.urandom(16)
    ours = json.loads(ykterm("credentials", "calculate", "sym", "--context", context.hex(), "--json",
                             input=CRED + "\n").stdout)
    theirs = yubikit(key, home_env, "symmetric", "sym", CRED, context.hex())
    assert [ours["enc"], ours["mac"], ours["rmac"]] == theirs == yubihsm_symmetric(enc, mac, context)
    # The derived credential's keys are PBKDF2's from "password", as the YubiHSM 2's default authentication key.
    import hashlib
    derived = hashlib.pbkdf2_hmac("sha256", b"password", b"Yubico", 10000, 32)
    text = ykterm("credentials", "calculate", "derived", "--context", context.hex(), input=CRED + "\n").stdout
    assert text.splitlines() == [f"S-{n}: {k}" for n, k in
                                 zip(["ENC", "MAC", "RMAC"], yubihsm_symmetric(derived[:16], derived[16:], context))]
    # A wrong credential password costs a try, as ykman's list shows; the right one restores them.
    r = ykterm("credentials", "calculate", "sym", "--context", context.hex(), input="wrong\n", check=False)
    assert r.returncode == 1 and "7 tries left" in r.stderr
    assert ykman_list(ykman)["sym"][2] == 7
    yubikit(key, home_env, "symmetric", "sym", CRED, context.hex())
    assert ykterm_list(ykterm)["sym"][2] == 8

    # Asymmetric: ykterm generates, yubikit plays the client and python the YubiHSM 2; the keys agree.
    ykterm("credentials", "generate", "asym", input=f"\n{CRED}\n")
    both = yubikit(key, home_env, "asymmetric", "asym", CRED)
    assert both["yubikit"] == both["hsm"]


def test_asymmetric_session_keys_through_ykterm_with_the_yubihsm_played_here(key, home_env, ykterm, ykman, tmp_path):
    """ykterm prints EPK.OCE and reads the YubiHSM 2's EPK.SD and receipt (computed here with python's cryptography
    from the credential's public key, as ykman exports it); its session keys are the YubiHSM 2's."""
    from cryptography.hazmat.primitives import cmac, hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.hazmat.primitives.ciphers import algorithms
    from cryptography.hazmat.primitives.kdf.x963kdf import X963KDF

    ykman("credentials", "generate", "asym", "-m", "", "-c", CRED)
    ykman("credentials", "export", "asym", str(tmp_path / "oce.pem"))
    pk_oce = serialization.load_pem_public_key((tmp_path / "oce.pem").read_bytes())
    sk_sd = ec.generate_private_key(ec.SECP256R1())
    (tmp_path / "sd.pem").write_bytes(sk_sd.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo))
    p = subprocess.Popen([str(YKTERM), "hsmauth", "credentials", "calculate", "asym", "--device-key",
                          str(tmp_path / "sd.pem"), "--json", "--reader", key.reader], env=home_env,
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        p.stdin.write(CRED + "\n")
        p.stdin.flush()
        line = p.stdout.readline()
        assert line.startswith("EPK-OCE: "), (line, p.stderr.read() if p.poll() is not None else "")
        epk_oce = bytes.fromhex(line.split()[1])
        esk_sd = ec.generate_private_key(ec.SECP256R1())
        epk_sd = esk_sd.public_key().public_bytes(serialization.Encoding.X962,
                                                  serialization.PublicFormat.UncompressedPoint)
        shsee = esk_sd.exchange(ec.ECDH(), ec.EllipticCurvePublicKey.from_encoded_point(ec.SECP256R1(), epk_oce))
        shs = X963KDF(hashes.SHA256(), 64, b"\x3c\x88\x10").derive(shsee + sk_sd.exchange(ec.ECDH(), pk_oce))
        c = cmac.CMAC(algorithms.AES(shs[:16]))
        c.update(epk_sd + epk_oce)
        out, err = p.communicate((epk_sd + c.finalize()).hex() + "\n", timeout=60)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    assert p.returncode == 0, err
    keys = json.loads(out)
    assert [keys["enc"], keys["mac"], keys["rmac"]] == [shs[16:32].hex(), shs[32:48].hex(), shs[48:].hex()]
    # A receipt that does not check is refused.
    r = ykterm("credentials", "calculate", "asym", "--device-key", str(tmp_path / "sd.pem"),
               input=CRED + "\n" + "04" * 81 + "\n", check=False)
    assert r.returncode != 0


def test_management_password_and_reset(key, home_env, ykterm, ykman):
    ykterm("access", "change-management-password", input="\nmgmt-pass\n")
    r = ykman("credentials", "generate", "g", "-m", "", "-c", CRED, check=False)
    assert r.returncode != 0 and "7 attempts remaining" in r.stderr
    ykman("credentials", "generate", "g", "-m", "mgmt-pass", "-c", CRED)
    r = ykterm("credentials", "generate", "h", input=f"\n{CRED}\n", check=False)
    assert r.returncode == 1 and "7 tries left" in r.stderr
    assert json.loads(ykterm("info", "--json").stdout)["management_key_retries"] == 7
    ykterm("credentials", "generate", "h", input=f"mgmt-pass\n{CRED}\n")
    assert "8/8" in ykman("info").stdout
    # ykman changes it back (a 32-hex-digit password is 16 raw bytes, for both).
    ykman("access", "change-management-password", "-m", "mgmt-pass", "-n", "00" * 15 + "01")
    ykterm("credentials", "delete", "h", "--force", input="00" * 15 + "01" + "\n")
    assert set(ykman_list(ykman)) == {"g"}
    r = ykterm("reset", check=False)
    assert r.returncode == 2
    ykterm("reset", "--force")
    assert "No items found" in ykman("credentials", "list").stdout
    ykman("credentials", "generate", "after-reset", "-m", "", "-c", CRED)
    ykman("reset", "--force")
    assert json.loads(ykterm("info", "--json").stdout)["credentials"] == 0


def test_credential_password_change_on_58(pcsc, tmp_path, home_env):
    key = ServedKey(pcsc, slot=0, state=tmp_path / "key58.json", extra=("--firmware", "5.8.0")).start()
    try:
        def ykterm(*args, input=None, check=True):
            return run_ykterm("hsmauth", *args, "--reader", key.reader, env=home_env, input=input, check=check)

        def ykman(*args, check=True):
            return run_ykman(key.reader, "hsmauth", *args, env=home_env, check=check)
        ykterm("credentials", "derive", "d", input=f"\n{CRED}\npassword\n")
        ykterm("credentials", "change-password", "d", input=f"{CRED}\nsecond\n")
        context = os.urandom(16).hex()
        keys = ykterm("credentials", "calculate", "d", "--context", context, input="second\n").stdout
        r = ykman("credentials", "change-password", "d", "-c", "second", "-n", "third")
        assert r.returncode == 0
        ykterm("credentials", "change-password", "d", "--admin", input="\nfourth\n")
        assert ykterm("credentials", "calculate", "d", "--context", context, input="fourth\n").stdout == keys
        r = ykterm("credentials", "calculate", "d", "--context", context, input="third\n", check=False)
        assert r.returncode == 1
    finally:
        key.stop()


def test_change_password_needs_58(ykterm):
    ykterm("credentials", "derive", "d", input=f"\n{CRED}\npassword\n")
    r = ykterm("credentials", "change-password", "d", input=f"{CRED}\nsecond\n", check=False)
    assert r.returncode == 1 and "5.8.0" in r.stderr
