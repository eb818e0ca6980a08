import Glibc
import RCClient

exit(CommandLineTool.main(arguments: Array(CommandLine.arguments.dropFirst())))
