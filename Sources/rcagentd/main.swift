import Glibc
import RCAgent

exit(await Daemon.main(arguments: Array(CommandLine.arguments.dropFirst())))
