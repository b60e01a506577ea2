"""The soak (issue 22, section 1) in `make test`: soak.py for SOAK_MINUTES (3 by default; `make soak` runs it for
30) — the TUI on a USB virtual key pulled out and plugged in every few seconds and a second served key that
comes and goes, pcscd killed every minute, ykman and `ykterm oath code` reading codes beside it. It asserts the
pass criteria (soak.failures: no wrong code, no missed period boundary, every arrival on screen within a second,
RSS growth under 1 MiB after warm-up, descriptors back where they started, no more threads than then) and prints the figures.
"""

import os

import pytest

import soak

MINUTES = float(os.environ.get("SOAK_MINUTES", "3"))

pytestmark = pytest.mark.skipif(soak.unavailable() is not None, reason=soak.unavailable() or "")


def test_the_tui_keeps_right_codes_on_churning_keys_without_growing(capsys):
    r = soak.run(MINUTES)
    with capsys.disabled():
        print(f"\nsoak, {MINUTES:g} min:\n{soak.table(r)}")
    failed = soak.failures(r)
    assert not failed, "\n".join(failed) + "\n\nprogress:\n" + r.get("log", "")[-3000:]
