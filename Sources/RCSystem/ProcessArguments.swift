import RCCore

/// The process's command line. Swift's `CommandLine.arguments` is empty where libfaketime is
/// preloaded (its constructor runs first and the runtime never sees argv), so tests that fake the
/// clock of `rcagent history` or the daemon would lose every argument: then it comes from
/// `/proc/self/cmdline`, which the kernel keeps whatever the libraries did.
public enum ProcessArguments {
    /// The arguments after the program name.
    public static func current() -> [String] {
        let fromRuntime = CommandLine.arguments
        if !fromRuntime.isEmpty { return Array(fromRuntime.dropFirst()) }
        guard let bytes = try? FileBytes.read("/proc/self/cmdline", limit: 2 << 20) else { return [] }
        var arguments = bytes.split(separator: 0, omittingEmptySubsequences: false).map {
            String(decoding: $0, as: UTF8.self)
        }
        if arguments.last == "" { arguments.removeLast() }
        return Array(arguments.dropFirst())
    }
}
