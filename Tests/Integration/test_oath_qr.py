"""oath add --qr IMAGE and --generate, cross-checked: the images are made with Debian's qrencode (PNG directly; JPEG
through libjpeg-turbo's cjpeg; composed images through a PNG writer here), the codes with ykman and pyotp."""

import base64
import hashlib
import json
import re
import struct
import subprocess
import time
import zlib
from urllib.parse import quote

import pyotp
import pytest

from harness import ServedKey, run_ykman, run_ykterm, wait_until

SECRET_A = "JBSWY3DPEHPK3PXPJBSWY3DPEHPK3PXP"
SECRET_B = "GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ"
SECRET_C = "MFRGGZDFMZTWQ2LKNNWG23TPOBYXE43U"


@pytest.fixture
def env(pcsc, tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    return pcsc.env(HOME=home, XDG_CONFIG_HOME=home / ".config")


def yk(key, env, *args, **kw):
    return run_ykterm(*args, env=dict(env, YKTERM_READER=key.reader), **kw)


def ykman_codes(key, env, *extra):
    out = run_ykman(key.reader, "oath", "accounts", "code", *extra, env=env).stdout
    return {m.group(1): m.group(2) for m in (re.match(r"^(.*\S)\s+(\S+)$", line) for line in out.splitlines()) if m}


def assert_totp(code, secret, digits=6, digest=hashlib.sha1, period=30, times=()):
    totp = pyotp.TOTP(secret, digits=digits, digest=digest, interval=period)
    assert code in {totp.at(t) for t in times}, (code, secret)


def modules(text):
    """The modules of qrencode's QR code for `text` (True dark), from its ASCII output with a quiet zone of 4."""
    out = subprocess.run(["qrencode", "-t", "ASCII", "-m", "4", "-l", "M", text], check=True,
                         capture_output=True, text=True).stdout
    return [[line[i:i + 2] == "##" for i in range(0, len(line), 2)] for line in out.splitlines() if line]


def pixels(matrix, scale=4):
    """Grey rows (0 dark, 255 light) of a module matrix, `scale` pixels a module."""
    rows = []
    for row in matrix:
        line = bytes(0 if dark else 255 for dark in row for _ in range(scale))
        rows += [line] * scale
    return rows


def side_by_side(a, b):
    height = max(len(a), len(b))
    pad = lambda rows, width: rows + [bytes([255]) * width] * (height - len(rows))  # noqa: E731
    return [x + y for x, y in zip(pad(a, len(a[0])), pad(b, len(b[0])))]


def write_png(path, rows):
    """An 8-bit greyscale PNG (signature, IHDR, one IDAT, IEND), as the PNG specification lays it out."""
    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
    raw = b"".join(b"\x00" + row for row in rows)
    header = struct.pack(">IIBBBBB", len(rows[0]), len(rows), 8, 0, 0, 0, 0)
    path.write_bytes(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(raw))
                     + chunk(b"IEND", b""))


def write_jpeg(path, rows):
    """A greyscale JPEG made by cjpeg from a PGM."""
    pgm = path.with_suffix(".pgm")
    pgm.write_bytes(b"P5\n%d %d\n255\n" % (len(rows[0]), len(rows)) + b"".join(rows))
    subprocess.run(["cjpeg", "-grayscale", "-quality", "85", "-outfile", str(path), str(pgm)], check=True)
    pgm.unlink()


def _pb_varint(n):
    out = b""
    while True:
        b = n & 0x7F
        n >>= 7
        if not n:
            return out + bytes([b])
        out += bytes([b | 0x80])


def _pb_field(number, value):
    if isinstance(value, int):
        return _pb_varint(number << 3) + _pb_varint(value)
    return _pb_varint(number << 3 | 2) + _pb_varint(len(value)) + value


def migration_uri(accounts):
    """Google Authenticator's export: a MigrationPayload (otp_parameters = 1: secret 1, name 2, issuer 3,
    algorithm 4, digits 5, type 6, counter 7; version 2, batch_size 3) in base64 in the data parameter."""
    payload = b""
    for secret, name, issuer, alg, digits, typ, counter in accounts:
        p = _pb_field(1, base64.b32decode(secret)) + _pb_field(2, name) + _pb_field(3, issuer)
        p += _pb_field(4, alg) + _pb_field(5, digits) + _pb_field(6, typ) + _pb_field(7, counter)
        payload += _pb_field(1, p)
    payload += _pb_field(2, 1) + _pb_field(3, 1)
    return "otpauth-migration://offline?data=" + quote(base64.b64encode(payload).decode(), safe="")


def test_a_png_from_qrencode_adds_its_account(key, env, tmp_path):
    uri = f"otpauth://totp/Example:alice@example.com?secret={SECRET_A}&issuer=Example"
    image = tmp_path / "code.png"
    subprocess.run(["qrencode", "-o", str(image), uri], check=True)
    r = yk(key, env, "oath", "add", "--qr", str(image))
    assert r.stdout.strip() == "Added Example:alice@example.com", r.stdout
    assert "visible to other users" not in r.stderr  # a path is no secret
    before = int(time.time())
    codes = ykman_codes(key, env)
    after = int(time.time())
    assert_totp(codes["Example:alice@example.com"], SECRET_A, times=(before, after))
    ours = yk(key, env, "oath", "code", "Example").stdout.split()[-1]
    assert_totp(ours, SECRET_A, times=(before, int(time.time())))


def test_a_jpeg_with_sha256_eight_digits_and_a_minute(key, env, tmp_path):
    uri = f"otpauth://totp/Wide:bob?secret={SECRET_B}&issuer=Wide&algorithm=SHA256&digits=8&period=60"
    image = tmp_path / "code.jpg"
    write_jpeg(image, pixels(modules(uri)))
    assert image.read_bytes()[:3] == b"\xff\xd8\xff"
    yk(key, env, "oath", "add", "--qr", str(image))
    listed = run_ykman(key.reader, "oath", "accounts", "list", "-H", "-o", "-P", env=env).stdout
    assert "60/Wide:bob, TOTP, 60" in listed, listed
    before = int(time.time())
    codes = ykman_codes(key, env)
    assert_totp(codes["60/Wide:bob"], SECRET_B, 8, hashlib.sha256, 60, times=(before, int(time.time())))


def test_a_migration_export_adds_every_account(key, env, tmp_path):
    uri = migration_uri([
        (SECRET_A, b"alice@example.com", b"Example", 1, 1, 2, 0),  # TOTP SHA1 6
        (SECRET_B, b"bob", b"Wide", 2, 2, 2, 0),  # TOTP SHA256 8
        (SECRET_C, b"carol", b"Counter", 1, 1, 1, 5),  # HOTP, counter 5
    ])
    image = tmp_path / "export.png"
    subprocess.run(["qrencode", "-o", str(image), uri], check=True)
    r = yk(key, env, "oath", "add", "--qr", str(image))
    assert r.stdout.split("\n")[:3] == ["Added Example:alice@example.com", "Added Wide:bob", "Added Counter:carol"]
    before = int(time.time())
    codes = ykman_codes(key, env)
    after = int(time.time())
    assert_totp(codes["Example:alice@example.com"], SECRET_A, times=(before, after))
    assert_totp(codes["Wide:bob"], SECRET_B, 8, hashlib.sha256, times=(before, after))
    hotp = ykman_codes(key, env, "Counter:carol")["Counter:carol"]
    assert hotp == pyotp.HOTP(SECRET_C).at(5)


def test_images_without_one_account_code_are_refused(key, env, tmp_path):
    blank = tmp_path / "blank.png"
    write_png(blank, [bytes([255]) * 120] * 90)
    r = yk(key, env, "oath", "add", "--qr", str(blank), check=False)
    assert r.returncode == 2 and f"no QR code found in {blank}" in r.stderr, r.stderr
    two = tmp_path / "two.png"
    a = pixels(modules(f"otpauth://totp/A:a?secret={SECRET_A}"))
    b = pixels(modules(f"otpauth://totp/B:b?secret={SECRET_B}"))
    write_png(two, side_by_side(a, b))
    r = yk(key, env, "oath", "add", "--qr", str(two), check=False)
    assert r.returncode == 2 and f"{two} holds 2 QR codes" in r.stderr, r.stderr
    web = tmp_path / "web.png"
    subprocess.run(["qrencode", "-o", str(web), "https://example.com/enrol"], check=True)
    r = yk(key, env, "oath", "add", "--qr", str(web), check=False)
    assert r.returncode == 2 and "not an otpauth:// or otpauth-migration:// URI" in r.stderr, r.stderr
    text = tmp_path / "notes.txt"
    text.write_text("otpauth://totp/x?secret=" + SECRET_A)
    r = yk(key, env, "oath", "add", "--qr", str(text), check=False)
    assert r.returncode == 2 and "is not a PNG or JPEG image" in r.stderr, r.stderr
    cut = tmp_path / "cut.png"
    cut.write_bytes(blank.read_bytes()[:60])
    r = yk(key, env, "oath", "add", "--qr", str(cut), check=False)
    assert r.returncode == 2 and f"cannot read the PNG image {cut}" in r.stderr, r.stderr
    r = yk(key, env, "oath", "add", "--qr", str(tmp_path / "missing.png"), check=False)
    assert r.returncode == 1 and "No such file or directory" in r.stderr, r.stderr
    # In German too.
    r = yk(key, dict(env, LANGUAGE="", LC_ALL="", LC_MESSAGES="de_DE.UTF-8", LANG="de_DE.UTF-8"), "oath", "add",
           "--qr", str(blank), check=False)
    assert r.returncode == 2 and f"In {blank} wurde kein QR-Code gefunden" in r.stderr, r.stderr
    assert ykman_codes(key, env) == {}


def test_generate_shows_the_uri_and_code_once_and_adds_it(key, env):
    r = yk(key, env, "oath", "add", "--generate", "--issuer", "Made", "--name", "erin", "--digits", "8")
    uri = re.search(r"otpauth://\S+", r.stdout).group(0)
    parsed = pyotp.parse_uri(uri)
    assert parsed.issuer == "Made" and parsed.name == "erin" and parsed.digits == 8
    assert len(base64.b32decode(parsed.secret)) == 20
    # The QR code below it: half blocks (the test's locale is UTF-8) or "##", a quiet zone of blank lines first.
    lines = r.stdout.splitlines()
    drawing = lines[lines.index(uri) + 1:-1]
    assert len(drawing) >= 15 and not drawing[0].strip() and any("█" in line or "#" in line for line in drawing)
    assert lines[-1] == "Added Made:erin"
    before = int(time.time())
    code = ykman_codes(key, env)["Made:erin"]
    assert code in {parsed.at(before), parsed.at(int(time.time()))}
    # Another secret each time.
    again = yk(key, env, "oath", "add", "--generate", "--name", "frank").stdout
    assert pyotp.parse_uri(re.search(r"otpauth://\S+", again).group(0)).secret != parsed.secret
    # --generate makes the secret: a secret, URI or image beside it is refused.
    for extra in (["--secret", SECRET_A], ["--qr", "x.png"]):
        r = yk(key, env, "oath", "add", "--generate", "--name", "x", *extra, check=False)
        assert r.returncode == 64 or r.returncode == 2, r
        assert "--generate makes the secret" in r.stderr


def test_generate_with_all_keys_puts_the_same_secret_on_each(pcsc, env, tmp_path):
    a = ServedKey(pcsc, slot=0, serial=41000011, state=tmp_path / "a.json").start()
    b = ServedKey(pcsc, slot=1, serial=41000012, state=tmp_path / "b.json").start()
    try:
        wait_until(lambda: sorted(k.get("serial") or 0 for k in json.loads(
            run_ykterm("list", "--json", env=env, check=False).stdout or "[]")) == [41000011, 41000012],
            10, "both keys answering")
        r = run_ykterm("oath", "add", "--all-keys", "--generate", "--issuer", "Both", "--name", "gina", env=env)
        parsed = pyotp.parse_uri(re.search(r"otpauth://\S+", r.stdout).group(0))
        assert r.stdout.count("Added Both:gina to ") == 2, r.stdout
        for served in (a, b):
            before = int(time.time())
            code = ykman_codes(served, env)["Both:gina"]
            assert code in {parsed.at(before), parsed.at(int(time.time()))}, served.reader
    finally:
        b.stop()
        a.stop()
