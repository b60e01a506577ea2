"""python-fido2 as the independent client for the FIDO2 settings tests (authenticatorConfig, the forced PIN
change, updateUserInformation), over PC/SC.

Usage: fido2_config_peer.py READER ACTION [ARGS...]; prints one JSON object. PINs come from stdin, one per line,
never from argv; an empty first line means "no PIN" where one is optional.
"""

import json
import os
import sys

from fido2.ctap import CtapError
from fido2.ctap2 import Config, Ctap2
from fido2.ctap2.credman import CredentialManagement
from fido2.ctap2.pin import ClientPin
from fido2.pcsc import CtapPcscDevice


def device(reader):
    for d in CtapPcscDevice.list_devices(reader):
        return d
    raise SystemExit(json.dumps({"error": "no device"}))


def pin_line():
    return sys.stdin.readline().rstrip("\n")


def config(ctap, client_pin):
    pin = pin_line()
    if not pin:
        return Config(ctap)
    token = client_pin.get_pin_token(pin, ClientPin.PERMISSION.AUTHENTICATOR_CFG)
    return Config(ctap, client_pin.protocol, token)


def credentials(ctap, client_pin, pin):
    token = client_pin.get_pin_token(pin, ClientPin.PERMISSION.CREDENTIAL_MGMT)
    return CredentialManagement(ctap, client_pin.protocol, token)


def main():
    reader, action, *args = sys.argv[1:]
    ctap = Ctap2(device(reader))
    client_pin = ClientPin(ctap)
    result = {}
    try:
        if action == "info":
            info = ctap.get_info()
            result = {"options": info.options, "min_pin_length": info.min_pin_length,
                      "force_pin_change": info.force_pin_change, "extensions": info.extensions,
                      "max_rpids_for_min_pin": info.max_rpids_for_min_pin}
        elif action == "token":
            result = {"token": len(client_pin.get_pin_token(pin_line()))}
        elif action == "change-pin":
            old, new = pin_line(), pin_line()
            client_pin.change_pin(old, new)
            result = {"changed": True}
        elif action == "set-min-length":
            rp_ids = args[1:] or None
            config(ctap, client_pin).set_min_pin_length(int(args[0]) if args[0] != "-" else None, rp_ids=rp_ids)
            result = {"done": True}
        elif action == "force-change":
            config(ctap, client_pin).set_min_pin_length(force_change_pin=True)
            result = {"done": True}
        elif action == "toggle-always-uv":
            config(ctap, client_pin).toggle_always_uv()
            result = {"done": True}
        elif action == "make":
            # A non-discoverable credential without a PIN token, asking for the minPinLength extension.
            att = ctap.make_credential(os.urandom(32), {"id": args[0]}, {"id": b"u", "name": "u"},
                                       [{"type": "public-key", "alg": -7}], extensions={"minPinLength": True})
            result = {"min_pin_length": (att.auth_data.extensions or {}).get("minPinLength")}
        elif action == "list":
            cm = credentials(ctap, client_pin, pin_line())
            creds = []
            for rp in cm.enumerate_rps():
                for c in cm.enumerate_creds(rp[CredentialManagement.RESULT.RP_ID_HASH]):
                    user = c[CredentialManagement.RESULT.USER]
                    creds.append({"rp_id": rp[CredentialManagement.RESULT.RP]["id"],
                                  "credential_id": c[CredentialManagement.RESULT.CREDENTIAL_ID]["id"].hex(),
                                  "user_name": user.get("name"), "display_name": user.get("displayName"),
                                  "cred_protect": c.get(CredentialManagement.RESULT.CRED_PROTECT),
                                  "large_blob_key": CredentialManagement.RESULT.LARGE_BLOB_KEY in c})
            result = {"credentials": creds}
        elif action == "update-user":
            cm = credentials(ctap, client_pin, pin_line())
            cred_id, user_id, name, display_name = args
            cm.update_user_info({"id": bytes.fromhex(cred_id), "type": "public-key"},
                                {"id": bytes.fromhex(user_id), "name": name, "displayName": display_name})
            result = {"done": True}
        else:
            raise SystemExit(f"unknown action {action}")
    except CtapError as e:
        result = {"ctap_error": e.code.name}
    print(json.dumps(result))


if __name__ == "__main__":
    main()
