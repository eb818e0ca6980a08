/// libfaketime (Debian's `faketime`) for a spawned process: its wall clock set, its monotonic
/// clock, which waits use, left real.
public enum FakedClock {
    public static let library = "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1"

    /// The environment that starts a process's wall clock at `time` (`YYYY-MM-DD HH:MM:SS`, read in
    /// the time zone `zone`, which is also the process's `TZ`).
    public static func environment(at time: String, zone: String = "UTC") -> [String: String] {
        ["LD_PRELOAD": library, "FAKETIME": "@" + time, "FAKETIME_DONT_FAKE_MONOTONIC": "1", "TZ": zone]
    }
}
