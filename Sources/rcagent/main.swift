import CLinux
@preconcurrency import Dispatch
import Glibc
import RCAgent
import RCClient
import RCCore
import RCSystem

// One executable, two programs, chosen by the name it is called by (as busybox's): installed as
// /usr/bin/rcagent, the CLI, and through a link to it as /usr/bin/rcagentd, the daemon. One copy of
// the Swift runtime on the device instead of two (BENCHMARKS.md, issue 20).
// The name from glibc, not CommandLine.arguments.first: that one is missing where libfaketime is
// preloaded (the reliability suite's clock tests run the daemon so); the arguments then come from /proc.
let arguments = ProcessArguments.current()
if String(cString: rcagent_program_name()) == "rcagentd" {
    // One malloc arena, set before any thread allocates: glibc fixes the limit when a second thread
    // first allocates, and otherwise gives every thread that allocates while another holds the
    // arena's lock an arena of its own, whose pages an idle daemon keeps (0.4 MiB of idle PSS with
    // an http source, MQTT and the report; BENCHMARKS.md). The daemon's threads allocate little.
    _ = rcagent_limit_malloc_arenas(1)
    // The daemon's async main, as the compiler would start it. The CLI's stays synchronous: an async
    // main would start the concurrency runtime before every `rcagent get`.
    Task { @MainActor in exit(await Daemon.main(arguments: arguments)) }
    dispatchMain()
}
exit(CommandLineTool.main(arguments: arguments))
