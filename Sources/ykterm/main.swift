#if canImport(Glibc)
import Glibc
#endif

Prompt.installSignalRestore()
let status = await Ykterm.main(arguments: Array(CommandLine.arguments.dropFirst()))
exit(status)
