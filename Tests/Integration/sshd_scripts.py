"""Python run inside the USB virtual key's namespace (serve_usb scripts) for the SSH login tests: an sshd of the
test's own on 127.0.0.1, with its own host key, config and authorized keys, stopped by PID; /run/sshd (sshd's
privilege-separation directory) is made for it when missing and removed again."""

SSHD = """
import shutil, socket
class Sshd:
    def __init__(self, work, authorized):
        self.work = work
        self.made_run = not os.path.isdir("/run/sshd")
        if self.made_run:
            os.mkdir("/run/sshd", 0o755)
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", work + "/host"], check=True,
                       stdin=subprocess.DEVNULL)
        with open(work + "/authorized_keys", "w") as f:
            f.write(authorized)
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        with open(work + "/sshd_config", "w") as f:
            f.write("\\n".join(["ListenAddress 127.0.0.1", f"Port {self.port}", f"HostKey {work}/host",
                              "PidFile none", f"AuthorizedKeysFile {work}/authorized_keys", "StrictModes no",
                              "UsePAM no", "PasswordAuthentication no", "KbdInteractiveAuthentication no",
                              "PermitRootLogin prohibit-password", "PubkeyAuthentication yes"]) + "\\n")
        self.proc = subprocess.Popen(["/usr/sbin/sshd", "-D", "-e", "-f", work + "/sshd_config"],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
        deadline = time.monotonic() + 15
        while True:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                return
            except OSError:
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    self.stop()
                    raise
                time.sleep(0.1)
    def client(self):
        return ["ssh", "-F", "none", "-o", "UserKnownHostsFile=" + self.work + "/known_hosts", "-o",
                "StrictHostKeyChecking=accept-new", "-p", str(self.port)]
    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(timeout=10)
        if self.made_run:
            shutil.rmtree("/run/sshd", ignore_errors=True)
"""
