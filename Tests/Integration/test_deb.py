"""The Debian package (issue 36): `make deb` builds it; apt installs it; it works with no Swift toolchain in reach;
apt removes it without a trace and leaves the machine's package list as it was; lintian finds no error; packaging
the same build tree again gives the same bytes.

Root only (apt-get). The package is built once for the module (`make deb`: the release build, several minutes on
a fresh clone, then the second link and the packaging); the tests after it share the installed package, and the
last one removes it. A ykterm package installed before the test is kept aside with dpkg-repack, removed, and put
back at the end, so the machine is left as it was found.
"""

import gzip
import os
import re
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from harness import ROOT, VPCD_DRIVER, usb_unavailable_reason

pytestmark = pytest.mark.skipif(os.geteuid() != 0 or shutil.which("apt-get") is None,
                                reason="installs a package: needs root and apt-get")

VERSION = re.search(r'^#define YKTERM_VERSION "(.*)"$',
                    (ROOT / "Sources/CBuildInfo/include/build_info.h").read_text(), re.M).group(1)
APT_ENV = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
# The package list as dpkg-query prints it: every package with its version and state (half-installed or removed
# packages with their configuration left included).
PACKAGE_LIST = ["dpkg-query", "-W", "-f", "${Package} ${Version} ${Architecture} ${db:Status-Abbrev}\n"]


def toolchain():
    """The Swift toolchain's folder (/opt/swift for /opt/swift/usr/bin/swift)."""
    swift = shutil.which("swift")
    if swift is None:
        return None
    usr = Path(swift).resolve().parent.parent
    return usr.parent if usr.name == "usr" else usr


def run(argv, check=True, timeout=120, **kw):
    r = subprocess.run([str(a) for a in argv], capture_output=True, text=True, timeout=timeout,
                       stdin=subprocess.DEVNULL, **kw)
    if check and r.returncode != 0:
        raise AssertionError(f"{' '.join(map(str, argv))} exited {r.returncode}\nstdout: {r.stdout[-3000:]}\n"
                             f"stderr: {r.stderr[-3000:]}")
    return r


def expected_commit():
    """The commit the Makefile names (`git rev-parse --short HEAD`, -dirty with changes), or "" outside git."""
    top = run(["git", "-C", ROOT, "rev-parse", "--show-toplevel"], check=False)
    if top.returncode != 0 or Path(top.stdout.strip()).resolve() != ROOT.resolve():
        return ""
    short = run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"]).stdout.strip()
    clean = run(["git", "-C", ROOT, "diff", "--quiet", "HEAD", "--"], check=False).returncode == 0
    return short if clean else short + "-dirty"


def installed_version():
    r = run(["dpkg-query", "-W", "-f", "${db:Status-Abbrev} ${Version}", "ykterm"], check=False)
    return r.stdout.split()[1] if r.returncode == 0 and r.stdout.startswith("ii") else None


def clean_env(home):
    """An environment with no Swift toolchain in reach: the system's PATH, no LD_LIBRARY_PATH."""
    env = {"PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "HOME": str(home),
           "LANG": "C.UTF-8", "TERM": "xterm-256color", "TMPDIR": os.environ.get("TMPDIR", "/tmp")}
    tc = toolchain()
    assert shutil.which("swift", path=env["PATH"]) is None, "swift is on the system's PATH"
    if tc is not None:
        assert not any(p.startswith(str(tc)) for p in env["PATH"].split(":"))
    return env


def extracted(deb, tmp_path, member):
    """One file of the package, unpacked into tmp_path."""
    out = tmp_path / "extract"
    if not out.exists():
        run(["dpkg-deb", "-x", deb, out])
    return out / member


def dpkg_excludes_man_pages():
    """The dpkg.cfg.d file that keeps /usr/share/man out of installs (Debian's container images do), or None."""
    for f in sorted(Path("/etc/dpkg/dpkg.cfg.d").glob("*")) if Path("/etc/dpkg/dpkg.cfg.d").is_dir() else []:
        for line in f.read_text(errors="replace").splitlines():
            if re.match(r"\s*path-exclude\s*=?\s*/usr/share/man/", line):
                return f
    return None


class Package:
    deb: Path
    build_seconds: float
    before: str  # the package list before the test installed anything
    kept_aside: Path = None  # the ykterm that was installed before, repacked
    removed: bool = False


@pytest.fixture(scope="module")
def package(tmp_path_factory):
    work = tmp_path_factory.mktemp("deb")
    p = Package()
    started = time.monotonic()
    # What the build leaves in TMPDIR (the Swift driver's TemporaryDirectory.*) goes to a folder pytest removes.
    (work / "tmp").mkdir()
    r = run(["make", "-C", ROOT, "--no-print-directory", "deb"], check=False, timeout=3600,
            env=dict(os.environ, TMPDIR=str(work / "tmp")))
    p.build_seconds = time.monotonic() - started
    assert r.returncode == 0, f"make deb exited {r.returncode}\nstdout: {r.stdout[-6000:]}\nstderr: {r.stderr[-6000:]}"
    arch = run(["dpkg", "--print-architecture"]).stdout.strip()
    p.deb = ROOT / "dist" / f"ykterm_{VERSION}_{arch}.deb"
    assert p.deb.is_file(), r.stdout[-2000:]
    print(f"make deb: {p.build_seconds:.0f} s")
    # Nothing but ykterm may come in with it: the test leaves the package list as it found it.
    p.before = run(PACKAGE_LIST).stdout
    if installed_version() is not None:
        if shutil.which("dpkg-repack") is None:
            pytest.skip("ykterm is installed here and dpkg-repack, which would keep it aside, is missing")
        run(["dpkg-repack", "ykterm"], cwd=work)
        p.kept_aside = next(work.glob("ykterm_*.deb"))
        # Removed, so that what follows is a first install (apt would skip the same version).
        run(["dpkg", "--purge", "ykterm"], env=APT_ENV, timeout=600)
    simulated = run(["apt-get", "install", "-s", "-y", p.deb], env=APT_ENV).stdout
    coming = sorted(set(re.findall(r"^Inst (\S+)", simulated, re.M)) - {"ykterm"})
    assert not coming, f"installing the package would bring in {coming}: install them first (make deps)"
    run(["apt-get", "install", "-y", p.deb], env=APT_ENV, timeout=600)
    try:
        yield p
    finally:
        if not p.removed and installed_version() is not None:
            run(["apt-get", "remove", "--purge", "-y", "ykterm"], env=APT_ENV, check=False, timeout=600)
        if p.kept_aside is not None:
            run(["dpkg", "-i", p.kept_aside], env=APT_ENV, timeout=600)


def test_version_is_the_sources_and_the_commits(package, tmp_path):
    env = clean_env(tmp_path)
    r = run(["ykterm", "--version"], env=env)
    commit = expected_commit()
    assert r.stdout == (f"{VERSION} ({commit})\n" if commit else f"{VERSION}\n"), r.stdout
    assert run(["dpkg-query", "-W", "-f", "${Version}", "ykterm"]).stdout == VERSION
    assert run(["dpkg-deb", "-f", package.deb, "Version"]).stdout.strip() == VERSION
    # The man page carries the same version on its .TH line (read from the package: it may not be installed).
    with gzip.open(extracted(package.deb, tmp_path, "usr/share/man/man1/ykterm.1.gz")) as f:
        th = f.readline().decode()
    assert re.match(rf'^\.TH YKTERM 1 "[^"]*" "ykterm {re.escape(VERSION)}"', th), th


def test_virtual_oath_code_without_the_toolchain(package, tmp_path):
    r = run(["ykterm", "--virtual", "oath", "code"], env=clean_env(tmp_path))
    assert re.search(r"^GitHub:alice@example\.com\s+\d{6}$", r.stdout, re.M), r.stdout


def test_installed_string_tables_are_read(package, tmp_path):
    # The installed string tables are the ones read, and nothing is opened under the toolchain or the source tree
    # the binary was built from (its fallback for the tables).
    assert shutil.which("strace") is not None, "strace is missing: run make deps"
    trace = tmp_path / "strace.txt"
    env_de = dict(clean_env(tmp_path), LANG="de_DE.UTF-8")
    r = run(["strace", "-f", "-qq", "-e", "trace=open,openat,execve", "-o", trace, "ykterm", "doctor", "--virtual"],
            env=env_de, check=False)
    if "PTRACE" in r.stderr and not (trace.exists() and trace.read_text()):
        pytest.skip(f"strace cannot trace here: {r.stderr.strip()}")
    assert "Texte: de" in r.stdout, r.stdout + r.stderr
    opened = [m.group(1) for m in re.finditer(r'open(?:at)?\([^"]*"([^"]+)"[^)]*\)\s*=\s*\d', trace.read_text())]
    assert any(re.fullmatch(r"/usr/(bin/\.\./)?share/ykterm/strings/de\.json", o) for o in opened), opened
    tc = toolchain()
    foreign = [o for o in opened if o.startswith(str(ROOT) + "/") or (tc and o.startswith(str(tc) + "/"))]
    assert not foreign, foreign


def test_nothing_of_the_toolchain_is_linked(package):
    tc = toolchain()
    for path in ("/usr/bin/ykterm", "/usr/lib/ykterm/libykterm-ifd-one-slot.so"):
        out = run(["ldd", path]).stdout
        assert "not found" not in out, out
        if tc is not None:
            assert str(tc) not in out, out
        dynamic = run(["readelf", "-d", path]).stdout
        assert "RPATH" not in dynamic and "RUNPATH" not in dynamic, dynamic
    # Debian's libraries, shared; the Swift runtime linked in.
    needed = re.findall(r"Shared library: \[(.*?)\]", run(["readelf", "-d", "/usr/bin/ykterm"]).stdout)
    assert {"libcrypto.so.3", "libncursesw.so.6", "libz.so.1", "libpcsclite.so.1", "libxml2.so.2"} <= set(needed), needed
    assert not any("swift" in n for n in needed), needed
    depends = run(["dpkg-deb", "-f", package.deb, "Depends", "Recommends", "Suggests"]).stdout
    # libpng and libjpeg read QR code images (linked); libqrencode and zbar are loaded with dlopen when a QR code is
    # drawn or read, so control names them.
    for name in ("libc6", "libpcsclite1", "libssl3", "libncursesw6", "zlib1g", "libpng16-16", "libjpeg62-turbo",
                 "libqrencode4", "libzbar0", "libxml2"):
        assert re.search(rf"\b{name}\b", depends), depends
    assert "Recommends: pcscd" in depends and "Suggests: vsmartcard-vpcd" in depends, depends


@pytest.mark.skipif(usb_unavailable_reason() is not None or not os.path.exists(VPCD_DRIVER),
                    reason=usb_unavailable_reason() or "vsmartcard-vpcd is not installed")
def test_serve_usb_runs_the_installed_ykterm(package, tmp_path):
    env = clean_env(tmp_path)
    r = run(["ykterm", "virtual-key", "serve", "--usb", "--", "/bin/sh", "-c", "ykterm list && ykterm list --readers"],
            env=env, timeout=90)
    assert re.search(r"YubiKey 5 NFC, serial \d+", r.stdout), r.stdout + r.stderr
    assert "interfaces: CCID+FIDO+OTP" in r.stdout, r.stdout
    # One reader: pcscd loaded the packaged one-slot driver (vpcd alone would make two).
    readers = [line for line in r.stdout.splitlines() if line.startswith("Yubico YubiKey")]
    assert len(readers) == 2 and readers[1].endswith("key present"), r.stdout


def test_man_page(package, tmp_path):
    assert "./usr/share/man/man1/ykterm.1.gz" in run(["dpkg-deb", "-c", package.deb]).stdout
    excluded = dpkg_excludes_man_pages()
    if excluded is not None:
        pytest.skip(f"{excluded} keeps /usr/share/man out of every install here: the page is in the package "
                    f"(checked), not on disk")
    assert shutil.which("man") is not None, "man-db is missing: run make deps"
    r = run(["man", "-w", "ykterm"], env=clean_env(tmp_path))
    assert r.stdout.strip() == "/usr/share/man/man1/ykterm.1.gz", r.stdout


def test_bash_completes_the_subcommand(package, tmp_path):
    script = """
source /usr/share/bash-completion/bash_completion
_completion_loader ykterm
spec=$(complete -p ykterm) || exit 3
func=${spec#*-F }; func=${func%% *}
COMP_WORDS=(ykterm oa); COMP_CWORD=1; COMP_LINE="ykterm oa"; COMP_POINT=${#COMP_LINE}
"$func" ykterm oa ykterm
printf '%s\\n' "${COMPREPLY[@]}"
"""
    assert Path("/usr/share/bash-completion/bash_completion").is_file(), "bash-completion is missing: make deps"
    r = run(["bash", "--norc", "--noprofile", "-c", script], env=clean_env(tmp_path))
    assert r.stdout.split() == ["oath"], r.stdout + r.stderr


def test_lintian_finds_no_error(package, tmp_path):
    # Its ELF cache (mldbm-elf-*) in tmp_path, which pytest removes.
    r = run(["lintian", "--fail-on", "error", package.deb], check=False, timeout=300,
            env=dict(os.environ, TMPDIR=str(tmp_path)))
    tags = [line for line in r.stdout.splitlines() if re.match(r"^[EW]: ", line)]
    assert r.returncode == 0 and not [t for t in tags if t.startswith("E:")], r.stdout + r.stderr
    # A warning kept is explained: in the overrides the package ships (then lintian does not show it) or in
    # README's packaging section.
    packaging = (ROOT / "README.md").read_text().split("### Packaging", 1)[-1]
    unexplained = [t for t in tags if re.match(r"^W: ykterm: (\S+)", t).group(1) not in packaging]
    assert not unexplained, unexplained


def test_packaging_the_same_build_again_gives_the_same_bytes(package, tmp_path):
    # The second `make deb` from the same build tree: the release build is up to date, the second link and the
    # packaging run again, into another folder.
    (tmp_path / "tmp").mkdir()
    r = run(["make", "-C", ROOT, "--no-print-directory", "deb", f"DIST={tmp_path}/dist", f"DEB_WORK={tmp_path}/work"],
            timeout=1800, env=dict(os.environ, TMPDIR=str(tmp_path / "tmp")))
    again = tmp_path / "dist" / package.deb.name
    first, second = (run(["sha256sum", d]).stdout.split()[0] for d in (package.deb, again))
    print(f"SHA-256: {first} (first), {second} (again)")
    assert first == second, run(["sh", "-c", f"diffoscope {package.deb} {again} 2>&1 | head -60"],
                                check=False).stdout if shutil.which("diffoscope") else r.stdout[-2000:]


def test_remove_purge_leaves_nothing(package):
    files = run(["dpkg", "-L", "ykterm"]).stdout.splitlines()
    assert "/usr/bin/ykterm" in files and "/usr/lib/udev/rules.d/70-ykterm-fido.rules" in files, files
    run(["apt-get", "remove", "--purge", "-y", "ykterm"], env=APT_ENV, timeout=600)
    package.removed = True
    left = [f for f in files if os.path.lexists(f) and not os.path.isdir(f)]
    assert not left, left
    # Folders: only those another package owns stay.
    dirs = [f for f in files if os.path.isdir(f) and f not in ("/", "/.")]
    owned = set()
    if dirs:
        r = run(["dpkg-query", "-S"] + dirs, check=False)
        owned = {line.split(": ", 1)[1] for line in r.stdout.splitlines() if ": " in line}
    assert not [d for d in dirs if d not in owned], [d for d in dirs if d not in owned]
    if package.kept_aside is None:
        assert run(PACKAGE_LIST).stdout == package.before
    else:
        run(["dpkg", "-i", package.kept_aside], env=APT_ENV, timeout=600)
        package.kept_aside = None
        assert run(PACKAGE_LIST).stdout == package.before
