import RCAgent
import Glibc
exit(await Daemon.main(arguments: Array(CommandLine.arguments.dropFirst())))
