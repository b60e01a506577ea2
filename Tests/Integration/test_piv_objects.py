"""PIV data objects: `ykterm piv objects export | import | generate`, each checked with ykman's `piv objects` on
the same key both ways (the bytes one writes are the bytes the other reads), and the CHUID and CCC each generates
parsed with ykman's library (yubikit)."""

import subprocess

import pytest
from yubikit.core import Tlv
from yubikit.piv import Chuid

from harness import YKTERM, VENV_BIN, run_ykman, run_ykterm

MGM_DEFAULT = "010203040506070801020304050607080102030405060708"
MGM_OTHER = "112233445566778811223344556677881122334455667788"


@pytest.fixture
def both(key, env):
    def ykterm(*args, check=True, input=None):
        return run_ykterm("piv", *args, "--reader", key.reader, env=env, check=check, input=input)

    def ykman(*args, check=True, input=None):
        return run_ykman(key.reader, "piv", *args, env=env, check=check, input=input)
    return ykterm, ykman


def raw(env, reader, program, *args, input=b""):
    """Runs ykterm or ykman with bytes in and out (run_* work in text)."""
    argv = [str(YKTERM), "piv", *args, "--reader", reader] if program == "ykterm" else \
        [str(VENV_BIN / "ykman"), "--reader", reader, "piv", *args]
    r = subprocess.run(argv, env=env, input=input, capture_output=True, timeout=60)
    assert r.returncode == 0, r.stderr.decode()
    return r.stdout


def test_objects_written_by_one_are_read_by_the_other(both, key, env, tmp_path):
    ykterm, ykman = both
    data = bytes(range(256)) * 3 + b"\x00end"
    (tmp_path / "data.bin").write_bytes(data)
    # ykterm writes a raw object (hex id), ykman reads the same bytes.
    r = ykterm("objects", "import", "5fff10", tmp_path / "data.bin")
    assert "Stored 772 bytes as object 5FFF10" in r.stdout, r.stdout
    ykman("objects", "export", "5fff10", tmp_path / "theirs.bin")
    assert (tmp_path / "theirs.bin").read_bytes() == data
    # ykman writes a named object, ykterm reads it, to a file and to standard output.
    (tmp_path / "printed.bin").write_bytes(b"\x01\x02printed")
    ykman("objects", "import", "-m", MGM_DEFAULT, "RETIRED3", tmp_path / "printed.bin")
    r = ykterm("objects", "export", "retired3", tmp_path / "ours.bin")
    assert "Wrote object 5FC10F (RETIRED3) to" in r.stdout, r.stdout
    assert (tmp_path / "ours.bin").read_bytes() == b"\x01\x02printed"
    assert raw(env, key.reader, "ykterm", "objects", "export", "5fc10f", "-") == b"\x01\x02printed"
    # Standard input as the data; ykman's export to standard output reads it.
    raw(env, key.reader, "ykterm", "objects", "import", "key-history", "-", input=b"\x53\x00history")
    assert raw(env, key.reader, "ykman", "objects", "export", "KEY_HISTORY", "-") == b"\x53\x00history"
    # A PIN-protected object: ykterm asks for the PIN (a line of standard input) before reading it.
    ykman("objects", "import", "-m", MGM_DEFAULT, "FACIAL", tmp_path / "data.bin")
    no_pin = ykterm("objects", "export", "facial", "-", check=False)
    assert no_pin.returncode != 0
    ykterm("objects", "export", "facial", tmp_path / "facial.bin", input="123456\n")
    assert (tmp_path / "facial.bin").read_bytes() == data
    # An object the key does not have; an empty file deletes an object, for ykman too.
    missing = ykterm("objects", "export", "5fff20", "-", check=False)
    assert missing.returncode == 1 and "has no data object" in missing.stderr, missing.stderr
    (tmp_path / "empty").write_bytes(b"")
    ykterm("objects", "import", "5fff10", tmp_path / "empty")
    gone = ykman("objects", "export", "5fff10", "-", check=False)
    assert gone.returncode != 0 and "No data found" in gone.stderr, gone.stderr
    # Names that are no object are refused before anything is sent.
    bad = ykterm("objects", "export", "retired21", "-", check=False)
    assert bad.returncode == 2 and "retired21" in bad.stderr, bad.stderr


def test_generated_chuid_and_ccc_are_read_by_the_other(both, key, env, tmp_path):
    ykterm, ykman = both
    assert "Generated a new object 5FC102 (CHUID)" in ykterm("objects", "generate", "chuid").stdout
    chuid_bytes = raw(env, key.reader, "ykman", "objects", "export", "CHUID", "-")
    chuid = Chuid.from_bytes(chuid_bytes)
    assert bytes(chuid) == chuid_bytes
    assert (chuid.fasc_n.agency_code, chuid.fasc_n.system_code, chuid.fasc_n.credential_number) == (9999, 9999, 999999)
    assert chuid.expiration_date.isoformat() == "2030-01-01" and len(chuid.guid) == 16
    assert chuid.guid[6] >> 4 == 4  # a version 4 UUID, as ykman makes
    # ykman's `piv info` reads the CHUID ykterm generated.
    assert chuid_bytes.hex() in ykman("info").stdout.replace(" ", "").lower()
    assert "Generated a new object 5FC107 (CAPABILITY)" in ykterm("objects", "generate", "ccc").stdout
    ccc = raw(env, key.reader, "ykman", "objects", "export", "CCC", "-")
    fields = Tlv.parse_list(ccc)
    assert [t.tag for t in fields] == [0xF0, 0xF1, 0xF2, 0xF3, 0xF4, 0xF5, 0xF6, 0xF7, 0xFA, 0xFB, 0xFC, 0xFD, 0xFE]
    assert fields[0].value[:7] == bytes.fromhex("a000000116ff02") and len(fields[0].value) == 21
    # ykman's generated ones, read by ykterm, are a CHUID and a CCC of the same layout with new random parts.
    ykman("objects", "generate", "-m", MGM_DEFAULT, "chuid")
    ykman("objects", "generate", "-m", MGM_DEFAULT, "ccc")
    theirs = Chuid.from_bytes(raw(env, key.reader, "ykterm", "objects", "export", "chuid", "-"))
    assert theirs.fasc_n == chuid.fasc_n and theirs.guid != chuid.guid
    their_ccc = Tlv.parse_list(raw(env, key.reader, "ykterm", "objects", "export", "capability", "-"))
    assert [t.tag for t in their_ccc] == [t.tag for t in fields] and their_ccc[0].value != fields[0].value
    # Anything but the two is refused.
    refused = ykterm("objects", "generate", "printed", check=False)
    assert refused.returncode == 2 and "only the CHUID and the CCC" in refused.stderr, refused.stderr


def test_a_management_key_that_is_not_the_default_is_asked_for(both, key, env, tmp_path):
    ykterm, ykman = both
    ykman("access", "change-management-key", "-m", MGM_DEFAULT, "-n", MGM_OTHER, "-a", "TDES", "--force")
    (tmp_path / "d").write_bytes(b"abc")
    wrong = ykterm("objects", "import", "5fff11", tmp_path / "d", check=False, input=MGM_DEFAULT + "\n")
    assert wrong.returncode == 1, wrong.stderr
    ykterm("objects", "import", "5fff11", tmp_path / "d", input=MGM_OTHER + "\n")
    assert raw(env, key.reader, "ykman", "objects", "export", "5fff11", "-") == b"abc"
    ykterm("objects", "generate", "chuid", input=MGM_OTHER + "\n")
    Chuid.from_bytes(raw(env, key.reader, "ykman", "objects", "export", "chuid", "-"))


def test_the_printed_object_is_kept_while_it_holds_ykman_s_protected_management_key(both, key, env, tmp_path):
    ykterm, ykman = both
    ykman("access", "change-management-key", "-m", MGM_DEFAULT, "-P", "123456", "--protect", "--generate", "--force")
    (tmp_path / "p").write_bytes(b"\x88\x00")
    refused = ykterm("objects", "import", "printed", tmp_path / "p", check=False)
    assert refused.returncode == 1 and "protected by the PIN" in refused.stderr, refused.stderr
    # ykman still finds its management key there.
    ykman("objects", "generate", "-P", "123456", "ccc")


def test_update_chuid_gives_a_new_chuid_with_each_certificate_change(both, key, env, tmp_path):
    """--update-chuid, as ykman's: generate, import and delete of a certificate each leave a new CHUID (a new
    GUID, read with yubikit); without it the CHUID stays."""
    ykterm, ykman = both

    def guid():
        return Chuid.from_bytes(raw(env, key.reader, "ykman", "objects", "export", "CHUID", "-")).guid

    ykterm("objects", "generate", "chuid", input=MGM_DEFAULT + "\n")
    ykman("keys", "generate", "-m", MGM_DEFAULT, "-a", "ECCP256", "9a", tmp_path / "pub.pem")
    seen = {guid()}
    ykterm("certificates", "generate", "9a", "-s", "CN=first", input="123456\n" + MGM_DEFAULT + "\n")
    assert guid() in seen
    r = ykterm("certificates", "generate", "9a", "-s", "CN=second", "--update-chuid",
               input="123456\n" + MGM_DEFAULT + "\n")
    assert "Generated a new object 5FC102 (CHUID)" in r.stdout, r.stdout
    assert guid() not in seen
    seen.add(guid())
    ykman("certificates", "export", "9a", tmp_path / "cert.pem")
    ykterm("certificates", "import", "9a", tmp_path / "cert.pem", "--update-chuid", input=MGM_DEFAULT + "\n")
    assert guid() not in seen
    seen.add(guid())
    ykterm("certificates", "delete", "9a", "--update-chuid", input=MGM_DEFAULT + "\n")
    assert guid() not in seen
    assert ykman("certificates", "export", "9a", "-", check=False).returncode != 0
