#if canImport(Glibc)
import Glibc
#endif

let status = await Ykterm.main(arguments: Array(CommandLine.arguments.dropFirst()))
exit(status)
