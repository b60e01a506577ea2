#if canImport(Glibc)
import Glibc
#endif
import KeyKit

// Not dumpable, no core file: any command may hold a PIN, password, PIN token or OATH key.
SecretMemory.protectProcess()
Prompt.installSignalRestore()
// `--version` needs no task: starting the concurrency runtime would be most of what it costs.
if CommandLine.arguments.count == 2, CommandLine.arguments[1] == "--version" {
    StandardStream.write(Ykterm.version + "\n", to: 1)
    _exit(ExitStatus.ok)
}
// The command runs as a task on the global executor while this thread waits for it to end the process. An
// asynchronous top level (`await` here) would park this thread in dispatch_main, whose pthread_exit loads libgcc_s
// to unwind it, on every run.
Task.detached {
    let status = await Ykterm.main(arguments: Array(CommandLine.arguments.dropFirst()))
    // The work is done and the terminal given back. `exit` would run the libraries' destructors (libpcsclite's
    // among them) while a dispatch thread may still be dropping the last reference to a PC/SC context, whose
    // release then crashes in a library already torn down (seen as SIGSEGV with ykman working on the same key).
    // Flush what is buffered and leave without them.
    fflush(nil)
    _exit(status)
}
while true { pause() }
