"""python-fido2 as an independent FIDO2 client over PC/SC, driven by the integration tests.

Usage: fido2_peer.py READER ACTION [ARGS...]; prints one JSON object. Reads the PIN from stdin where an
action needs one (never from argv, like the program under test).
"""

import hashlib
import json
import os
import sys

from fido2.attestation import PackedAttestation
from fido2.ctap import CtapError
from fido2.ctap2 import Ctap2
from fido2.ctap2.credman import CredentialManagement
from fido2.ctap2.pin import ClientPin
from fido2.pcsc import CtapPcscDevice


def device(reader):
    for d in CtapPcscDevice.list_devices(reader):
        return d
    raise SystemExit(json.dumps({"error": "no device"}))


def main():
    reader, action, *args = sys.argv[1:]
    ctap = Ctap2(device(reader))
    client_pin = ClientPin(ctap)
    result = {}
    try:
        if action == "info":
            info = ctap.get_info()
            result = {"versions": info.versions, "options": info.options, "aaguid": info.aaguid.hex()}
        elif action == "retries":
            result = {"retries": client_pin.get_pin_retries()[0]}
        elif action == "token":
            pin = sys.stdin.readline().rstrip("\n")
            token = client_pin.get_pin_token(pin)
            result = {"token": len(token)}
        elif action == "make-resident":
            pin = sys.stdin.readline().rstrip("\n")
            rp_id, user_name = args
            token = client_pin.get_pin_token(pin, ClientPin.PERMISSION.MAKE_CREDENTIAL, rp_id)
            cdh = os.urandom(32)
            att = ctap.make_credential(
                cdh, {"id": rp_id, "name": rp_id}, {"id": user_name.encode(), "name": user_name},
                [{"type": "public-key", "alg": -7}], options={"rk": True},
                pin_uv_param=client_pin.protocol.authenticate(token, cdh),
                pin_uv_protocol=client_pin.protocol.VERSION)
            PackedAttestation().verify(att.att_stmt, att.auth_data, cdh)  # self attestation, checked here
            result = {"credential_id": att.auth_data.credential_data.credential_id.hex()}
        elif action == "make-verify":
            # A discoverable credential with the algorithms given (in that order), its self attestation, an
            # assertion and the key credential management lists, all checked with python-fido2's own COSE classes.
            from fido2.cose import CoseKey
            pin = sys.stdin.readline().rstrip("\n")
            rp_id, user_name, *algorithms = args
            token = client_pin.get_pin_token(pin, ClientPin.PERMISSION.MAKE_CREDENTIAL, rp_id)
            cdh = os.urandom(32)
            att = ctap.make_credential(
                cdh, {"id": rp_id, "name": rp_id}, {"id": user_name.encode(), "name": user_name},
                [{"type": "public-key", "alg": int(a)} for a in algorithms], options={"rk": True},
                pin_uv_param=client_pin.protocol.authenticate(token, cdh),
                pin_uv_protocol=client_pin.protocol.VERSION)
            PackedAttestation().verify(att.att_stmt, att.auth_data, cdh)
            credential = att.auth_data.credential_data
            public_key = CoseKey.parse(dict(credential.public_key))
            challenge = os.urandom(32)
            assertion = ctap.get_assertion(rp_id, challenge, [{"type": "public-key", "id": credential.credential_id}])
            assertion.verify(challenge, public_key)
            try:
                public_key.verify(assertion.auth_data + os.urandom(32), assertion.signature)
                other_message = "verified"
            except Exception as e:
                other_message = type(e).__name__
            token = client_pin.get_pin_token(pin, ClientPin.PERMISSION.CREDENTIAL_MGMT)
            listed = [c for c in CredentialManagement(ctap, client_pin.protocol, token).enumerate_creds(
                hashlib.sha256(rp_id.encode()).digest()) if c[7]["id"] == credential.credential_id]
            result = {"credential_id": credential.credential_id.hex(), "cose_class": type(public_key).__name__,
                      "cose_key": {str(k): (v.hex() if isinstance(v, bytes) else v) for k, v in public_key.items()},
                      "attestation_alg": att.att_stmt["alg"], "signature_length": len(assertion.signature),
                      "other_message": other_message,
                      "listed_key_same": len(listed) == 1 and CoseKey.parse(listed[0][8]) == public_key}
        elif action == "list-resident":
            pin = sys.stdin.readline().rstrip("\n")
            token = client_pin.get_pin_token(pin, ClientPin.PERMISSION.CREDENTIAL_MGMT)
            cm = CredentialManagement(ctap, client_pin.protocol, token)
            ids = []
            for rp in cm.enumerate_rps():
                for cred in cm.enumerate_creds(rp[4]):
                    public_key = cred[8]
                    ids.append({"rp_id": rp[3]["id"], "credential_id": cred[7]["id"].hex(),
                                "user_name": cred[6].get("name"), "user_id": cred[6]["id"].hex(),
                                "display_name": cred[6].get("displayName"), "cred_protect": cred.get(10),
                                "key_type": public_key[1], "alg": public_key[3],
                                "x": public_key[-2].hex(), "y": public_key.get(-3, b"").hex()})
            result = {"credentials": ids}
        elif action == "u2f-register":
            from fido2.ctap1 import Ctap1
            app = hashlib.sha256(args[0].encode()).digest()
            chal = os.urandom(32)
            reg = Ctap1(device(reader)).register(chal, app)
            reg.verify(app, chal)  # registration signature against the attestation certificate
            result = {"key_handle": reg.key_handle.hex(), "public_key": reg.public_key.hex()}
        elif action == "u2f-sign":
            from fido2.ctap1 import Ctap1
            app = hashlib.sha256(args[0].encode()).digest()
            chal = os.urandom(32)
            sig = Ctap1(device(reader)).authenticate(chal, app, bytes.fromhex(args[1]))
            sig.verify(app, chal, bytes.fromhex(args[2]))
            result = {"counter": sig.counter}
        elif action == "assert":
            rp_id = args[0]
            cdh = hashlib.sha256(b"peer").digest()
            r = ctap.get_assertion(rp_id, cdh)
            result = {"credential_id": r.credential["id"].hex()}
        else:
            raise SystemExit(f"unknown action {action}")
    except CtapError as e:
        result = {"ctap_error": e.code.name}
    print(json.dumps(result))


if __name__ == "__main__":
    main()
