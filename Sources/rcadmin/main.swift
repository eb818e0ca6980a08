import Glibc
import RCAdmin

exit(AdminTool.main(arguments: Array(CommandLine.arguments.dropFirst())))
