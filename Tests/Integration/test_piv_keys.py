"""PIV keys beyond generating them, and the tries of the PIN and the PUK: `ykterm piv keys info | export | import |
move | delete` and `piv access set-retries`, each checked with ykman (what it then reads from the key) and openssl
(the key files), and the other way round: what ykman does, ykterm reads."""

import json
import re
import subprocess

import pytest

from harness import run_ykman, run_ykterm

MGM_DEFAULT = "010203040506070801020304050607080102030405060708"


@pytest.fixture
def both(key, env):
    def ykterm(*args, check=True, input=None):
        return run_ykterm("piv", *args, "--reader", key.reader, env=env, check=check, input=input)

    def ykman(*args, check=True, input=None):
        return run_ykman(key.reader, "piv", *args, env=env, check=check, input=input)
    return ykterm, ykman


def openssl(*args, input=None):
    r = subprocess.run(["openssl", *map(str, args)], input=input, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    return r.stdout


def ykman_key_info(ykman, slot):
    """ykman's `piv keys info` as a dict of its fields."""
    out = ykman("keys", "info", slot).stdout
    return {k.strip(): v.strip() for k, v in (line.split(":", 1) for line in out.splitlines() if ":" in line)}


def test_info_and_export_agree_with_ykman_both_ways(both, tmp_path):
    ykterm, ykman = both
    pem = ykterm("keys", "generate", "9a", "-a", "ECCP384", "--touch-policy", "never").stdout
    info = json.loads(ykterm("keys", "info", "9a", "--json").stdout)
    assert info["algorithm"] == "ECCP384" and info["origin"] == "generated" and info["touch_policy"] == "never"
    assert info["public_key_pem"] == pem
    theirs = ykman_key_info(ykman, "9a")
    assert theirs["Algorithm"] == "ECCP384" and theirs["Origin"] == "GENERATED", theirs
    # Exported, PEM and DER, as ykman exports it.
    assert ykterm("keys", "export", "9a").stdout == ykman("keys", "export", "9a", "-").stdout
    der = tmp_path / "9a.der"
    ykterm("keys", "export", "9a", "--format", "der", "--out", der)
    assert openssl("pkey", "-pubin", "-inform", "DER", "-in", der) == pem
    # A key ykman generated, as ykterm reads it.
    ykman("keys", "generate", "-m", MGM_DEFAULT, "-a", "ED25519", "--pin-policy", "ALWAYS", "9c", str(tmp_path / "9c.pem"))
    info = json.loads(ykterm("keys", "info", "9c", "--json").stdout)
    assert info["algorithm"] == "ED25519" and info["pin_policy"] == "always", info
    assert info["public_key_pem"] == (tmp_path / "9c.pem").read_text()
    text = ykterm("keys", "info", "9c").stdout
    assert re.search(r"^  Key\s+ED25519, generated on the key$", text, re.M), text
    assert re.search(r"^  PIN policy\s+always$", text, re.M), text
    # An empty slot is said to hold no key.
    empty = ykterm("keys", "info", "9d", check=False)
    assert empty.returncode == 1 and "slot 9D holds no key" in empty.stderr, empty.stderr


def test_import_move_and_delete_as_ykman_sees_them(both, tmp_path):
    ykterm, ykman = both
    private = tmp_path / "p256.pem"
    openssl("genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", private)
    public = openssl("pkey", "-in", private, "-pubout")
    done = ykterm("keys", "import", "9d", private, "--pin-policy", "never")
    assert "Imported the ECCP256 key into slot 9D" in done.stdout, done.stdout
    theirs = ykman_key_info(ykman, "9d")
    assert theirs["Origin"] == "IMPORTED" and theirs["PIN required for use"] == "NEVER", theirs
    assert ykman("keys", "export", "9d", "-").stdout == public
    # An encrypted key file is refused with what to do.
    encrypted = tmp_path / "enc.pem"
    openssl("pkcs8", "-topk8", "-in", private, "-out", encrypted, "-passout", "pass:secret")
    refused = ykterm("keys", "import", "9e", encrypted, check=False)
    assert refused.returncode == 2 and "encrypted private key" in refused.stderr, refused.stderr
    # A slot that holds a key is not replaced without the question (none on a pipe) or --force.
    kept = ykterm("keys", "import", "9d", private, check=False)
    assert kept.returncode == 1 and "was not replaced" in kept.stderr, kept.stderr

    # Moved: the key is in 82 for ykman, 9D is empty; a move onto a slot with a key is refused.
    ykman("keys", "generate", "-m", MGM_DEFAULT, "-a", "ECCP256", "9e", "-")
    onto = ykterm("keys", "move", "9d", "9e", "--force", check=False)
    assert onto.returncode == 1 and "slot 9E holds a key already" in onto.stderr, onto.stderr
    assert "Moved the key in slot 9D to slot 82" in ykterm("keys", "move", "9d", "82", "--force").stdout
    assert ykman("keys", "export", "82", "-").stdout == public
    assert ykman("keys", "info", "9d", check=False).returncode != 0
    # Deleted: gone for ykman; a key ykman moved is where ykterm says.
    assert "Deleted the key in slot 82" in ykterm("keys", "delete", "82", "--force").stdout
    assert ykman("keys", "info", "82", check=False).returncode != 0
    ykman("keys", "move", "-m", MGM_DEFAULT, "9e", "83")
    assert json.loads(ykterm("keys", "info", "83", "--json").stdout)["algorithm"] == "ECCP256"
    gone = ykterm("keys", "info", "9e", check=False)
    assert gone.returncode == 1 and "holds no key" in gone.stderr


def test_set_retries_resets_pin_and_puk_as_ykman_reads_them(both):
    ykterm, ykman = both
    # A PIN of the user's own, which set-retries puts back to the default.
    ykman("access", "change-pin", "-P", "123456", "-n", "654321")
    refused = ykterm("access", "set-retries", "5", "6", check=False, input="654321\n")
    assert refused.returncode == 1 and "not set" in refused.stderr, refused.stderr
    r = ykterm("access", "set-retries", "5", "6", "--force", input="654321\n")
    assert "The PIN has 5 tries and the PUK 6" in r.stdout, r.stdout
    lines = [re.sub(r":\s+", ": ", line.strip()) for line in ykman("info").stdout.splitlines()]
    assert "PIN tries remaining: 5/5" in lines and "PUK tries remaining: 6/6" in lines, lines
    # The default PIN works again; ykman's change of the tries is read by ykterm.
    ykman("access", "set-retries", "4", "7", "-P", "123456", "-m", MGM_DEFAULT, "--force")
    info = json.loads(ykterm("info", "--json").stdout)
    assert info["pin_tries"] == 4 and info["pin_total_tries"] == 4 and info["puk_tries"] == 7, info
    bad = ykterm("access", "set-retries", "0", "3", check=False)
    assert bad.returncode == 2 and "USER-TRIES" in bad.stderr, bad.stderr
