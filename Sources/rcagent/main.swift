import RCClient
import Glibc
exit(CommandLineTool.main(arguments: Array(CommandLine.arguments.dropFirst())))
