#!/usr/bin/env python3
"""Writes the seed corpora in Tests/Fuzz/Corpus/<target>/: small, meaningful inputs, published vectors where
they exist (RFC 8949 appendix A for CBOR, the CTAP 2.1 getInfo example, the YKOATH and ISO 7816 examples,
Google's Key Uri Format, the NFC Forum URI and text record examples, the Yubico OTP example from Yubico's
documentation). Each seed is named after what it is. Run it again after changing it; `make fuzz` reads the
directories, it does not run this script.

The session targets' seeds are exchanges recorded with the virtual key by the fuzz binaries themselves
(`<target> --record-seeds DIR`, which replays each one and keeps it only when it ends as recorded): build the
fuzz package first (`make fuzz-build`); without the binaries those seeds are left as they are.
"""

import base64
import gzip
import os
import shutil
import subprocess
from pathlib import Path

HERE = Path(__file__).resolve().parent / "Corpus"


def h(text):
    return bytes.fromhex(text.replace(" ", ""))


def write(target, seeds):
    d = HERE / target
    if d.exists():
        shutil.rmtree(d)
    d.mkdir(parents=True)
    for name, data in seeds.items():
        (d / name).write_bytes(data if isinstance(data, bytes) else data.encode())


# --- CBOR: RFC 8949 appendix A, and a CTAP2 authenticatorGetInfo answer (CTAP 2.1, 6.4 example).
CBOR = {
    "rfc8949-0": h("00"), "rfc8949-23": h("17"), "rfc8949-24": h("1818"), "rfc8949-1000000": h("1a000f4240"),
    "rfc8949-uint64max": h("1bffffffffffffffff"), "rfc8949-neg1000": h("3903e7"),
    "rfc8949-float16": h("f93c00"), "rfc8949-float32": h("fa47c35000"), "rfc8949-float64": h("fb3ff199999999999a"),
    "rfc8949-nan16": h("f97e00"), "rfc8949-false": h("f4"), "rfc8949-true": h("f5"), "rfc8949-null": h("f6"),
    "rfc8949-undefined": h("f7"), "rfc8949-simple255": h("f8ff"),
    "rfc8949-tag1": h("c11a514b67b0"), "rfc8949-bytes": h("4401020304"), "rfc8949-text-ietf": h("6449455446"),
    "rfc8949-text-utf8": h("62c3bc"), "rfc8949-array": h("83010203"),
    "rfc8949-nested": h("8301820203820405"), "rfc8949-map": h("a201020304"),
    "rfc8949-map-text": h("a26161016162820203"), "rfc8949-indefinite-bytes": h("5f42010243030405ff"),
    "rfc8949-indefinite-array": h("9fff"),
    # Crashes found by the fuzzer, kept as seeds (Tests/KeyKitTests/FuzzRegressionTests.swift).
    "regression-nan-keys": h("a2f97e0000f97e0000"),
    "ctap-getinfo": h(
        "a60182665532465f5632684649444f5f325f3002826375766d6b686d61632d7365637265740350f8a011f38c0a4d15800617111f9e"
        "dc7d04a462726bf5627570f564706c6174f469636c69656e7450696ef4051904b0068101"),
    "ctap-makecredential-params": h(
        "a4015820687134968222ec17202e42505f8ed2b16ae22f16bb05b88c25db9e602645f14102a262696469746573742e6374617064"
        "6e616d6569746573742e637461700381a263616c672664747970656a7075626c69632d6b657904a162726bf5"),
}

# --- TLV: YKOATH LIST and CALCULATE ALL answers, SELECT answer, management device information, BER nesting.
TLV = {
    "ykoath-select": h("7903050402 7108a1a2a3a4a5a6a7a8 7408c0c1c2c3c4c5c6c7 7b0121"),
    "ykoath-list": h("72 0b 21 6578616d706c652e636f6d 72 0a 12 686f74702d6163637400"),
    "ykoath-calculate-all": h("7106 626f622d3031 7605 06 12345678 7108 636f6e746f736f21 7700"),
    "management-deviceinfo": h("2e 0102 023f 0302023f 0204 00bc614e 0401 01 0503 050402 0602 0000 0701 01 0801 00"
                               " 0a01 00 0d02 023f 0e02 023f"),
    "ber-nested": h("e1 0a 4f 05 a000000527 9f0102 0102"),
    "ber-long-length": h("53 81 82" + "00" * 130),
    "ber-two-byte-tag": h("5f2f 02 4040"),
}

# --- Response APDUs (ISO 7816-4 status words) and version bytes.
RESPONSE = {
    "ok-empty": h("9000"), "ok-version": h("050402 9000"), "more-data": h("0102 61 10"),
    "security-not-satisfied": h("6982"), "pin-retries-3": h("63c3"), "wrong-length-exact": h("6c 08"),
    "file-not-found": h("6a82"), "ins-not-supported": h("6d00"), "ykoath-more": h("7100 61ff"),
    "one-byte": h("90"),
}


# --- CTAPHID, in the fuzz target's own input layout: packet-size selector, packet count, then packets as
# (length, flags, bytes); flags bit 0 puts the packet on the reassembler's channel.
def ctaphid_seed(packets, size_byte=0):
    out = bytes([size_byte, len(packets)])
    for flags, p in packets:
        out += bytes([len(p), flags]) + p
    return out


CID = h("01020304")
INIT = h("ffffffff 86 0008 0011223344556677")
PING_1 = CID + h("81 0004 01020304")
MSG_PAYLOAD = bytes(range(80))
CBOR_INIT = CID + bytes([0x90, 0, len(MSG_PAYLOAD)]) + MSG_PAYLOAD[:57]
CBOR_CONT = CID + bytes([0x00]) + MSG_PAYLOAD[57:]
CTAPHID = {
    "init-broadcast": ctaphid_seed([(0, INIT)]),
    "ping-one-packet": ctaphid_seed([(1, PING_1)]),
    "cbor-two-packets": ctaphid_seed([(1, CBOR_INIT), (1, CBOR_CONT)]),
    "cbor-out-of-sequence": ctaphid_seed([(1, CBOR_INIT), (1, CID + bytes([0x01]) + MSG_PAYLOAD[57:])]),
    "keepalive": ctaphid_seed([(1, CID + h("bb 0001 02"))]),
    "error-busy": ctaphid_seed([(1, CID + h("bf 0001 06"))]),
    "small-packets": ctaphid_seed([(1, CID + h("83 0004 0a0b")), (1, CID + h("00 0c0d"))], size_byte=1),
}


# --- vpcd frames (2-byte big-endian length, then a control byte or an APDU) as pcscd's vpcd driver sends.
def frame(payload):
    return len(payload).to_bytes(2, "big") + payload


SELECT_OATH = h("00a4040007a0000005272101")
SELECT_OTP = h("00a4040008a000000527200101")
SELECT_FIDO = h("00a4040008a0000006472f0001")
SELECT_MGMT = h("00a4040008a000000527471117")
VPCD = {
    "power-on-atr": frame(h("01")) + frame(h("04")),
    "select-oath-list": frame(h("04")) + frame(SELECT_OATH) + frame(h("00a1000000")),
    "oath-put-calculate": frame(SELECT_OATH)
        + frame(h("0001000016 7104 74657374 730c 21 06 3132333435363738393031 "))
        + frame(h("00a4000a 740800000000033fc3a0")),
    "select-otp-status": frame(SELECT_OTP) + frame(h("0003000000")),
    "select-fido-getinfo": frame(SELECT_FIDO) + frame(h("8010000001 04 00")),
    "select-mgmt-info": frame(SELECT_MGMT) + frame(h("001d000000")),
    "reset-power-off": frame(h("03")) + frame(h("00")),
    "partial-frame": frame(SELECT_OATH)[:5],
}

# --- otpauth:// URIs (Google Authenticator's Key Uri Format and its examples).
OTPAUTH = {
    "google-example": "otpauth://totp/Example:alice@google.com?secret=JBSWY3DPEHPK3PXP&issuer=Example",
    "google-full": "otpauth://totp/ACME%20Co:john.doe@email.com?secret=HXDMVJECJJWSRB3HWIZR4IFUGFTMXBOZ"
                   "&issuer=ACME%20Co&algorithm=SHA1&digits=6&period=30",
    "hotp-counter": "otpauth://hotp/Provider:user?secret=GEZDGNBVGY3TQOJQ&counter=42&digits=8",
    "sha512-60s": "otpauth://totp/S:me?secret=MFRGGZDFMZTWQ2LKNNWG23TPOBYXE43U&algorithm=SHA512&period=60",
    "steam": "otpauth://totp/Steam:gamer?secret=ONSWG4TFOQQGC3TEEBYGC43TO5XXEZDT&issuer=Steam",
    "no-issuer-padded": "otpauth://totp/plain?secret=JBSWY3DPEHPK3PXP%3D%3D%3D%3D",
    "bad-digits": "otpauth://totp/X?secret=JBSWY3DPEHPK3PXP&digits=9",
    "regression-combining-after-colon": "otpauth://totp/%CC%81x?secret=JBSWY3DPEHPK3PXP&issuer=a",
}


# --- otpauth-migration: Google Authenticator's export protobuf (MigrationPayload), and the URI around it.
def varint(n):
    out = b""
    while True:
        b = n & 0x7F
        n >>= 7
        out += bytes([b | (0x80 if n else 0)])
        if not n:
            return out


def field_bytes(number, data):
    return varint(number << 3 | 2) + varint(len(data)) + data


def field_int(number, value):
    return varint(number << 3) + varint(value)


def otp_parameters(secret, name, issuer, algorithm=1, digits=1, typ=2, counter=0):
    p = field_bytes(1, secret) + field_bytes(2, name.encode())
    if issuer:
        p += field_bytes(3, issuer.encode())
    p += field_int(4, algorithm) + field_int(5, digits) + field_int(6, typ)
    if counter:
        p += field_int(7, counter)
    return p


PAYLOAD_ONE = field_bytes(1, otp_parameters(b"Hello!\xde\xad\xbe\xef", "alice@example.com", "Example")) \
    + field_int(2, 1) + field_int(3, 1) + field_int(4, 0) + field_int(5, 12345)
PAYLOAD_TWO = field_bytes(1, otp_parameters(b"12345678901234567890", "totp8", "", algorithm=2, digits=2)) \
    + field_bytes(1, otp_parameters(b"abcdefghij", "counter", "H", typ=1, counter=7)) + field_int(2, 1)
MIGRATION = {
    # First byte even: the rest is the URI text; odd: the rest is the protobuf payload.
    "uri-one-account": b"\x00otpauth-migration://offline?data=" + base64.b64encode(PAYLOAD_ONE).replace(
        b"+", b"%2B").replace(b"/", b"%2F").replace(b"=", b"%3D"),
    "payload-one-account": b"\x01" + PAYLOAD_ONE,
    "payload-two-accounts": b"\x01" + PAYLOAD_TWO,
    "payload-empty": b"\x01",
    "regression-combining-name": b"\x01" + field_bytes(1, otp_parameters(b"abcdefghij", "\u0301x", "i")),
}


# --- NDEF: the NFC Forum URI record example, a text record, the YubiKey's NDEF message with an OTP.
def ndef_record(tnf, rtype, payload, mb=True, me=True):
    header = (0x80 if mb else 0) | (0x40 if me else 0) | 0x10 | tnf
    return bytes([header, len(rtype), len(payload)]) + rtype + payload


NDEF = {
    "uri-https-example": ndef_record(1, b"U", b"\x04example.com"),
    "uri-yubico-otp": ndef_record(1, b"U", b"\x04my.yubico.com/yk/#cccccccccccbnfkdrfhlbrdtlgujneivctgkrngcnrvi"),
    "text-en": ndef_record(1, b"T", b"\x02enHello, world"),
    "text-utf16": ndef_record(1, b"T", b"\x82en\xfe\xff\x00H\x00i"),
    "two-records": ndef_record(1, b"U", b"\x01yubico.com", me=False)
        + ndef_record(1, b"T", b"\x02de123456", mb=False),
    "capability-container": h("000f 20 003b 0034 04 06 e104 0800 00 00"),
    "long-record": bytes([0xC1, 1, 0, 0, 0, 5]) + b"U" + b"\x00abcd",
}

# --- OTP classification: first byte even is text mode (typed text), odd is token mode (structured).
OTP = {
    "yubico-doc-otp": b"\x00vvvvvvcucrlcietctckflvnncdgckubflugerlnr\r",
    "yubico-otp-44": b"\x00cccccccccccbnfkdrfhlbrdtlgujneivctgkrngcnrvi",
    "hotp-6": b"\x00" + b"123456\r",
    "hotp-8": b"\x00" + b"12345678\n",
    "static-password": b"\x00correct horse battery staple\r",
    "dvorak-typed": b"\x00jjjjjjcucrlcietctckflvnncdgckubflugerlnr",
    "token-zero": b"\x01" + bytes(20),
    "token-serial-public-id": b"\x01" + h("0102030405060100aabbcc0a3412") + bytes([6]) + h("ff0000bc614e"),
}

# --- The APDU console's input: hex as people type it.
APDUHEX = {
    "select-oath-spaces": "00 A4 04 00 07 A0 00 00 05 27 21 01",
    "select-oath-compact": "00a4040007a0000005272101",
    "colons": "00:a4:04:00:08:a0:00:00:05:27:20:01:01",
    "0x-prefixes": "0x00 0xCA 0x00 0x6E 0x00",
    "case4-short": "80 10 00 00 01 04 00",
    "case2-extended": "00 B0 00 00 00 01 00",
    "case3-extended": "00 DA 00 00 00 00 03 01 02 03",
    "odd-digits": "00 A4 0",
}

# --- X.509 and PIV objects: the first byte picks the form (0 DER, 1 PIV certificate object, 2 PEM, 3 a public key
# template of the algorithm the second byte names). The certificate: EC P-256, self-signed by openssl req -x509,
# with key usage and subject alternative names (the one in Tests/KeyKitTests/PIV/PIVFixtures.swift).
EC_CERTIFICATE = h(
    "30820202308201a7a00302010202081234567890abcdef300a06082a8648ce3d0403023039310b3009060355040613025345"
    "31143012060355040a0c0b796b7465726d20746573743114301206035504030c0b796b7465726d2d74657374301e170d3236"
    "313132353130343534395a170d3336313132323130343534395a3039310b300906035504061302534531143012060355040a"
    "0c0b796b7465726d20746573743114301206035504030c0b796b7465726d2d746573743059301306072a8648ce3d02010608"
    "2a8648ce3d0301070342000441b01b0b0dc9e50276bd93fe830a344272c9e2a7b4c925ae1022d737af0fd45be8c4339b0e01"
    "40dfd3828125990251a9a413a4f59ec260a630d45dc8418bd0d8a38198308195301d0603551d0e041604143e550e224844d2"
    "b2a4accee9e090d7fe6dd8b53a301f0603551d230418301680143e550e224844d2b2a4accee9e090d7fe6dd8b53a300f0603"
    "551d130101ff040530030101ff300e0603551d0f0101ff04040302038830320603551d11042b3029820f7069762e6578616d"
    "706c652e6f7267811074657374406578616d706c652e6f72678704c0000207300a06082a8648ce3d04030203490030460221"
    "00d0b85d2f24a8172dacfbf7de3ce0f38accb74301abbdd13a2272f3ce2578384d022100d6848db450eb3910d3d8691124d1"
    "68b094ba699f32d3bc1d233ff9d6981c1828")


def tlv(tag, value):
    n = len(value)
    length = bytes([n]) if n < 0x80 else bytes([0x81, n]) if n < 0x100 else bytes([0x82, n >> 8, n & 0xFF])
    return (tag.to_bytes((tag.bit_length() + 7) // 8, "big")) + length + value


def pem(der, label="CERTIFICATE"):
    text = base64.b64encode(der).decode()
    return "-----BEGIN %s-----\n%s\n-----END %s-----\n" % (
        label, "\n".join(text[i:i + 64] for i in range(0, len(text), 64)), label)


EC_POINT = EC_CERTIFICATE[EC_CERTIFICATE.index(h("034200")) + 3:][:65]
X509 = {
    "der-ec": b"\x00" + EC_CERTIFICATE,
    "object-plain": b"\x01" + tlv(0x70, EC_CERTIFICATE) + tlv(0x71, b"\x00") + tlv(0xFE, b""),
    "object-gzip": b"\x01" + tlv(0x70, gzip.compress(EC_CERTIFICATE, mtime=0)) + tlv(0x71, b"\x01") + tlv(0xFE, b""),
    "object-empty": b"\x01",
    "pem": b"\x02" + ("Certificate:\n" + pem(EC_CERTIFICATE)).encode(),
    "template-p256": b"\x03\x11" + tlv(0x86, EC_POINT),
    # RFC 8032 7.1 test 1's public key; RFC 7748 6.1's Alice public key.
    "template-ed25519": b"\x03\xe0" + tlv(0x86, h("d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a")),
    "template-x25519": b"\x03\xe1" + tlv(0x86, h("8520f0098930a754748b7ddcb43ef75a0dbf3a0d26381af4eba4a98eaa9b4e6a")),
    "template-rsa-small": b"\x03\x06" + tlv(0x81, bytes([0xC5]) + bytes(127)) + tlv(0x82, h("010001")),
}

# --- OpenPGP: a YubiKey 5's application related data, cardholder data, KDF objects, an Ed25519 public key,
# algorithm attributes, PW status bytes, and APDUs for the virtual key's applet (each after its length).
OID_ED25519 = h("2B06010401DA470F01")
OPENPGP_DISCRETIONARY = (
    tlv(0xC0, h("7D000BFE080000FF0000")) + tlv(0xC1, b"\x16" + OID_ED25519) + tlv(0xC2, h("010800001100"))
    + tlv(0xC3, h("010800001100")) + tlv(0xDA, h("010800001100")) + tlv(0xC4, h("007F7F7F030003"))
    + tlv(0xC5, bytes(range(1, 21)) + bytes(60)) + tlv(0xC6, bytes(80)) + tlv(0xCD, h("65000000") + bytes(12))
    + tlv(0xDE, h("0101020003008100")) + tlv(0xD6, h("0120")) + tlv(0xD7, h("0020")) + tlv(0xD8, h("0220"))
    + tlv(0xD9, h("0020")))
OPENPGP_ARD = tlv(0x6E, tlv(0x4F, h("D2760001240103040006123456780000")) + tlv(0x5F52, h("0073000080059000"))
                  + tlv(0x73, OPENPGP_DISCRETIONARY))


def apdus(*commands):
    return b"".join(bytes([len(c)]) + c for c in commands)


OPENPGP = {
    "ard-yubikey": b"\x00" + OPENPGP_ARD,
    "cardholder": b"\x01" + tlv(0x65, tlv(0x5B, b"Doe<<Jane") + tlv(0x5F2D, b"en") + tlv(0x5F35, b"\x32")),
    "kdf-none": b"\x02" + tlv(0x81, b"\x00"),
    "kdf-s2k": b"\x02" + tlv(0xF9, tlv(0x81, b"\x03") + tlv(0x82, b"\x08") + tlv(0x83, h("00780000"))),
    # RFC 8032 7.1 test 1's public key.
    "public-key-ed25519": b"\x03" + bytes([10]) + b"\x16" + OID_ED25519 + tlv(0x7F49, tlv(0x86, h(
        "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a"))),
    "attributes-rsa2048": b"\x04" + h("010800001100"),
    "attributes-p256": b"\x04" + h("132A8648CE3D030107FF"),
    "pw-status": b"\x05" + h("007F7F7F030003"),
    "applet-admin-touch": b"\x06" + apdus(h("0020008308") + b"12345678", h("00DA00D6020120"), h("00CA006E00"),
                                          h("00F2000003050505"), h("00CA00C400")),
    "applet-generate-sign": b"\x06" + apdus(h("0020008308") + b"12345678", h("00DA00C10A16") + OID_ED25519,
                                            h("0047800002B60000"), h("0020008106") + b"123456",
                                            h("002A9E9A0468656C6C6F00")),
}

# --- YubiHSM Auth: LIST, SELECT, CALCULATE, retries, challenges and public keys as a YubiKey answers them, and
# APDUs for the virtual key's applet (each after its length): credentials put with the default management key,
# session keys, a challenge, the list.
P256_G = h("046B17D1F2E12C4247F8BCE6E563A440F277037D812DEB33A0F4A13945D898C296"
           "4FE342E2FE1A7F9B8EE7EB4A7C0F9E162BCE33576B315ECECBB6406837BF51F5")
MGMT = tlv(0x7B, bytes(16))
CREDPW = tlv(0x73, b"demo" + bytes(12))


def cmd(ins, data=b"", p1=0, p2=0):
    return bytes([0, ins, p1, p2, len(data)]) + data


HSMAUTH = {
    "list": b"\x00" + tlv(0x72, b"\x26\x00demo\x08") + tlv(0x72, b"\x27\x01asym\x03"),
    "list-empty": b"\x00",
    "select": b"\x01" + tlv(0x79, h("050702")),
    "session-keys": b"\x02" + bytes(range(48)),
    "retries": b"\x03\x08",
    "challenge-symmetric": b"\x04" + bytes(range(8)),
    "challenge-asymmetric": b"\x04" + P256_G,
    "public-key": b"\x05" + P256_G,
    "applet-symmetric": b"\x06" + apdus(
        cmd(0x01, MGMT + tlv(0x71, b"sym") + tlv(0x74, b"\x26") + tlv(0x75, bytes(16)) + tlv(0x76, bytes(16))
            + CREDPW + tlv(0x7A, b"\x00")),
        cmd(0x03, tlv(0x71, b"sym") + tlv(0x77, bytes(16)) + CREDPW),
        cmd(0x04, tlv(0x71, b"sym")), cmd(0x05), cmd(0x09)),
    "applet-asymmetric": b"\x06" + apdus(
        cmd(0x01, MGMT + tlv(0x71, b"a") + tlv(0x74, b"\x27") + tlv(0x7D, b"") + CREDPW + tlv(0x7A, b"\x01")),
        cmd(0x0A, tlv(0x71, b"a")), cmd(0x04, tlv(0x71, b"a") + CREDPW), cmd(0x06, p1=0xDE, p2=0xAD)),
# --- PSKC (RFC 6030): a length byte n, n bytes of pre-shared key or passphrase, then the document. The RFC's
# examples: Figure 2 (plain HOTP), 3 (supplementary data), 5 (a PIN key package beside HOTP), 6 (AES-128-CBC with
# the pre-shared key 12345678901234567890123456789012 hex), 7 (PBKDF2 from the passphrase "qwerty").
PSKC_FIGURE2 = """\
<?xml version="1.0" encoding="UTF-8"?>

<KeyContainer Version="1.0"
    Id="exampleID1"
    xmlns="urn:ietf:params:xml:ns:keyprov:pskc">
    <KeyPackage>
        <Key Id="12345678"
            Algorithm="urn:ietf:params:xml:ns:keyprov:pskc:hotp">
            <Issuer>Issuer-A</Issuer>
            <Data>
                <Secret>
                    <PlainValue>MTIzNA==
                    </PlainValue>
                </Secret>
            </Data>
        </Key>
    </KeyPackage>
</KeyContainer>
"""
PSKC_FIGURE3 = """\
<?xml version="1.0" encoding="UTF-8"?>

<KeyContainer Version="1.0"
    Id="exampleID1"
    xmlns="urn:ietf:params:xml:ns:keyprov:pskc">
    <KeyPackage>
        <DeviceInfo>
            <Manufacturer>Manufacturer</Manufacturer>
            <SerialNo>987654321</SerialNo>
            <UserId>DC=example-bank,DC=net</UserId>
        </DeviceInfo>
        <CryptoModuleInfo>
            <Id>CM_ID_001</Id>
        </CryptoModuleInfo>
        <Key Id="12345678"
            Algorithm="urn:ietf:params:xml:ns:keyprov:pskc:hotp">
            <Issuer>Issuer</Issuer>
            <AlgorithmParameters>
                <ResponseFormat Length="8" Encoding="DECIMAL"/>
            </AlgorithmParameters>
            <Data>
                <Secret>
                    <PlainValue>MTIzNDU2Nzg5MDEyMzQ1Njc4OTA=
                    </PlainValue>
                </Secret>
                <Counter>
                    <PlainValue>0</PlainValue>
                </Counter>
            </Data>
            <UserId>UID=jsmith,DC=example-bank,DC=net</UserId>
        </Key>
    </KeyPackage>
</KeyContainer>
"""
PSKC_FIGURE5 = """\
<?xml version="1.0" encoding="UTF-8"?>

<KeyContainer Version="1.0"
    Id="exampleID1"
    xmlns="urn:ietf:params:xml:ns:keyprov:pskc">
    <KeyPackage>
        <DeviceInfo>
            <Manufacturer>Manufacturer</Manufacturer>
            <SerialNo>987654321</SerialNo>
        </DeviceInfo>
        <CryptoModuleInfo>
            <Id>CM_ID_001</Id>
        </CryptoModuleInfo>
        <Key Id="12345678"
            Algorithm="urn:ietf:params:xml:ns:keyprov:pskc:hotp">
            <Issuer>Issuer</Issuer>
            <AlgorithmParameters>
                <ResponseFormat Length="8" Encoding="DECIMAL"/>
            </AlgorithmParameters>
            <Data>
                <Secret>
                    <PlainValue>MTIzNDU2Nzg5MDEyMzQ1Njc4OTA=
                    </PlainValue>
                </Secret>
                <Counter>
                    <PlainValue>0</PlainValue>
                </Counter>
            </Data>
            <Policy>
                <PINPolicy MinLength="4" MaxLength="4"
                    PINKeyId="123456781" PINEncoding="DECIMAL"
                    PINUsageMode="Local"/>
                <KeyUsage>OTP</KeyUsage>
            </Policy>
        </Key>
    </KeyPackage>
    <KeyPackage>
        <DeviceInfo>
            <Manufacturer>Manufacturer</Manufacturer>
            <SerialNo>987654321</SerialNo>
        </DeviceInfo>
        <CryptoModuleInfo>
            <Id>CM_ID_001</Id>
        </CryptoModuleInfo>
        <Key Id="123456781"
            Algorithm="urn:ietf:params:xml:ns:keyprov:pskc:pin">
            <Issuer>Issuer</Issuer>
            <AlgorithmParameters>
                <ResponseFormat Length="4" Encoding="DECIMAL"/>
            </AlgorithmParameters>
            <Data>
                <Secret>
                    <PlainValue>MTIzNA==</PlainValue>
                </Secret>
            </Data>
        </Key>
    </KeyPackage>
</KeyContainer>
"""
PSKC_FIGURE6 = """\
<?xml version="1.0" encoding="UTF-8"?>

<KeyContainer Version="1.0"
    xmlns="urn:ietf:params:xml:ns:keyprov:pskc"
    xmlns:ds="http://www.w3.org/2000/09/xmldsig#"
    xmlns:xenc="http://www.w3.org/2001/04/xmlenc#">
    <EncryptionKey>
        <ds:KeyName>Pre-shared-key</ds:KeyName>
    </EncryptionKey>
    <MACMethod Algorithm="http://www.w3.org/2000/09/xmldsig#hmac-sha1">
        <MACKey>
            <xenc:EncryptionMethod
            Algorithm="http://www.w3.org/2001/04/xmlenc#aes128-cbc"/>
            <xenc:CipherData>
                <xenc:CipherValue>
    ESIzRFVmd4iZABEiM0RVZgKn6WjLaTC1sbeBMSvIhRejN9vJa2BOlSaMrR7I5wSX
                </xenc:CipherValue>
            </xenc:CipherData>
        </MACKey>
    </MACMethod>
    <KeyPackage>
        <DeviceInfo>
            <Manufacturer>Manufacturer</Manufacturer>
            <SerialNo>987654321</SerialNo>
        </DeviceInfo>
        <CryptoModuleInfo>
            <Id>CM_ID_001</Id>
        </CryptoModuleInfo>
        <Key Id="12345678"
            Algorithm="urn:ietf:params:xml:ns:keyprov:pskc:hotp">
            <Issuer>Issuer</Issuer>
            <AlgorithmParameters>
                <ResponseFormat Length="8" Encoding="DECIMAL"/>
            </AlgorithmParameters>
            <Data>
                <Secret>
                    <EncryptedValue>
                        <xenc:EncryptionMethod
                        Algorithm="http://www.w3.org/2001/04/xmlenc#aes128-cbc"/>
                        <xenc:CipherData>
                            <xenc:CipherValue>
    AAECAwQFBgcICQoLDA0OD+cIHItlB3Wra1DUpxVvOx2lef1VmNPCMl8jwZqIUqGv
                            </xenc:CipherValue>
                        </xenc:CipherData>
                    </EncryptedValue>
                    <ValueMAC>Su+NvtQfmvfJzF6bmQiJqoLRExc=
                    </ValueMAC>
                </Secret>
                <Counter>
                    <PlainValue>0</PlainValue>
                </Counter>
            </Data>
        </Key>
    </KeyPackage>
</KeyContainer>
"""
PSKC_FIGURE7 = """\
<?xml version="1.0" encoding="UTF-8"?>

<pskc:KeyContainer
  xmlns:pskc="urn:ietf:params:xml:ns:keyprov:pskc"
  xmlns:xenc11="http://www.w3.org/2009/xmlenc11#"
  xmlns:pkcs5="http://www.rsasecurity.com/rsalabs/pkcs/schemas/pkcs-5v2-0#"
  xmlns:xenc="http://www.w3.org/2001/04/xmlenc#" Version="1.0">
    <pskc:EncryptionKey>
        <xenc11:DerivedKey>
            <xenc11:KeyDerivationMethod
              Algorithm="http://www.rsasecurity.com/rsalabs/pkcs/schemas/pkcs-5v2-0#pbkdf2">
                <pkcs5:PBKDF2-params>
                    <Salt>
                        <Specified>Ej7/PEpyEpw=</Specified>
                    </Salt>
                    <IterationCount>1000</IterationCount>
                    <KeyLength>16</KeyLength>
                    <PRF/>
                </pkcs5:PBKDF2-params>
            </xenc11:KeyDerivationMethod>
            <xenc:ReferenceList>
                <xenc:DataReference URI="#ED"/>
            </xenc:ReferenceList>
            <xenc11:MasterKeyName>My Password 1</xenc11:MasterKeyName>
        </xenc11:DerivedKey>
    </pskc:EncryptionKey>
    <pskc:MACMethod
        Algorithm="http://www.w3.org/2000/09/xmldsig#hmac-sha1">
        <pskc:MACKey>
            <xenc:EncryptionMethod
            Algorithm="http://www.w3.org/2001/04/xmlenc#aes128-cbc"/>
            <xenc:CipherData>
                <xenc:CipherValue>
2GTTnLwM3I4e5IO5FkufoOEiOhNj91fhKRQBtBJYluUDsPOLTfUvoU2dStyOwYZx
                </xenc:CipherValue>
            </xenc:CipherData>
        </pskc:MACKey>
    </pskc:MACMethod>
    <pskc:KeyPackage>
        <pskc:DeviceInfo>
            <pskc:Manufacturer>TokenVendorAcme</pskc:Manufacturer>
            <pskc:SerialNo>987654321</pskc:SerialNo>
        </pskc:DeviceInfo>
        <pskc:CryptoModuleInfo>
            <pskc:Id>CM_ID_001</pskc:Id>
        </pskc:CryptoModuleInfo>
        <pskc:Key Algorithm="urn:ietf:params:xml:ns:keyprov:pskc:hotp" Id="123456">
            <pskc:Issuer>Example-Issuer</pskc:Issuer>
            <pskc:AlgorithmParameters>
                <pskc:ResponseFormat Length="8" Encoding="DECIMAL"/>
            </pskc:AlgorithmParameters>
            <pskc:Data>
                <pskc:Secret>
                <pskc:EncryptedValue Id="ED">
                    <xenc:EncryptionMethod
                        Algorithm="http://www.w3.org/2001/04/xmlenc#aes128-cbc"/>
                        <xenc:CipherData>
                            <xenc:CipherValue>
      oTvo+S22nsmS2Z/RtcoF8Hfh+jzMe0RkiafpoDpnoZTjPYZu6V+A4aEn032yCr4f
                        </xenc:CipherValue>
                    </xenc:CipherData>
                    </pskc:EncryptedValue>
                    <pskc:ValueMAC>LP6xMvjtypbfT9PdkJhBZ+D6O4w=
                    </pskc:ValueMAC>
                </pskc:Secret>
            </pskc:Data>
        </pskc:Key>
    </pskc:KeyPackage>
</pskc:KeyContainer>
"""
PSKC = {
    "rfc6030-figure2": b"\x00" + PSKC_FIGURE2.encode(),
    "rfc6030-figure3": b"\x00" + PSKC_FIGURE3.encode(),
    "rfc6030-figure5": b"\x00" + PSKC_FIGURE5.encode(),
    "rfc6030-figure6": b"\x10" + h("12345678901234567890123456789012") + PSKC_FIGURE6.encode(),
    "rfc6030-figure7": b"\x06qwerty" + PSKC_FIGURE7.encode(),
}

# --- Whole sessions against a device fed by the input: recorded, not written here. Seeds named regression-*
# (inputs that crashed a target, kept so the fuzzer starts from them) stay.
SESSION_TARGETS = [
    "FuzzCTAP2PINChange", "FuzzCTAP2Credentials", "FuzzOATHCalculateAll", "FuzzOTPHIDExchange", "FuzzPIVSession",
    "FuzzBioEnrollment", "FuzzManagementConfig", "FuzzOTPSlotProgramming", "FuzzCTAP2Config",
]


def record_sessions():
    binaries = Path(__file__).resolve().parent / ".build" / "release"
    for target in SESSION_TARGETS:
        exe = binaries / target
        if not exe.exists():
            print(f"{target}: {exe} is not built (make fuzz-build); its seeds are left as they are")
            continue
        d = HERE / target
        d.mkdir(parents=True, exist_ok=True)
        for f in d.iterdir():
            if not f.name.startswith("regression-"):
                f.unlink()
        subprocess.run([str(exe), "--record-seeds", str(d)], check=True,
                       env={**os.environ, "SWIFT_BACKTRACE": "enable=no"})


if __name__ == "__main__":
    write("FuzzCBOR", CBOR)
    write("FuzzTLV", TLV)
    write("FuzzResponse", RESPONSE)
    write("FuzzCTAPHID", CTAPHID)
    write("FuzzVpcd", VPCD)
    write("FuzzOTPAuthURI", OTPAUTH)
    write("FuzzMigration", MIGRATION)
    write("FuzzNDEF", NDEF)
    write("FuzzOTP", OTP)
    write("FuzzAPDUHex", APDUHEX)
    write("FuzzX509", X509)
    write("FuzzOpenPGP", OPENPGP)
    write("FuzzHSMAuth", HSMAUTH)
    write("FuzzPSKC", PSKC)
    record_sessions()
    for d in sorted(HERE.iterdir()):
        print(f"{d.name}: {len(list(d.iterdir()))} seeds")
