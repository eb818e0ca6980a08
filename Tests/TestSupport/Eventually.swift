import FoundationEssentials

#if canImport(Glibc)
    import Glibc
#endif

/// Waits until `condition` holds, checking every 20 ms, for at most `timeout` seconds: for what a
/// test can only observe from outside (a file appears, a process logs a line, a value is served).
/// Returns whether it held; the caller's `#expect` says what was awaited.
public func eventually(_ timeout: Double = 15, _ condition: () throws -> Bool) rethrows -> Bool {
    let deadline = Date(timeIntervalSinceNow: timeout)
    while Date() < deadline {
        if try condition() { return true }
        usleep(20_000)
    }
    return try condition()
}
