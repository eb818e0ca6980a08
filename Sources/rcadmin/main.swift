import CLinux
import Glibc
import RCAdmin

// rcadmin holds a service account's private key and access tokens in memory: no core dump may
// carry them to disk, and no other process of the same user may read them through ptrace or /proc.
_ = rcagent_set_undumpable()
exit(AdminTool.main(arguments: Array(CommandLine.arguments.dropFirst())))
