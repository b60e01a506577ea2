#if canImport(Glibc)
import Glibc
#endif
import KeyKit

// Not dumpable, no core file: any command may hold a PIN, password, PIN token or OATH key.
SecretMemory.protectProcess()
Prompt.installSignalRestore()
let status = await Ykterm.main(arguments: Array(CommandLine.arguments.dropFirst()))
exit(status)
