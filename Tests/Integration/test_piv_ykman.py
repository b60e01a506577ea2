"""The virtual key's PIV application driven by yubikey-manager (`ykman piv`), with openssl checking what comes out:
keys generated and imported, certificates generated on the key (their signatures made by the slot's key),
attestation chains, PIN/PUK/management key changes, retries and reset, and the state file."""

import re
import subprocess

import pytest

from harness import ServedKey, run_ykman

MGM_DEFAULT = "010203040506070801020304050607080102030405060708"
MGM_AES192 = "f0e1d2c3b4a5968778695a4b3c2d1e0f0011223344556677"


@pytest.fixture
def piv(key, env):
    def run(*args, check=True, input=None):
        return run_ykman(key.reader, "piv", *args, env=env, check=check, input=input)
    return run


def openssl(*args, input=None, check=True):
    r = subprocess.run(["openssl", *map(str, args)], input=input, capture_output=True, text=True, timeout=60)
    if check and r.returncode != 0:
        raise AssertionError(f"openssl {' '.join(map(str, args))} exited {r.returncode}\n{r.stdout}\n{r.stderr}")
    return r


def flat(text):
    """ykman's output with one space after each colon (it aligns the values)."""
    return re.sub(r":[ \t]+", ": ", text)


def info(piv):
    """`ykman piv info` as its lines, stripped."""
    return [flat(line.strip()) for line in piv("info").stdout.splitlines()]


def public_key_of_certificate(path):
    return openssl("x509", "-in", path, "-noout", "-pubkey").stdout


def test_info_of_a_new_key(piv):
    lines = info(piv)
    assert "PIV version: 5.7.2" in lines
    assert "PIN tries remaining: 3/3" in lines
    assert "PUK tries remaining: 3/3" in lines
    assert "Management key algorithm: AES192" in lines
    for warning in ("WARNING: Using default PIN!", "WARNING: Using default PUK!",
                    "WARNING: Using default Management key!"):
        assert warning in lines
    assert "CHUID: No data available" in lines and "CCC: No data available" in lines
    assert not any(line.startswith("Slot ") for line in lines)
    assert "No key stored in slot 9A" in piv("keys", "info", "9a", check=False).stderr


@pytest.mark.parametrize("slot,algorithm,pin_policy", [
    ("9a", "ECCP256", "ONCE"), ("9c", "ECCP384", "ALWAYS"), ("9d", "RSA2048", "ONCE")])
def test_generated_key_certificate_and_attestation(piv, tmp_path, slot, algorithm, pin_policy):
    pub = tmp_path / "pub.pem"
    r = piv("keys", "generate", "-a", algorithm, "-m", MGM_DEFAULT, slot, pub)
    assert "Private key generated" in r.stdout + r.stderr
    text = openssl("pkey", "-pubin", "-in", pub, "-noout", "-text").stdout
    assert ("2048 bit" in text) if algorithm == "RSA2048" else (f"{algorithm[-3:]} bit" in text)
    keys_info = flat(piv("keys", "info", slot).stdout)
    assert f"Algorithm: {algorithm}" in keys_info and "Origin: GENERATED" in keys_info
    assert f"PIN required for use: {pin_policy}" in keys_info and "Touch required for use: NEVER" in keys_info
    # The public key ykman reads from metadata is the one generated.
    exported = tmp_path / "exported.pem"
    piv("keys", "export", slot, exported)
    assert exported.read_text() == pub.read_text()

    # A self-signed certificate signed by the slot's key: openssl checks its signature with the public key.
    piv("certificates", "generate", "-s", f"CN=ykterm-{algorithm}", "-m", MGM_DEFAULT, "-P", "123456", slot)
    pem = piv("certificates", "export", slot, "-").stdout
    cert = tmp_path / "cert.pem"
    cert.write_text(pem)
    subject = openssl("x509", "-in", cert, "-noout", "-subject").stdout
    assert f"CN = ykterm-{algorithm}" in subject
    assert public_key_of_certificate(cert) == pub.read_text()
    assert openssl("verify", "-CAfile", cert, "-check_ss_sig", cert).stdout.strip().endswith("OK")
    fingerprint = openssl("x509", "-in", cert, "-noout", "-fingerprint", "-sha256").stdout.split("=", 1)[1].strip()
    lines = info(piv)
    assert f"Subject DN: CN=ykterm-{algorithm}" in lines
    assert f"Fingerprint: {fingerprint.replace(':', '').lower()}" in lines

    # Attestation: the slot's public key, signed by the attestation key whose certificate is in F9.
    attestation, f9 = tmp_path / "attestation.pem", tmp_path / "f9.pem"
    piv("keys", "attest", slot, attestation)
    piv("certificates", "export", "f9", f9)
    assert openssl("verify", "-CAfile", f9, attestation).stdout.strip().endswith("OK")
    assert public_key_of_certificate(attestation) == pub.read_text()
    assert f"CN = YubiKey PIV Attestation {slot}" in openssl("x509", "-in", attestation, "-noout", "-subject").stdout


def test_imported_keys_and_certificates(piv, tmp_path):
    for slot, spec in (("9e", ["-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048"]),
                       ("82", ["-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-384"])):
        key, cert = tmp_path / f"{slot}.key", tmp_path / f"{slot}.pem"
        openssl("genpkey", *spec, "-out", key)
        openssl("req", "-x509", "-new", "-key", key, "-subj", f"/CN=imported {slot}", "-days", "30", "-out", cert)
        piv("keys", "import", "-m", MGM_DEFAULT, slot, key)
        keys_info = flat(piv("keys", "info", slot).stdout)
        assert "Origin: IMPORTED" in keys_info
        # --verify has the slot's key sign a test message and checks it with the certificate's key.
        piv("certificates", "import", "--verify", "-m", MGM_DEFAULT, "-P", "123456", slot, cert)
        der = tmp_path / f"{slot}.der"
        piv("certificates", "export", "-F", "DER", slot, der)
        assert der.read_bytes() == openssl_der(cert)
        # Imported keys are not attested.
        assert "Attestation failed" in piv("keys", "attest", slot, "-", check=False).stderr

    # A certificate whose key is not the slot's fails ykman's --verify.
    r = piv("certificates", "import", "--verify", "-m", MGM_DEFAULT, "-P", "123456", "82", tmp_path / "9e.pem",
            check=False)
    assert r.returncode != 0 and "does not match" in r.stderr

    piv("certificates", "delete", "-m", MGM_DEFAULT, "9e")
    assert "No certificate found" in piv("certificates", "export", "9e", "-", check=False).stderr
    lines = info(piv)
    assert "Slot 9E (CARD_AUTH):" in lines and "Private key type: RSA2048" in lines
    # Deleting and moving keys (5.7).
    piv("keys", "move", "-m", MGM_DEFAULT, "82", "95")
    assert "Algorithm: ECCP384" in flat(piv("keys", "info", "95").stdout)
    piv("keys", "delete", "-m", MGM_DEFAULT, "95")
    assert "No key stored" in piv("keys", "info", "95", check=False).stderr


def openssl_der(pem):
    return subprocess.run(["openssl", "x509", "-in", str(pem), "-outform", "DER"], capture_output=True,
                          check=True).stdout


def test_pin_puk_and_management_key(piv, tmp_path):
    piv("access", "change-pin", "-P", "123456", "-n", "24681357")
    piv("access", "change-puk", "-p", "12345678", "-n", "87654321")
    r = piv("access", "change-pin", "-P", "123456", "-n", "11112222", check=False)
    assert "PIN change failed - 2 tries left" in r.stderr
    for left in ("1 tries left", "is blocked"):
        r = piv("access", "change-pin", "-P", "000000", "-n", "11112222", check=False)
        assert left in r.stderr
    assert "PIN tries remaining: 0/3" in info(piv)
    r = piv("access", "unblock-pin", "-p", "12345678", "-n", "13572468", check=False)
    assert "PIN unblock failed - 2 tries left" in r.stderr
    piv("access", "unblock-pin", "-p", "87654321", "-n", "13572468")
    lines = info(piv)
    assert "PIN tries remaining: 3/3" in lines and "PUK tries remaining: 3/3" in lines
    assert "WARNING: Using default PIN!" not in lines and "WARNING: Using default PUK!" not in lines

    # A new AES-192 management key: the old one stops working, the new one works.
    piv("access", "change-management-key", "-a", "AES192", "-m", MGM_DEFAULT, "-n", MGM_AES192, "-f")
    assert "WARNING: Using default Management key!" not in info(piv)
    r = piv("keys", "generate", "-a", "ECCP256", "-m", MGM_DEFAULT, "9a", "-", check=False)
    assert "Authentication with management key failed" in r.stderr
    assert "BEGIN PUBLIC KEY" in piv("keys", "generate", "-a", "ECCP256", "-m", MGM_AES192, "9a", "-").stdout
    # And to AES-256, then 3DES, as ykman sets them.
    aes256 = "00" * 31 + "01"
    piv("access", "change-management-key", "-a", "AES256", "-m", MGM_AES192, "-n", aes256, "-f")
    assert "Management key algorithm: AES256" in info(piv)
    piv("access", "change-management-key", "-a", "TDES", "-m", aes256, "-n", MGM_AES192, "-f")
    assert "Management key algorithm: TDES" in info(piv)

    # set-retries needs the management key and the PIN, and puts the default PIN and PUK back.
    piv("access", "set-retries", "5", "4", "-m", MGM_AES192, "-P", "13572468", "-f")
    lines = info(piv)
    assert "PIN tries remaining: 5/5" in lines and "PUK tries remaining: 4/4" in lines
    assert "WARNING: Using default PIN!" in lines
    piv("access", "change-pin", "-P", "123456", "-n", "999888")


def test_reset_and_state_file(pcsc, env, tmp_path):
    state = tmp_path / "piv.json"
    served = ServedKey(pcsc, slot=0, state=state).start()
    try:
        def run(*args, check=True):
            return run_ykman(served.reader, "piv", *args, env=env, check=check)
        run("keys", "generate", "-a", "ECCP256", "-m", MGM_DEFAULT, "9a", tmp_path / "pub.pem")
        run("certificates", "generate", "-s", "CN=kept", "-m", MGM_DEFAULT, "-P", "123456", "9a")
        run("access", "change-pin", "-P", "123456", "-n", "555666")
    finally:
        served.stop()
    # The state file keeps keys, certificates and the PIN across runs.
    served = ServedKey(pcsc, slot=0, state=state).start()
    try:
        def run(*args, check=True):
            return run_ykman(served.reader, "piv", *args, env=env, check=check)
        lines = info(run)
        assert "Subject DN: CN=kept" in lines and "WARNING: Using default PIN!" not in lines
        r = run("reset", "-f")
        assert "Reset complete" in r.stdout
        lines = info(run)
        assert "WARNING: Using default PIN!" in lines and "PIN tries remaining: 3/3" in lines
        assert not any(line.startswith("Slot ") for line in lines)
        run("access", "change-pin", "-P", "123456", "-n", "654321")
    finally:
        served.stop()


def test_firmware_before_5_7_has_a_3des_management_key(pcsc, env, tmp_path):
    served = ServedKey(pcsc, slot=0, state=tmp_path / "old.json", extra=("--firmware", "5.4.3")).start()
    try:
        def run(*args, check=True):
            return run_ykman(served.reader, "piv", *args, env=env, check=check)
        lines = info(run)
        assert "PIV version: 5.4.3" in lines and "Management key algorithm: TDES" in lines
        # ykman authenticates with 3DES, and 5.7's key types are refused.
        run("keys", "generate", "-a", "ECCP256", "-m", MGM_DEFAULT, "9a", tmp_path / "pub.pem")
        r = run("keys", "generate", "-a", "ED25519", "-m", MGM_DEFAULT, "9c", "-", check=False)
        assert r.returncode != 0 and "5.7" in r.stderr
        run("access", "change-management-key", "-a", "AES128", "-m", MGM_DEFAULT, "-n", "11" * 16, "-f")
        assert "Management key algorithm: AES128" in info(run)
    finally:
        served.stop()


def test_demo_key_in_9a(pcsc, env, tmp_path):
    served = ServedKey(pcsc, slot=0, state=tmp_path / "demo.json", extra=("--demo-accounts",)).start()
    try:
        lines = info(lambda *args: run_ykman(served.reader, "piv", *args, env=env))
        assert "Subject DN: CN=ykterm demo" in lines and "Private key type: ECCP256" in lines
        cert = tmp_path / "demo.pem"
        cert.write_text(run_ykman(served.reader, "piv", "certificates", "export", "9a", "-", env=env).stdout)
        # Self-signed by the key in 9A: ykman's --verify signs with the slot and checks with the certificate.
        assert openssl("verify", "-CAfile", cert, "-check_ss_sig", cert).stdout.strip().endswith("OK")
        run_ykman(served.reader, "piv", "certificates", "import", "--verify", "-m", MGM_DEFAULT, "-P", "123456",
                  "9a", cert, env=env)
    finally:
        served.stop()
